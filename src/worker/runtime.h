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
//
// Agents (docs/agents.md): each run's output goes through its profile's adapter (agent/), which
// writes the readable log beside the raw one and fills the attempt's row of the usage ledger;
// the attempt's decisions are AttemptPolicy's (attempt_policy.h). A usage limit ends the attempt
// uncounted and pauses the profile fleet-wide until its reset; a program missing here (or a
// refused login) ends it uncounted and this worker stops claiming that profile's tasks; a spent
// budget stops the agent. Claims pass over the agent tasks that may not start now (the gate:
// service/agent_gate.h), and a task claimed as a limit or budget came in is given back.
//
// SIGHUP stops nothing (docs/operations.md, "Logs and signals"): the worker reopens its log file
// at once (--log-file) and, before its next claim (so after the running attempt), reads its
// configuration again and applies what its next attempts read (ReloadWorkerConfig); one that no
// longer reads is not applied, with one error line.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/follower.h"
#include "agent/profile.h"
#include "core/error.h"
#include "exec/child.h"
#include "git/worktree.h"
#include "log/process_log.h"
#include "service/claim_service.h"
#include "worker/budgets_source.h"
#include "worker/config.h"
#include "worker/coordinator.h"
#include "worker/heartbeat.h"
#include "worker/held_claim.h"
#include "worker/spawn_plan.h"

namespace tx::worker {

// What a SIGHUP needs from the worker's caller (cli/).
struct WorkerHooks {
  // The configuration as its file says it now, with the worker's flags over it, checked as at
  // start; null: it is not read again.
  std::function<Result<WorkerConfig>()> read_config;
  // The process's log (reopened; the worker's id and slot become fields of its JSON lines);
  // null: none.
  std::shared_ptr<log::ProcessLog> log;
};

class WorkerRuntime {
 public:
  explicit WorkerRuntime(WorkerConfig config, WorkerHooks hooks = {});
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
  // SIGHUP: the log reopened now, the configuration read again before the next claim.
  void Hangup();
  void ReloadConfig();
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
  void RunAgent(const service::ClaimResult& claimed, const git::Worktree* worktree);

  // How one run of an agent ended (FollowRun).
  struct RunEnd {
    enum class How { kExited, kStopped, kKilled, kSpawnFailed };
    How how = How::kExited;
    exec::ExitOutcome outcome;            // kExited, kStopped: how the process ended
    EndReason reason = EndReason::kNone;  // kStopped, kKilled: why tx ended it
    std::string spawn_error;              // kSpawnFailed
    agent::RunSummary summary;
    double cost_usd = 0;
    bool cost_estimated = true;
  };
  // Starts the planned run and follows it to its end: its output through the adapter into the
  // logs and the ledger, its decisions by AttemptPolicy.
  RunEnd FollowRun(const service::ClaimResult& claimed, const AttemptPlan& plan);
  // Records how the attempt ended, given how its (last) run did.
  void FinishRun(const service::ClaimResult& claimed, const AttemptPlan& plan, const RunEnd& end);
  // The attempt's row of the usage ledger, as the run's follower has it.
  void RecordUsage(const service::ClaimResult& claimed, const AttemptPlan& plan,
                   const agent::RunSummary& summary, double cost_usd, bool estimated);

  // The agents' side of claiming (docs/agents.md).
  // Which profiles' programs are missing on this machine (re-checked every 30 s at most).
  void CheckPrograms(bool force);
  // Records a profile this worker cannot run, with why, in its metadata and the log.
  void MarkUnavailable(const std::string& profile, const std::string& why);
  // The fleet's limits and the day's spending, and the gate they make (at most once a second,
  // unless forced).
  void RefreshAgentState(bool force);
  // A claimed task whose profile is limited on every account, or whose daily budget is reached,
  // as the store has it now, is given back uncounted: true when it was. Otherwise fills
  // `account` with the account to run under.
  // Calls `call`, which records how the attempt holding `token` ended, and again a few times
  // over some seconds while the store is out of reach; nullopt when the claim shows meanwhile
  // that it was recorded after all (the worker's state is then let go here).
  std::optional<Result<Task>> Record(std::int64_t token, const std::string& head,
                                     const std::function<Result<Task>()>& call);
  bool HoldBack(const service::ClaimResult& claimed, const agent::AgentProfile& profile,
                std::string& account);
  // The account names of a profile, for the gate.
  static std::vector<std::string> AccountNames(const agent::AgentProfile& profile);
  // After an attempt that put a task asking for auto-merge in review: approves and merges it
  // (Coordinator::AutoMerge) when [git] check is set; else it waits in review.
  void AutoMerge(const Task& task, std::int64_t token);
  // Remote: sends what the agent wrote since the last call to the server's copy of the log (and
  // of the raw output, when it is kept apart).
  void ShipLog(const AttemptPlan& plan, const Claim& claim, bool final);
  void ShipOne(const std::string& path, const Claim& claim, bool final, bool raw,
               std::int64_t& shipped);
  // Records an agent's exit when it did not report its outcome itself: done (or review), or a
  // failed attempt; `failure` overrides the outcome's description when the agent said more.
  void Finish(const service::ClaimResult& claimed, const exec::ExitOutcome& outcome, bool succeeded,
              const std::string& failure);
  // Whether the outcome of `task` may be recorded with the next claim (ReportAndClaimNext): a
  // task without a worktree to clean up first, by a worker that would claim next anyway.
  bool MayClaimWithReport(const Task& task);
  // Gives back, uncounted, a claim made with the last report that will not run (a stop, a
  // pause, an eviction came meanwhile).
  void GiveBackClaimedWithReport(EndReason why);

  WorkerConfig config_;
  WorkerHooks hooks_;
  // A SIGHUP came: the configuration is read again before the next claim; what was done about
  // the log meanwhile, for the line that says so.
  bool reload_pending_ = false;
  std::string hangup_done_;
  BudgetsSource budgets_;  // config_.budgets, read again when the file changes
  std::unique_ptr<Coordinator> fleet_;
  HeldClaim state_;
  std::unique_ptr<HeartbeatLoop> heartbeat_;
  std::string worker_id_;
  std::string hostname_;
  int signal_fd_ = -1;
  int wake_fd_ = -1;
  int signals_seen_ = 0;  // SIGTERM/SIGINT (or a stop request): 1 = drain, 2+ = hurry
  // Started by an orchestrator (which gives its workers TX_POOL_DB), not by a person or a test
  // with --slot, who may send a second SIGTERM on purpose.
  bool pooled_ = std::getenv("TX_POOL_DB") != nullptr;
  // The orchestrator that started this (pooled) worker. It sends one SIGTERM to drain and
  // never a second (a forced stop is SIGKILL); but when it dies, the kernel sends the parent-death
  // signal again as each of its threads exits (the worker is handed from thread to thread), all
  // from its pid. So from it, only the first SIGTERM counts.
  pid_t parent_pid_ = ::getppid();
  bool parent_stop_seen_ = false;
  bool paused_ = false;
  std::chrono::steady_clock::time_point paused_since_{};
  std::chrono::steady_clock::duration paused_total_{};  // in the current attempt
  std::chrono::steady_clock::time_point resumed_at_{};
  bool warned_limits_ = false;
  std::int64_t log_shipped_ = 0;  // bytes of the current attempt's log the server has
  std::int64_t raw_shipped_ = 0;  // and of its raw output
  std::chrono::steady_clock::time_point log_shipped_at_{};

  // Profiles this worker cannot run (a missing program, a refused login), with why.
  std::map<std::string, std::string> unavailable_;
  std::map<std::string, std::string> unavailable_published_;  // as the store has it
  // The task's status once this attempt's outcome was recorded (Record), if it was.
  std::optional<TaskStatus> ended_as_;
  // The claim made in the commit that recorded the last outcome (ReportAndClaimNext), which the
  // loop runs next; holding nullopt when that commit claimed nothing (the loop then reads the
  // operator's requests and goes the idle way, claiming again once a task is eligible). Unset
  // when the last outcome was recorded alone.
  std::optional<std::optional<service::ClaimResult>> claimed_with_report_;
  // Profiles that failed to start or log in, and since when: not looked at again for a while.
  std::map<std::string, std::chrono::steady_clock::time_point> held_off_at_;
  std::chrono::steady_clock::time_point programs_checked_at_{};
  Coordinator::AgentState agent_state_;
  service::AgentGate gate_;
  Millis gate_opens_at_ = 0;  // the fleet's clock: when a limit or the day's budget ends
  std::chrono::steady_clock::time_point agent_state_at_{};
  // The sandboxes beyond the worker's own that its queues or tasks asked for, as checked.
  std::map<SandboxKind, Status> sandbox_checked_;
  // Where agents' tx reach this worker (made at the first attempt): one socket for the worker's
  // life, an admission per attempt. Declared last: it goes first, while the rest still stands.
  std::unique_ptr<AgentGateway> gateway_;
};

}  // namespace tx::worker
