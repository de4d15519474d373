#pragma once
// Coordinator: everything a worker asks of the fleet — registration, heartbeats, claims and
// their outcomes — behind one interface, so that one WorkerRuntime runs beside the store
// (LocalCoordinator: the services, over a store connection of its own) or on another machine
// with nothing but HTTP (HttpCoordinator: the API's worker protocol, docs/api.md). Both fence
// every outcome by the claim's token; the errors are the services' (conflict for a stale token,
// unavailable when the store or the server cannot be reached).
//
// Thread safety: none; the worker's main loop and its heartbeat thread each own one.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/claim.h"
#include "core/error.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"
#include "git/review.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/worker_service.h"
#include "worker/config.h"

namespace tx::worker {

class Coordinator {
 public:
  virtual ~Coordinator() = default;

  // The fleet's clock, which leases and heartbeats are judged by: the store's, or the server's
  // (estimated from its replies, so a worker whose own clock is off still renews in time).
  virtual Millis NowMs() = 0;
  // The same with a steady reading where the fleet's clock has one (a local store's: core/clock.h),
  // so that a lease is judged here as the store judges it, and a step of the wall clock is not
  // taken for an expiry; the server's estimate has none.
  virtual Moment Now() { return {NowMs(), std::nullopt}; }

  // The credential a registration over HTTP returned, which every later call carries (and the
  // worker hands to its agents); "" for a local store.
  virtual std::string credential() const { return ""; }
  // Makes this coordinator act with `credential` (the heartbeat thread's, after the main loop's
  // registration). Before any call that uses it.
  virtual void set_credential(const std::string& /*credential*/) {}

  // As WorkerService::Register: `replaced` receives the slot's previous live incarnations.
  virtual Result<Worker> Register(const service::Registration& r,
                                  std::vector<Worker>* replaced) = 0;
  virtual Result<Worker> Heartbeat(std::string_view worker_id,
                                   const service::HeartbeatUpdate& update) = 0;
  virtual Result<Worker> GetWorker(std::string_view worker_id) = 0;
  virtual Result<Worker> Deregister(std::string_view worker_id, const std::string& reason) = 0;

  // As ClaimService::ClaimNext, waiting up to `wait_ms` for a task to become claimable when the
  // coordinator can wait at the source (the server's long poll); nullopt when none came, or when
  // an operator's request for this worker (pause, stop) arrived meanwhile.
  // `gate`: the agent tasks to pass over (service/agent_gate.h), none when null.
  virtual Result<std::optional<service::ClaimResult>> ClaimNext(
      std::string_view worker_id, Millis lease_ms, Millis wait_ms = 0,
      const service::AgentGate* gate = nullptr) = 0;
  // Whether ClaimNext can wait at the source. When it cannot, an idle worker sleeps on
  // watch_fd() and NextEligibleAt instead.
  virtual bool WaitsForClaims() const = 0;
  // After a ClaimNext that came back empty: how long to wait before the next (a server too busy
  // to hold the wait says so); 0 to claim again at once.
  virtual Millis ClaimBackoffMs() const { return 0; }
  // Readable when a task may have become ready (store::ChangeWatch); -1 when there is none.
  virtual int watch_fd() = 0;
  // Consumes the watch's notifications; true if any may concern the store.
  virtual bool DrainWatch() = 0;
  virtual Result<std::optional<Millis>> NextEligibleAt(
      std::string_view worker_id, const service::AgentGate* gate = nullptr) = 0;
  // Ends a ClaimNext waiting on another thread at once (it returns unavailable). Thread-safe.
  virtual void Interrupt() = 0;

  virtual Result<Claim> Inspect(std::int64_t token) = 0;
  virtual Result<Claim> Renew(std::string_view task_id, std::int64_t token) = 0;
  virtual Result<Task> Release(std::string_view task_id, std::int64_t token, EndReason reason) = 0;
  // `branch`: as ClaimService::Report's (the summary stored when the task goes to review).
  virtual Result<Task> Report(std::string_view task_id, std::int64_t token,
                              service::Outcome outcome, const std::string& text,
                              std::optional<int> exit_code, const nlohmann::json* branch) = 0;
  // Whether ReportAndClaimNext can claim in the report's commit.
  virtual bool ReportsAndClaims() const { return false; }
  // As ClaimService::ReportAndClaimNext (a report without a branch, then the holder's next
  // claim through `gate`, in one commit): what a worker does between two tasks. Only where
  // ReportsAndClaims(); elsewhere it reports alone and claims nothing.
  virtual Result<service::ClaimService::ReportResult> ReportAndClaimNext(
      std::string_view task_id, std::int64_t token, service::Outcome outcome,
      const std::string& text, std::optional<int> exit_code, Millis /*lease_ms*/,
      const service::AgentGate* /*gate*/) {
    TX_ASSIGN_OR_RETURN(Task task, Report(task_id, token, outcome, text, exit_code, nullptr));
    return service::ClaimService::ReportResult{std::move(task), std::nullopt};
  }
  virtual Result<Task> Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                            const std::string& error, std::optional<int> exit_code) = 0;
  virtual Result<Claim> GiveUp(std::string_view task_id, std::int64_t token, EndReason reason) = 0;
  // As ClaimService::Ask: the holder's agent asks a person a question, and its task waits.
  virtual Result<Task> Ask(std::string_view task_id, std::int64_t token,
                           const std::string& question) = 0;

  // Auto-merge (docs/git.md): merges the branch of the task, in review and asking for it, here,
  // as `tx task merge` would (review.h MergeTask with auto_merge, `git`'s settings), and records
  // the approval with the merge. A conflict or a red check sends it back to ready, as a refused
  // merge does; an error (or `cancel_fd` readable during the check) leaves it in review.
  // `token`: of the attempt that put it in review, which fences the record over HTTP. conflict:
  // the task is no longer in review (or, over HTTP, another attempt ran since).
  virtual Result<git::TaskMerge> AutoMerge(std::string_view task_id, std::int64_t token,
                                           const git::Settings& git, int cancel_fd) = 0;

  // The agents (service/agent_service.h): the ledger, limits and budgets, and the ends of an
  // attempt that are not the task's fault. As AgentService's methods of the same names.
  virtual Status RecordUsage(const AttemptUsage& usage) = 0;
  virtual Result<std::vector<AttemptUsage>> TaskUsage(std::string_view task_id) = 0;
  virtual Result<Task> EndLimited(std::string_view task_id, std::int64_t token,
                                  const service::LimitReport& limit) = 0;
  virtual Result<Task> EndUnavailable(std::string_view task_id, std::int64_t token,
                                      EndReason reason, const std::string& profile,
                                      const std::string& why) = 0;
  virtual Result<Task> EndOverBudget(std::string_view task_id, std::int64_t token,
                                     const std::string& why) = 0;
  // The fleet's limits (after recording agent.resumed for those that ended: ResumeExpired) and,
  // when `budgets` has any, the day's spending against them.
  struct AgentState {
    std::vector<AgentLimit> limits;
    BudgetState budget;
  };
  virtual Result<AgentState> GetAgentState(const Budgets& budgets) = 0;
  // The cost of a task's attempts so far.
  virtual Result<double> TaskCost(std::string_view task_id) = 0;

  // Hands an attempt's output to the fleet, where the store cannot read the worker's disk: the
  // `data` written at `offset` of the log of `task_id`'s attempt `attempt`. A coordinator beside
  // the store does nothing (the log is already where the store's readers look).
  // `raw`: the agent's raw output, kept beside the readable log of a structured agent.
  virtual Status ShipLog(std::string_view task_id, int attempt, std::int64_t token,
                         std::int64_t offset, std::string_view data, bool raw = false) = 0;
  // Whether ShipLog does anything.
  virtual bool ShipsLogs() const = 0;
};

}  // namespace tx::worker
