#pragma once
// Worker: a process that claims and runs tasks, one at a time (design.md §1).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

enum class WorkerStatus { kStarting, kIdle, kBusy, kPaused, kStopping, kStopped, kDead };

std::string_view ToString(WorkerStatus s);
Result<WorkerStatus> ParseWorkerStatus(std::string_view name);
bool IsLive(WorkerStatus s);                            // starting, idle, busy, paused, stopping
const std::vector<WorkerStatus>& LiveWorkerStatuses();  // the five above

// What an operator asked of a running worker (tx worker pause|resume|stop). The worker acts on
// it, records its new status and clears the request.
enum class WorkerRequest {
  kNone,
  kPause,    // freeze the agent, claim nothing new, keep the lease
  kResume,   // thaw it
  kStop,     // like SIGTERM: finish the current task, then deregister
  kStopNow,  // like a second SIGTERM: stop the agent, release the task, deregister
};

std::string_view ToString(WorkerRequest r);  // "", "pause", "resume", "stop", "stop-now"
Result<WorkerRequest> ParseWorkerRequest(std::string_view name);

// The heartbeat interval a worker promises when it is told none (design.md §6).
inline constexpr Millis kDefaultHeartbeatIntervalMs = 30'000;
// How long a graceful stop waits, when it is told nothing else: a worker for its agent to finish,
// an orchestrator for its workers to drain. Past it they are killed.
inline constexpr Millis kDefaultShutdownTimeoutMs = 300'000;

struct Worker {
  std::string id;
  std::string name;
  std::string slot;
  std::string pool;  // the PoolId of the orchestrator that supervises (or would supervise) it
  std::string hostname;
  std::int64_t pid = 0;
  std::vector<std::string> capabilities;
  std::vector<std::string> queues = {"default"};
  WorkerStatus status = WorkerStatus::kIdle;
  Millis heartbeat_interval_ms = kDefaultHeartbeatIntervalMs;  // the interval it promises
  // The interval it promises while busy (a worker running an agent beats more often, so that its
  // death is seen sooner); 0 = heartbeat_interval_ms, as for a hand-run claimer that does not
  // beat between its commands.
  Millis busy_heartbeat_interval_ms = 0;
  Millis registered_at = 0;
  Millis last_heartbeat_at = 0;       // 0 = never heartbeated
  std::optional<Millis> beat_steady;  // the steady reading of that heartbeat (core/clock.h)
  std::string current_task_id;
  std::string reason;  // why it stopped or died
  WorkerRequest request = WorkerRequest::kNone;
  nlohmann::json metadata = nlohmann::json::object();
};

// The HTTP header that carries a worker's credential (the one its registration over HTTP
// returned) on every later call of the worker protocol, and the environment variable that hands
// it to the worker's agents (docs/security.md).
inline constexpr char kWorkerCredentialHeader[] = "X-Tx-Worker-Credential";
inline constexpr char kWorkerCredentialEnv[] = "TX_WORKER_CREDENTIAL";

// Records a heartbeat of `w` at `now`, on both clocks.
inline void RecordBeat(Worker& w, const Moment& now) {
  w.last_heartbeat_at = now.wall;
  w.beat_steady = now.steady;
}
// How long the worker has been silent at `now`: on the steady clock when both the heartbeat and
// `now` have a steady reading, else on the wall clock.
Millis SilentFor(const Worker& w, const Moment& now);
// The interval `w` promises while busy.
inline Millis BusyIntervalMs(const Worker& w) {
  return w.busy_heartbeat_interval_ms > 0 ? w.busy_heartbeat_interval_ms : w.heartbeat_interval_ms;
}
// The interval `w` promises in its present status: its busy interval while busy, else its
// heartbeat interval.
Millis PromisedIntervalMs(const Worker& w);
// How long `w` may be silent before it is stale: two promised intervals.
inline Millis StaleAfterMs(const Worker& w) { return 2 * PromisedIntervalMs(w); }
// A worker is stale once two promised intervals pass without a heartbeat, or when it has never
// heartbeated at all. Stale workers may not claim; the reconciler declares them dead.
bool IsStale(const Worker& w, const Moment& now);

}  // namespace tx
