#pragma once
// WorkerRuntime: the `tx worker start` process. It registers (a fresh id; the slot and name
// persist), starts the heartbeat thread (heartbeat.h), then claims one task at a time, runs its
// agent as a Child (exec/child.h), and reports the outcome:
//   - an outcome the agent reported itself (`tx task done|review|fail`) wins;
//   - otherwise exit 0 → done (or review when the task asks for it), anything else → a failed
//     attempt (end reason failed, timed_out or stalled), retried with backoff until max_attempts;
//   - a lost lease (heartbeat.h) kills the agent at once and gives the claim up (lease_lost).
// Idle, it sleeps until the store changes (ChangeWatch), a retry's backoff ends, or the poll
// fallback (30 s with jitter) fires; a remote worker (--server) lets the server wait for a task
// on its behalf instead (a long poll). The fleet is reached through a Coordinator
// (coordinator.h): the store itself, or the HTTP API.
//
// Shutdown (docs/worker.md): the first SIGTERM/SIGINT marks the worker `stopping`; it claims
// nothing more and lets the running agent finish within the shutdown timeout, then stops it
// (SIGTERM, grace, SIGKILL) and releases the claim without counting the attempt. A second signal
// skips the wait. Either way it deregisters (`stopped`, reason graceful-shutdown) and Run returns
// 0. SIGKILL of the worker takes the agent along (parent-death signal). `tx worker stop` asks
// the same through the store (--graceful = the first signal, otherwise the second).
//
// Pause (`tx worker pause`): the agent's group is frozen (SIGSTOP), nothing new is claimed, the
// lease is kept, and neither the task timeout nor the stall timer runs until `tx worker resume`.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "exec/child.h"
#include "service/claim_service.h"
#include "worker/config.h"
#include "worker/coordinator.h"
#include "worker/heartbeat.h"
#include "worker/shared_state.h"
#include "worker/worktree.h"

namespace tx::worker {

class WorkerRuntime {
 public:
  explicit WorkerRuntime(WorkerConfig config);
  ~WorkerRuntime();
  WorkerRuntime(const WorkerRuntime&) = delete;
  WorkerRuntime& operator=(const WorkerRuntime&) = delete;

  // Runs until stopped. Call it from the main thread before any other thread exists: it blocks
  // SIGTERM, SIGINT and SIGCHLD in the process and reads them from a signalfd. Returns the exit
  // code: 0 after a graceful stop, 1 when the store declared this worker dead or stopped.
  // An error when the store (or the server) cannot be reached or the worker cannot register.
  Result<int> Run();

 private:
  enum class Wake { kTimeout, kStoreChanged, kSignal, kNotified };

  Status Start();
  void KillLeftoverAgent(const Worker& old);
  // Waits up to `timeout_ms` on the signals, the heartbeat thread and (when given) the watch.
  Wake WaitIdle(Millis timeout_ms);
  void HandleSignals();
  // The SIGTERMs and SIGINTs pending on the signalfd (SIGCHLD is read and dropped).
  std::vector<int> ReadStopSignals();
  // A SIGTERM or SIGINT: the first starts a graceful stop, a second hurries it.
  void OnStopSignal(int sig);
  void EnterStopping();
  Millis IdleWait();
  // Acts on what an operator asked (tx worker pause|resume|stop), if anything: freezes or thaws
  // `child` (null when idle), or starts a stop, then records the new status.
  void CheckRequests(exec::Child* child);
  void Acknowledge(WorkerStatus status);
  // Remote: asks the server for a task, waiting there up to the poll interval, on a thread of its
  // own so that a signal still reaches this loop at once (and cuts the wait short).
  Result<std::optional<service::ClaimResult>> ClaimWaiting();
  // Runs one claimed attempt: in the task's worktree when it names a repository (worktree.h),
  // removed afterwards once the task is done without review or cancelled.
  void RunAttempt(service::ClaimResult claimed);
  void RunAgent(const service::ClaimResult& claimed, const Worktree* worktree);
  // After an attempt that put a task asking for auto-merge in review: approves and merges it
  // (Coordinator::AutoMerge) when [git] check is set; else it waits in review.
  void AutoMerge(const Task& task, std::int64_t token);
  // Remote: sends what the agent wrote since the last call to the server's copy of the log.
  void ShipLog(const std::string& path, const Claim& claim, bool final);
  void Finish(const service::ClaimResult& claimed, const exec::ExitOutcome& outcome);

  WorkerConfig config_;
  std::unique_ptr<Coordinator> fleet_;
  SharedState state_;
  std::unique_ptr<HeartbeatLoop> heartbeat_;
  std::string worker_id_;
  std::string hostname_;
  int signal_fd_ = -1;
  int wake_fd_ = -1;
  int signals_seen_ = 0;  // SIGTERM/SIGINT (or a stop request): 1 = drain, 2+ = hurry
  bool paused_ = false;
  std::chrono::steady_clock::time_point paused_since_{};
  std::chrono::steady_clock::duration paused_total_{};  // in the current attempt
  std::chrono::steady_clock::time_point resumed_at_{};
  bool warned_limits_ = false;
  std::int64_t log_shipped_ = 0;  // bytes of the current attempt's log the server has
  std::chrono::steady_clock::time_point log_shipped_at_{};
};

}  // namespace tx::worker
