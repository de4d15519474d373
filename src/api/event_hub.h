#pragma once
// The event log as it grows, for the event streams and the metrics of the HTTP API. One thread
// notices each commit (the store's change counter, every `poll`, and at once the store's
// ChangeWatch when a task becomes ready — which also wakes the remote workers' long polls via
// WaitForReady; watched only while a stream or a claim waits, else every commit would wake the
// hub), reads the new events once (for a burst of commits, at most every 10 ms: a read after
// each commit contends with the writer for the store's locks and pages),
// keeps the newest few thousand in memory and wakes the streams waiting for them; without it
// each open stream would poll and parse the store by itself. It also folds every event into the
// metrics' counters, the whole log first, so the counters count since the store began, and into
// the dashboard's stats (api/stats.h), whose queue-depth samples it takes every 10 s.
//
// Event ids commit in order on SQLite (writers are serialised), so "every event after id N" is
// a complete answer. (PostgreSQL's sequences do not promise that: its hub will need to re-read a
// trailing window; see issue 6.)
//
// Thread safety: every public method may be called from any thread.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/metrics.h"
#include "api/stats.h"
#include "core/error.h"
#include "core/event.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "exec/unique_fd.h"
#include "store/store.h"

namespace tx::api {

class EventHub {
 public:
  static constexpr std::size_t kKeep = 4096;  // events kept in memory for the streams

  // Opens a store of its own, folds the whole log into the metrics, then follows the log on a
  // thread of its own until Stop.
  static Result<std::unique_ptr<EventHub>> Start(const store::OpenOptions& options,
                                                 std::chrono::milliseconds poll);
  ~EventHub();  // stops

  // Wakes every waiter with `stopped`, joins the thread. Idempotent.
  void Stop();

  struct Batch {
    std::vector<StoredEvent> events;  // ids > after, oldest first
    bool evicted = false;             // some of them have left memory: read them from the store
    bool stopped = false;
  };
  // The events after `after` (at most `max`), waiting up to `timeout` for one when there is none.
  Batch Wait(std::int64_t after, std::chrono::milliseconds timeout, std::size_t max);

  // A number that grows each time a commit may have made a task ready (the store's ChangeWatch):
  // a claim waiting at the server reads it, tries to claim, and waits for it to change.
  std::uint64_t ready_generation() const;
  // Waits up to `timeout` for ready_generation() to pass `seen`; false on timeout or stop.
  bool WaitForReady(std::uint64_t seen, std::chrono::milliseconds timeout);

  // The id of the newest event seen (0 for an empty log).
  std::int64_t last_id() const;
  // True once Stop has begun: long responses end.
  bool stopping() const;

  // The metrics' text with the counters folded so far.
  std::string RenderMetrics(const MetricsSnapshot& now) const;
  // GET /api/stats at `now`, over `range`.
  nlohmann::json RenderStats(Millis now, const StatsRange& range) const;

 private:
  struct Key {};

 public:
  EventHub(Key, std::unique_ptr<store::Store> store, std::unique_ptr<store::ChangeWatch> watch,
           exec::UniqueFd stop_fd, exec::UniqueFd poke_fd, std::chrono::milliseconds poll);

 private:
  Status ReadNew();    // on the hub's thread (and once in Start, before it runs)
  void SampleDepth();  // the same
  void Run();

  const std::unique_ptr<store::Store> store_;        // used by the hub's thread only
  const std::unique_ptr<store::ChangeWatch> watch_;  // the same
  const exec::UniqueFd stop_fd_;                     // an eventfd: Stop wakes the thread's poll
  const exec::UniqueFd poke_fd_;  // an eventfd: the first waiter wakes it to watch the store
  const std::chrono::milliseconds poll_;
  std::int64_t counter_seen_ = -1;                       // the hub's thread only
  std::chrono::steady_clock::time_point next_sample_{};  // the same

  mutable Mutex mu_;
  CondVar changed_;
  std::deque<StoredEvent> recent_ TX_GUARDED_BY(mu_);
  std::int64_t last_id_ TX_GUARDED_BY(mu_) = 0;
  std::uint64_t ready_generation_ TX_GUARDED_BY(mu_) = 0;
  bool stopping_ TX_GUARDED_BY(mu_) = false;
  int waiters_ TX_GUARDED_BY(mu_) = 0;        // in Wait or WaitForReady
  bool watching_ TX_GUARDED_BY(mu_) = false;  // the hub's poll includes the ChangeWatch
  void AddWaiter() TX_REQUIRES(mu_);
  Metrics metrics_ TX_GUARDED_BY(mu_);
  Stats stats_ TX_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace tx::api
