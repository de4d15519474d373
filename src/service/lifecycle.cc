#include "service/lifecycle.h"

#include <cstdio>

#include "core/duration.h"
#include "core/ids.h"

namespace tx::service::detail {

Status Emit(Txn& txn, Millis now, std::string type, const std::string& task_id,
            const std::string& worker_id, nlohmann::json data) {
  // The event's number is not needed here, and not asking for it lets a backend send the
  // insert with the transaction's next statement (store/postgres).
  return txn.AppendEventData(type, now, task_id, worker_id, data.dump());
}

Status EmitData(Txn& txn, Millis now, const std::string& type, const std::string& task_id,
                const std::string& worker_id, std::string_view data) {
  return txn.AppendEventData(type, now, task_id, worker_id, data);
}

Result<Task> LoadTask(Txn& txn, std::string_view id) {
  TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(id));
  if (!t) return Error::NotFound("task " + std::string(id) + " not found");
  return std::move(*t);
}

Result<Worker> LoadWorker(Txn& txn, std::string_view id) {
  TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(id));
  if (!w) return Error::NotFound("worker " + std::string(id) + " not found");
  return std::move(*w);
}

Status CheckToken(Txn& txn, std::string_view task_id, std::int64_t token, const Moment& now,
                  Claim& held, Task& task_out) {
  TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(token));
  std::optional<Task> task;
  if (!task_id.empty()) {
    TX_ASSIGN_OR_RETURN(task, txn.GetTask(task_id));
    if (!task) return Error::NotFound("task " + std::string(task_id) + " not found");
  }
  if (!claim) return Error::Conflict("no claim has token " + std::to_string(token));
  if (!task_id.empty() && claim->task_id != task_id) {
    return Error::Conflict("token " + std::to_string(token) + " belongs to task " + claim->task_id +
                           ", not " + std::string(task_id));
  }
  if (claim->status != ClaimStatus::kActive) {
    std::string why = std::string(ToString(claim->status));
    if (claim->end_reason != EndReason::kNone) {
      why += " (" + std::string(ToString(claim->end_reason)) + ")";
    }
    return Error::Conflict("token " + std::to_string(token) + " of task " + claim->task_id +
                           " is stale: its claim was " + why);
  }
  if (IsExpired(*claim, now)) {
    return Error::Conflict("the lease of token " + std::to_string(token) + " on task " +
                           claim->task_id + " expired " + FormatDuration(-LeaseLeft(*claim, now)) +
                           " ago");
  }
  if (!task) {
    TX_ASSIGN_OR_RETURN(task, txn.GetTask(claim->task_id));
    if (!task) return Error::NotFound("task " + claim->task_id + " not found");
  }
  held = std::move(*claim);
  task_out = std::move(*task);
  return Ok();
}

Status EndClaim(Txn& txn, Claim& claim, ClaimStatus status, EndReason reason, Millis now,
                std::optional<int> exit_code, WorkerTouch touch, Worker* deferred) {
  claim.status = status;
  claim.end_reason = reason;
  claim.ended_at = now;
  claim.exit_code = exit_code;
  TX_RETURN_IF_ERROR(txn.UpdateClaim(claim));
  std::optional<Worker> w;
  if (deferred != nullptr && !deferred->id.empty() && deferred->id == claim.worker_id) {
    w = std::move(*deferred);
  } else {
    TX_ASSIGN_OR_RETURN(w, txn.GetWorker(claim.worker_id));
  }
  if (!w) {
    if (deferred != nullptr) deferred->id.clear();
    return Ok();
  }
  bool changed = false;
  if (w->current_task_id == claim.task_id) {
    w->current_task_id.clear();
    if (w->status == WorkerStatus::kBusy) w->status = WorkerStatus::kIdle;
    // The agent its heartbeat recorded has ended with the claim.
    if (auto pid = w->metadata.find("agent_pid"); pid != w->metadata.end() && *pid != 0) *pid = 0;
    changed = true;
  }
  if (IsLive(w->status) && touch.heartbeat) {
    RecordBeat(*w, *touch.heartbeat);
    changed = true;
  }
  if (IsLive(w->status) && touch.completed) {
    w->metadata["tasks_completed"] = w->metadata.value("tasks_completed", 0) + 1;
    changed = true;
  }
  if (deferred != nullptr) {
    *deferred = std::move(*w);
    return Ok();
  }
  if (changed) TX_RETURN_IF_ERROR(txn.UpdateWorker(*w));
  return Ok();
}

Result<bool> FailIfBudgetSpent(Txn& txn, Task& task, Millis now) {
  double budget = BudgetUsd(task);
  if (budget <= 0) return false;
  TX_ASSIGN_OR_RETURN(double spent, txn.TaskCost(task.id));
  if (spent < budget) return false;
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kBudgetSpent, TaskStatus::kFailed));
  char text[96];
  std::snprintf(text, sizeof text, "budget: its attempts cost $%.4f of its $%.4f", spent, budget);
  task.status = TaskStatus::kFailed;
  task.error = text;
  task.finished_at = now;
  task.updated_at = now;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
  TX_RETURN_IF_ERROR(Emit(txn, now, "task.failed", task.id, "",
                          {{"reason", "budget"},
                           {"attempt", task.attempt},
                           {"spent_usd", spent},
                           {"budget_usd", budget},
                           {"error", task.error}}));
  return true;
}

Status RequeueTask(Txn& txn, Task& task, EndReason why, bool counts, Millis now) {
  if (!counts && task.attempt > 0) --task.attempt;
  task.updated_at = now;
  TX_ASSIGN_OR_RETURN(bool spent, FailIfBudgetSpent(txn, task, now));
  if (spent) return Ok();
  if (counts && task.attempt >= task.max_attempts) {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kRequeue, TaskStatus::kFailed));
    task.status = TaskStatus::kFailed;
    task.finished_at = now;
    task.error = "attempts exhausted: attempt " + std::to_string(task.attempt) + " of " +
                 std::to_string(task.max_attempts) + " ended " + std::string(ToString(why));
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
    return Emit(txn, now, "task.failed", task.id, "",
                {{"reason", ToString(why)}, {"attempt", task.attempt}, {"error", task.error}});
  }
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kRequeue, TaskStatus::kReady));
  task.status = TaskStatus::kReady;
  task.run_after = now;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
  return Emit(txn, now, "task.requeued", task.id, "",
              {{"reason", ToString(why)}, {"attempt", task.attempt}, {"counted", counts}});
}

Status FailAttempt(Txn& txn, Task& task, const std::string& error, Millis now,
                   const ServiceOptions& options, Millis min_delay) {
  task.error = error;
  task.updated_at = now;
  TX_ASSIGN_OR_RETURN(bool spent, FailIfBudgetSpent(txn, task, now));
  if (spent) return Ok();
  if (task.attempt >= task.max_attempts) {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kAttemptFailed, TaskStatus::kFailed));
    task.status = TaskStatus::kFailed;
    task.finished_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
    return Emit(txn, now, "task.failed", task.id, "",
                {{"attempt", task.attempt}, {"error", error}});
  }
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kAttemptFailed, TaskStatus::kReady));
  Millis delay =
      std::max(min_delay, RetryDelay(options.backoff, task.attempt, options.unit_random()));
  task.status = TaskStatus::kReady;
  task.run_after = now + delay;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
  return Emit(txn, now, "task.retry_scheduled", task.id, "",
              {{"attempt", task.attempt}, {"delay", FormatDuration(delay)}, {"error", error}});
}

Result<bool> DependenciesDone(Txn& txn, const std::vector<std::string>& after) {
  for (const auto& dep : after) {
    TX_ASSIGN_OR_RETURN(std::optional<Task> d, txn.GetTask(dep));
    if (!d || d->status != TaskStatus::kDone) return false;
  }
  return true;
}

Status FinishDone(Txn& txn, Task& task, const std::string& result, Millis now,
                  const std::string& worker_id) {
  task.status = TaskStatus::kDone;
  task.result = result;
  task.error.clear();  // an earlier attempt's error stays in attempts[] and the event log
  task.finished_at = now;
  task.updated_at = now;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
  TX_RETURN_IF_ERROR(EmitData(txn, now, "task.done", task.id, worker_id,
                              "{\"attempt\":" + std::to_string(task.attempt) + "}"));
  TX_ASSIGN_OR_RETURN(std::vector<std::string> dependents, txn.ListDependents(task.id));
  for (const auto& id : dependents) {
    TX_ASSIGN_OR_RETURN(std::optional<Task> d, txn.GetTask(id));
    if (!d || d->status != TaskStatus::kBlocked) continue;
    TX_ASSIGN_OR_RETURN(bool ready, DependenciesDone(txn, d->after));
    if (!ready) continue;
    d->status = TaskStatus::kReady;
    d->run_after = now;
    d->updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(*d));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.unblocked", d->id, "", {{"after", task.id}}));
  }
  return Ok();
}

Result<Worker> InsertWorker(Txn& txn, const Registration& r, const Moment& now,
                            Millis default_interval) {
  Worker w;
  for (int tries = 0;; ++tries) {
    w.id = NewWorkerId();
    TX_ASSIGN_OR_RETURN(std::optional<Worker> clash, txn.GetWorker(w.id));
    if (!clash) break;
    if (tries > 8) return Error::Internal("could not find a free worker id");
  }
  w.name = !r.name.empty() ? r.name : !r.slot.empty() ? r.slot : w.id;
  w.slot = r.slot;
  w.pool = r.pool;
  w.hostname = r.hostname;
  w.pid = r.pid;
  w.capabilities = r.capabilities;
  w.queues = r.queues.empty() ? std::vector<std::string>{"default"} : r.queues;
  w.status = WorkerStatus::kIdle;
  w.heartbeat_interval_ms =
      r.heartbeat_interval_ms > 0 ? r.heartbeat_interval_ms : default_interval;
  w.busy_heartbeat_interval_ms = r.busy_heartbeat_interval_ms;
  w.registered_at = now;
  RecordBeat(w, now);
  w.metadata = r.metadata.is_object() ? r.metadata : nlohmann::json::object();
  TX_RETURN_IF_ERROR(txn.InsertWorker(w));
  TX_RETURN_IF_ERROR(Emit(txn, now, "worker.registered", "", w.id,
                          {{"name", w.name},
                           {"slot", w.slot},
                           {"pool", w.pool},
                           {"hostname", w.hostname},
                           {"pid", w.pid},
                           {"heartbeat_interval", FormatDuration(w.heartbeat_interval_ms)},
                           {"busy_heartbeat_interval", FormatDuration(BusyIntervalMs(w))}}));
  return w;
}

Result<Worker> EnsureWorkerByName(Txn& txn, const ManualWorker& who, const Moment& now) {
  TX_ASSIGN_OR_RETURN(std::vector<Worker> live,
                      txn.ListWorkers({WorkerStatus::kIdle, WorkerStatus::kBusy}));
  for (auto& w : live) {  // newest first
    if (w.name == who.name && !IsStale(w, now)) {
      RecordBeat(w, now);
      TX_RETURN_IF_ERROR(txn.UpdateWorker(w));
      return std::move(w);
    }
  }
  Registration r;
  r.name = who.name;
  r.hostname = who.hostname;
  r.pid = who.pid;
  r.heartbeat_interval_ms = who.heartbeat_interval_ms;
  r.metadata = {{"manual", true}};
  return InsertWorker(txn, r, now, who.heartbeat_interval_ms);
}

Status ReleaseClaimsOf(Txn& txn, const std::string& worker_id, EndReason reason, bool counts,
                       Millis now) {
  TX_ASSIGN_OR_RETURN(std::vector<Claim> active, txn.ListActiveClaims());
  for (auto& claim : active) {
    if (claim.worker_id != worker_id) continue;
    TX_RETURN_IF_ERROR(EndClaim(txn, claim, ClaimStatus::kReleased, reason, now));
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, claim.task_id));
    if (task.status == TaskStatus::kRunning) {
      TX_RETURN_IF_ERROR(RequeueTask(txn, task, reason, counts, now));
    }
  }
  return Ok();
}

Result<Worker> LoadLiveWorker(Txn& txn, std::string_view id) {
  TX_ASSIGN_OR_RETURN(Worker w, LoadWorker(txn, id));
  if (!IsLive(w.status)) {
    return Error::Conflict("worker " + w.id + " is already " + std::string(ToString(w.status)));
  }
  return w;
}

Status MarkDead(Txn& txn, Worker& worker, const std::string& reason, Millis now,
                nlohmann::json detail) {
  TX_RETURN_IF_ERROR(ReleaseClaimsOf(txn, worker.id, EndReason::kWorkerDied, /*counts=*/true, now));
  TX_ASSIGN_OR_RETURN(worker, LoadWorker(txn, worker.id));
  worker.status = WorkerStatus::kDead;
  worker.reason = reason;
  worker.current_task_id.clear();
  TX_RETURN_IF_ERROR(txn.UpdateWorker(worker));
  detail["reason"] = reason;
  return Emit(txn, now, "worker.dead", "", worker.id, std::move(detail));
}

}  // namespace tx::service::detail
