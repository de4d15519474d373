#pragma once
// ClaimService: leases with fencing tokens (docs/leases.md).
//
// Every method is one store transaction. A token check refuses an unknown, stale (no longer
// active), expired or foreign token with `conflict` and changes nothing. Claiming counts an
// attempt against max_attempts; a release gives it back.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/claim.h"
#include "core/clock.h"
#include "core/task.h"
#include "service/options.h"
#include "service/worker_service.h"
#include "store/store.h"

namespace tx::service {

struct ClaimResult {
  Claim claim;
  Task task;
};

// A running agent: an active claim, with what the dashboard shows beside it.
struct Session {
  Claim claim;
  std::string task_title;
  std::optional<Worker> worker;  // the holder (absent only if it has gone from the store)
};

enum class Outcome { kDone, kReview, kFail };

// The agent tasks a claim passes over (service/agent_gate.h computes it): see
// store::PickCriteria::blocked_agents.
struct AgentGate {
  std::vector<std::string> blocked_agents;
  std::vector<std::string> blocked_agent_queues;
  bool operator==(const AgentGate&) const = default;
};
std::string_view ToString(Outcome o);

class ClaimService {
 public:
  // The shortest wait before the retry of an agent task's failure reported with the token
  // (Report kFail, as its agent's `tx task fail` does): its worker stops an agent that lingers
  // within this.
  static constexpr Millis kReportedFailureRetryMs = 5'000;

  ClaimService(store::Store& store, const Clock& clock, ServiceOptions options = {});

  // Claims the best eligible ready task for a live, fresh worker: its queues, capabilities ⊇
  // requires, run_after reached, owner empty or the worker's name or slot; priority desc, then
  // FIFO. Returns nullopt when nothing is eligible. `lease_ms` 0 = the default lease.
  // `gate`, when given, rules agent tasks out (limits, budgets, programs missing on the worker's
  // machine). A task whose budget is spent is failed instead of claimed (not retried).
  // not_found: unknown worker. conflict: the worker is dead, stopped, stopping, paused or stale.
  Result<std::optional<ClaimResult>> ClaimNext(std::string_view worker_id, Millis lease_ms = 0,
                                               const AgentGate* gate = nullptr);

  // Claims one named task. conflict: not ready (blocked, running, ...), pinned to another owner,
  // requiring a capability the worker lacks, or its budget spent.
  Result<ClaimResult> ClaimTask(std::string_view task_id, std::string_view worker_id,
                                Millis lease_ms = 0);

  // The same, acting as a hand-run claimer that is registered on first use in the same
  // transaction, so a refused claim registers nothing. With nothing eligible, ClaimNextAs is
  // not_found (and writes nothing).
  Result<ClaimResult> ClaimNextAs(const ManualWorker& who, Millis lease_ms = 0);
  Result<ClaimResult> ClaimTaskAs(std::string_view task_id, const ManualWorker& who,
                                  Millis lease_ms = 0);

  // Extends the lease by the claim's lease duration from now. conflict: a bad token, an expired
  // lease, or the renewal cap reached.
  Result<Claim> Renew(std::string_view task_id, std::int64_t token);

  // Gives the task back to `ready`; the attempt is not counted. `reason` is kReleased (by hand)
  // or kShutdown (graceful shutdown).
  Result<Task> Release(std::string_view task_id, std::int64_t token,
                       EndReason reason = EndReason::kReleased);

  // What ReportAndClaimNext returns: the finished task and, when one was eligible, the next claim.
  struct ReportResult {
    Task task;
    std::optional<ClaimResult> next;
  };

  // Records the outcome exactly as Report does and then, in the same transaction, claims the
  // holder's next task as ClaimNext does: what a worker does between two tasks, in one commit
  // instead of two. A worker that may not claim (stopping, paused) or has an operator's request
  // to read gets no next claim; the report still stands. `gate`: as ClaimNext's.
  Result<ReportResult> ReportAndClaimNext(std::string_view task_id, std::int64_t token,
                                          Outcome outcome, const std::string& text,
                                          std::optional<int> exit_code = std::nullopt,
                                          Millis lease_ms = 0, const AgentGate* gate = nullptr);

  // One outcome of a batch (ReportAndClaimBatch), as Report takes it.
  struct Finished {
    std::string task_id;
    std::int64_t token = 0;
    Outcome outcome = Outcome::kDone;
    std::string text;
    std::optional<int> exit_code;
  };
  // What ReportAndClaimBatch returns: each reported task as it now stands, in the order given,
  // and the new claims, best task first.
  struct BatchResult {
    std::vector<Task> reported;
    std::vector<ClaimResult> claimed;
  };
  // The most outcomes, and the most claims, one batch takes.
  static constexpr int kMaxBatch = 100;

  // For a client that works through short tasks in batches, as pg-boss's batchSize does: records
  // each outcome exactly as Report does, then claims up to `want` tasks as ClaimNext does, each
  // with a claim and fencing token of its own, all in one transaction. All or nothing: an outcome
  // Report would refuse (a stale or expired token), or a token another worker holds, refuses the
  // whole call and nothing is written. The worker may hold several claims at once; unlike
  // ClaimNext it is not handed back a claim whose answer it lost (those expire and are requeued,
  // the attempt counted). A worker that may not claim (stopping, paused) gets its outcomes
  // recorded and no claims; one with no outcomes to record gets ClaimNext's conflict.
  // invalid_argument: `want` or the number of outcomes outside 0..kMaxBatch, or a token twice.
  Result<BatchResult> ReportAndClaimBatch(std::string_view worker_id,
                                          const std::vector<Finished>& finished, int want,
                                          Millis lease_ms = 0);

  // Records the holder's outcome. kDone goes to `review` instead when the task asks for review.
  // A failure retries with backoff until max_attempts, then fails the task.
  // `task_id` may be empty to skip the check that the token belongs to it.
  // `branch`, when the task goes to review: its branch's summary (git/review.h, ReviewBranch),
  // stored as metadata.branch in the same write, for the reviewer.
  Result<Task> Report(std::string_view task_id, std::int64_t token, Outcome outcome,
                      const std::string& text, std::optional<int> exit_code = std::nullopt,
                      const nlohmann::json* branch = nullptr);

  // The holder's agent asks a person `question` (tx task ask, docs/agents.md "Questions"): the
  // claim ends `asked` (status completed, as the agent's own report: its worker lets it exit and
  // reports nothing more), the attempt is given back (it does not count against max_attempts),
  // and the task goes to `waiting` with the question appended to metadata.questions, event
  // task.asked {"question", "attempt"}, in one transaction. The session the agent recorded in the
  // ledger is resumed once the task is answered (TaskService::Answer). Same token checks as
  // Report (conflict for a stale, expired or foreign token, nothing written); invalid_argument
  // for a blank or oversized question.
  Result<Task> Ask(std::string_view task_id, std::int64_t token, const std::string& question);

  // Records a failed attempt that the holder ended for a named reason (kFailed, kTimedOut,
  // kStalled): the claim ends with that reason and exit code, then the task retries with backoff
  // until max_attempts, as Report(kFail) does. Same token checks as Report.
  Result<Task> Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                    const std::string& error, std::optional<int> exit_code = std::nullopt);

  // The holder gives up a claim it can no longer trust (its renewal was refused, or the store was
  // unreachable past the lease): if the claim is still active — even past its expiry, which is
  // what the reconciler would find — it ends `expired` with `reason` (kLeaseLost) and the task is
  // requeued as the reconciler would (the attempt counts). A claim that already ended is left as
  // it is. Returns the claim as it now stands. conflict: the token belongs to another task.
  Result<Claim> GiveUp(std::string_view task_id, std::int64_t token, EndReason reason);

  // When the worker should next try to claim (read only): `now` when a task is eligible for it
  // already, the earliest run_after of a ready task in its queues still waiting out a backoff
  // (possibly one it cannot take: a spurious wake-up is cheap), or nullopt when there is none.
  Result<std::optional<Millis>> NextEligibleAt(std::string_view worker_id,
                                               const AgentGate* gate = nullptr);

  // The claim with this token as it stands (read only). not_found: no such token.
  Result<Claim> Inspect(std::int64_t token);

  // Every active claim, oldest first, with its task's title and its worker (read only).
  Result<std::vector<Session>> ListSessions();

  // An operator ends a running attempt (DELETE /api/sessions/:token): the claim ends `cancelled`,
  // its worker is woken and kills the agent at once, and the task goes back to `ready`. The
  // attempt counts, so max_attempts still bounds a task an operator keeps stopping (the last one
  // fails it). not_found: no such token. conflict: the claim is no longer active.
  Result<Task> EndSession(std::int64_t token, const std::string& note);

 private:
  // The *Locked steps run inside a Write and fill their caller's objects in place. `worker` is
  // updated in the store and in memory when a claim is made.
  // ClaimLocked claims out.task (read by the caller) and fills out.claim.
  // With write_worker false, the worker is changed in memory only, for a caller that writes it
  // once after several claims.
  Status ClaimLocked(store::Txn& txn, ClaimResult& out, Worker& worker, Millis lease_ms,
                     const Moment& now, bool write_worker = true);
  // `out` is nullopt when no task is eligible.
  Status ClaimNextLocked(store::Txn& txn, Worker& worker, Millis lease_ms, const Moment& now,
                         std::optional<ClaimResult>& out, const AgentGate* gate = nullptr);
  Status ClaimTaskLocked(store::Txn& txn, std::string_view task_id, Worker& worker, Millis lease_ms,
                         const Moment& now, ClaimResult& out);
  // Fills `task` with the reported task as it now stands.
  Status ReportLocked(store::Txn& txn, std::string_view task_id, std::int64_t token,
                      Outcome outcome, const std::string& text, std::optional<int> exit_code,
                      const Moment& now, Task& task, Worker* deferred,
                      const nlohmann::json* branch = nullptr);

  store::Store& store_;
  const Clock& clock_;
  ServiceOptions options_;
};

}  // namespace tx::service
