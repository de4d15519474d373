#pragma once
// The state changes that several services share (internal to service/). Each runs inside the
// caller's transaction and appends its events there, so a change and its event commit together.
// Contract and invariants: docs/leases.md and docs/reconcile.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "service/options.h"
#include "service/worker_service.h"
#include "store/store.h"

namespace tx::service::detail {

using store::Txn;

// EmitData: the same with `data` already serialized, as data.dump() would write it (keys in
// sorted order, no spaces), for the events of every claim and completion.
Status EmitData(Txn& txn, Millis now, const std::string& type, const std::string& task_id,
                const std::string& worker_id, std::string_view data);
Status Emit(Txn& txn, Millis now, std::string type, const std::string& task_id,
            const std::string& worker_id, nlohmann::json data = nlohmann::json::object());

Result<Task> LoadTask(Txn& txn, std::string_view id);
Result<Worker> LoadWorker(Txn& txn, std::string_view id);

// The checks every token-holding call makes: the claim with `token` is active, unexpired, and
// the task's (when `task_id` is not empty). Fills `held` and `task` with the claim that passed
// them and its task; writes nothing. conflict for an unknown, stale, expired or foreign token;
// not_found for an unknown task. (Out-parameters: every move of a Task on the claim path costs
// about as much as reading a column.)
Status CheckToken(Txn& txn, std::string_view task_id, std::int64_t token, const Moment& now,
                  Claim& held, Task& task);

// What ending a claim also records on its worker, when that worker is live.
struct WorkerTouch {
  // The call came from the worker itself at this moment: proof of life.
  std::optional<Moment> heartbeat;
  bool completed = false;  // count a completed task in its metadata
};

// Ends an active claim with `status` and `reason`, and frees its worker if that worker's current
// task is this claim's task (one read and at most one write of the worker). With `deferred`,
// the updated worker is handed back there instead of written, for a caller that writes it
// anyway (ReportAndClaimNext); its id is empty when the worker no longer exists. A `deferred`
// that already holds the claim's worker (a batch ending several of its claims) is taken as the
// worker's current state instead of reading it again.
Status EndClaim(Txn& txn, Claim& claim, ClaimStatus status, EndReason reason, Millis now,
                std::optional<int> exit_code = std::nullopt, WorkerTouch touch = {},
                Worker* deferred = nullptr);

// Sends a running task back to `ready` after an attempt that ended without an outcome (lease
// lost, worker died, released, orphaned). When `counts` is false the attempt is given back (a
// release, a graceful shutdown). A counted attempt that exhausts max_attempts fails the task.
Status RequeueTask(Txn& txn, Task& task, EndReason why, bool counts, Millis now);

// After a failed attempt: back to `ready` with exponential backoff and jitter (at least
// `min_delay`), or `failed` once max_attempts is reached.
Status FailAttempt(Txn& txn, Task& task, const std::string& error, Millis now,
                   const ServiceOptions& options, Millis min_delay = 0);

// Marks a task done and moves every blocked dependent whose after[] is now all done to `ready`.
Status FinishDone(Txn& txn, Task& task, const std::string& result, Millis now,
                  const std::string& worker_id);

// When the task has a budget and its attempts together have cost it (the usage ledger), fails
// the running or ready task for good — error "budget: ...", task.failed with the reason
// "budget" — and returns true; false, having changed nothing, otherwise. No new attempt of such
// a task starts: every path back to `ready` and every claim asks this first.
Result<bool> FailIfBudgetSpent(Txn& txn, Task& task, Millis now);

// True when every task in `after` is done. Unknown ids count as not done.
Result<bool> DependenciesDone(Txn& txn, const std::vector<std::string>& after);

// Inserts a registered worker (fresh id, `idle`, registration counts as its first heartbeat)
// and appends worker.registered.
Result<Worker> InsertWorker(Txn& txn, const Registration& r, const Moment& now,
                            Millis default_interval);

// The worker a hand-run command acts as: the newest live, fresh worker with this name (its
// heartbeat refreshed), or a new one registered with `heartbeat_interval_ms`.
Result<Worker> EnsureWorkerByName(Txn& txn, const ManualWorker& who, const Moment& now);

// Ends every active claim the worker holds with `reason` and requeues each running task; the
// attempts count only when `counts` (a death does, a graceful exit does not).
Status ReleaseClaimsOf(Txn& txn, const std::string& worker_id, EndReason reason, bool counts,
                       Millis now);

// Loads a worker that must still be live; conflict when it is already stopped or dead.
Result<Worker> LoadLiveWorker(Txn& txn, std::string_view id);

// Marks a live worker dead: every active claim it holds ends `worker_died` and its task is
// requeued (the attempt counts). `detail` adds to the worker.dead event.
Status MarkDead(Txn& txn, Worker& worker, const std::string& reason, Millis now,
                nlohmann::json detail = nlohmann::json::object());

}  // namespace tx::service::detail
