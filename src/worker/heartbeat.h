#pragma once
// HeartbeatLoop: the worker's second thread, with a Coordinator of its own (its own store
// connection, or its own HTTP client), so heartbeats never wait behind a running agent or the
// claim loop. It beats every heartbeat interval while idle and every half running interval while
// it holds a claim (the interval a busy worker promises: core/worker.h). Each beat:
//   - records a heartbeat with the worker's metadata (agent pid, CPU %, RSS, tasks completed);
//   - while a claim is held, checks it in the store and renews it once half the lease has gone.
// A claim that is no longer active, has expired, or whose renewal is refused — or a store that
// stays unreachable past the lease — marks the lease lost in HeldClaim and wakes the main loop,
// which kills the agent at once. A heartbeat refused because the worker is no longer live
// (declared dead, stopped) evicts the worker.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "worker/config.h"
#include "worker/coordinator.h"
#include "worker/held_claim.h"

namespace tx::worker {

class HeartbeatLoop {
 public:
  // `wake_fd` is an eventfd the main loop polls.
  HeartbeatLoop(std::unique_ptr<Coordinator> fleet, const WorkerConfig& config,
                std::string worker_id, HeldClaim& state, int wake_fd);
  ~HeartbeatLoop();  // stops and joins

  void Start();
  void Stop();
  // Beat now (the worker changed state).
  void Kick();
  // Beat `delay_ms` from now if the claim with `token` is still held then, and plan the next
  // beats at the busy rate from that one: an agent's pid is recorded for the long runs it
  // matters for, without a write for each short task (whose claim was a beat).
  void KickLater(std::int64_t token, Millis delay_ms);

  // One beat (public so tests can drive it without the thread).
  void Beat();

 private:
  void Loop();
  Millis NextWait();
  nlohmann::json Metadata();
  void Wake();

  std::unique_ptr<Coordinator> fleet_;
  // Copied at construction: the main thread reloads its config on SIGHUP (these two need a
  // restart), and this thread must not read what it writes.
  const Millis heartbeat_idle_ms_;
  const Millis heartbeat_running_ms_;
  std::string worker_id_;
  HeldClaim& state_;
  int wake_fd_;

  Mutex mu_;
  CondVar cv_;
  bool stop_ TX_GUARDED_BY(mu_) = false;
  bool kicked_ TX_GUARDED_BY(mu_) = false;
  struct Later {
    std::int64_t token;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<Later> later_ TX_GUARDED_BY(mu_);
  std::thread thread_;

  // Whether the store's row said busy at the last beat while this worker held nothing: a claim
  // whose answer was lost (a connection dropped as it committed), which the next claim adopts.
  // Busy, the row promises the running interval: the beats keep that rate meanwhile (this thread
  // only).
  bool row_busy_ = false;
  // CPU accounting between beats (this thread only).
  double last_cpu_seconds_ = 0;
  Millis last_cpu_at_ = 0;
};

}  // namespace tx::worker
