#include "service/claim_service.h"

#include <algorithm>

#include "core/duration.h"
#include "core/validation.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;
using detail::LoadTask;
using detail::LoadWorker;

std::string_view ToString(Outcome o) {
  switch (o) {
    case Outcome::kDone:
      return "done";
    case Outcome::kReview:
      return "review";
    case Outcome::kFail:
      return "fail";
  }
  return "unknown";
}

namespace {

Status CheckCanClaim(const Worker& w, Millis now) {
  if (!IsLive(w.status)) {
    return Error::Conflict("worker " + w.id + " is " + std::string(ToString(w.status)) +
                           "; register again");
  }
  if (w.status == WorkerStatus::kStopping || w.status == WorkerStatus::kPaused) {
    return Error::Conflict("worker " + w.id + " is " + std::string(ToString(w.status)) +
                           " and may not claim");
  }
  if (IsStale(w, now)) {
    std::string age =
        w.last_heartbeat_at > 0 ? FormatDuration(now - w.last_heartbeat_at) + " ago" : "never";
    return Error::Conflict("worker " + w.id + " is stale (last heartbeat " + age +
                           "); heartbeat before claiming");
  }
  return Ok();
}

// A claim that passed the token checks, with its task.
struct Held {
  Claim claim;
  Task task;
};

// The checks every token-holding call makes. Nothing is written.
Result<Held> CheckToken(store::Txn& txn, std::string_view task_id, std::int64_t token, Millis now) {
  TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(token));
  std::optional<Task> task;
  if (!task_id.empty()) {
    TX_ASSIGN_OR_RETURN(task, LoadTask(txn, task_id));
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
                           claim->task_id + " expired " +
                           FormatDuration(now - claim->lease_expires_at) + " ago");
  }
  if (!task) {
    TX_ASSIGN_OR_RETURN(task, LoadTask(txn, claim->task_id));
  }
  return Held{std::move(*claim), std::move(*task)};
}

bool HasCapabilities(const Worker& w, const Task& t) {
  return std::all_of(t.requires_caps.begin(), t.requires_caps.end(), [&](const std::string& cap) {
    return std::find(w.capabilities.begin(), w.capabilities.end(), cap) != w.capabilities.end();
  });
}

}  // namespace

ClaimService::ClaimService(store::Store& store, const Clock& clock, ServiceOptions options)
    : store_(store), clock_(clock), options_(WithDefaults(std::move(options))) {}

Result<ClaimResult> ClaimService::ClaimLocked(store::Txn& txn, Task task, Worker worker,
                                              Millis lease_ms, Millis now) {
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kClaim, TaskStatus::kRunning));
  TX_ASSIGN_OR_RETURN(int previous, txn.CountClaimsForTask(task.id));
  task.status = TaskStatus::kRunning;
  ++task.attempt;
  task.started_at = now;
  task.updated_at = now;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));

  Claim claim;
  claim.task_id = task.id;
  claim.worker_id = worker.id;
  claim.attempt = previous + 1;
  claim.claimed_at = now;
  claim.lease_ms = lease_ms > 0 ? lease_ms : options_.default_lease_ms;
  claim.lease_expires_at = now + claim.lease_ms;
  TX_RETURN_IF_ERROR(txn.InsertClaim(claim));

  worker.status = WorkerStatus::kBusy;
  worker.current_task_id = task.id;
  worker.last_heartbeat_at = now;  // a claim is proof of life
  TX_RETURN_IF_ERROR(txn.UpdateWorker(worker));
  TX_RETURN_IF_ERROR(Emit(txn, now, "task.claimed", task.id, worker.id,
                          {{"token", claim.token},
                           {"attempt", task.attempt},
                           {"lease", FormatDuration(claim.lease_ms)}}));
  return ClaimResult{std::move(claim), std::move(task)};
}

Result<std::optional<ClaimResult>> ClaimService::ClaimNextLocked(store::Txn& txn, Worker worker,
                                                                 Millis lease_ms, Millis now) {
  TX_RETURN_IF_ERROR(CheckCanClaim(worker, now));
  store::PickCriteria criteria{worker.queues, worker.capabilities, worker.name, worker.slot, now};
  if (criteria.queues.empty()) criteria.queues = {"default"};
  TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.PickNextReady(criteria));
  if (!task) return std::optional<ClaimResult>();
  TX_ASSIGN_OR_RETURN(ClaimResult r,
                      ClaimLocked(txn, std::move(*task), std::move(worker), lease_ms, now));
  return std::optional<ClaimResult>(std::move(r));
}

Result<ClaimResult> ClaimService::ClaimTaskLocked(store::Txn& txn, std::string_view task_id,
                                                  Worker worker, Millis lease_ms, Millis now) {
  TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, task_id));
  TX_RETURN_IF_ERROR(CheckCanClaim(worker, now));
  if (task.status == TaskStatus::kRunning) {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> holder, txn.GetActiveClaimForTask(task.id));
    return Error::Conflict("task " + task.id + " is already claimed" +
                           (holder ? " by " + holder->worker_id : std::string()));
  }
  if (task.status == TaskStatus::kBlocked) {
    return Error::Conflict("task " + task.id + " is blocked until its after[] tasks are done");
  }
  if (!task.owner.empty() && task.owner != worker.name && task.owner != worker.slot) {
    return Error::Conflict("task " + task.id + " is pinned to " + task.owner);
  }
  if (!HasCapabilities(worker, task)) {
    return Error::Conflict("worker " + worker.id + " lacks a capability task " + task.id +
                           " requires");
  }
  return ClaimLocked(txn, std::move(task), std::move(worker), lease_ms, now);
}

Result<std::optional<ClaimResult>> ClaimService::ClaimNext(std::string_view worker_id,
                                                           Millis lease_ms) {
  std::optional<ClaimResult> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    TX_ASSIGN_OR_RETURN(out, ClaimNextLocked(txn, std::move(worker), lease_ms, now));
    return Ok();
  }));
  return out;
}

Result<ClaimResult> ClaimService::ClaimTask(std::string_view task_id, std::string_view worker_id,
                                            Millis lease_ms) {
  std::optional<ClaimResult> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    TX_ASSIGN_OR_RETURN(ClaimResult r,
                        ClaimTaskLocked(txn, task_id, std::move(worker), lease_ms, now));
    out = std::move(r);
    return Ok();
  }));
  return std::move(*out);
}

Result<ClaimResult> ClaimService::ClaimNextAs(const ManualWorker& who, Millis lease_ms) {
  TX_RETURN_IF_ERROR(ValidateName("worker name", who.name));
  std::optional<ClaimResult> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, detail::EnsureWorkerByName(txn, who, now));
    std::string queues;
    for (const auto& q : worker.queues) queues += (queues.empty() ? "" : ",") + q;
    TX_ASSIGN_OR_RETURN(out, ClaimNextLocked(txn, std::move(worker), lease_ms, now));
    if (!out) {  // an error, so the transaction (and any registration) rolls back
      return Error::NotFound("no eligible ready task in queue " + queues + " for " + who.name);
    }
    return Ok();
  }));
  return std::move(*out);
}

Result<ClaimResult> ClaimService::ClaimTaskAs(std::string_view task_id, const ManualWorker& who,
                                              Millis lease_ms) {
  TX_RETURN_IF_ERROR(ValidateName("worker name", who.name));
  std::optional<ClaimResult> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, detail::EnsureWorkerByName(txn, who, now));
    TX_ASSIGN_OR_RETURN(ClaimResult r,
                        ClaimTaskLocked(txn, task_id, std::move(worker), lease_ms, now));
    out = std::move(r);
    return Ok();
  }));
  return std::move(*out);
}

Result<Claim> ClaimService::Renew(std::string_view task_id, std::int64_t token) {
  std::optional<Claim> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Held held, CheckToken(txn, task_id, token, now));
    Claim& claim = held.claim;
    if (claim.renewed_count >= options_.max_renewals) {
      return Error::Conflict("token " + std::to_string(token) + " on task " + claim.task_id +
                             " reached the renewal cap (" + std::to_string(options_.max_renewals) +
                             ")");
    }
    ++claim.renewed_count;
    claim.lease_expires_at = now + claim.lease_ms;
    TX_RETURN_IF_ERROR(txn.UpdateClaim(claim));
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(claim.worker_id));
    if (w && IsLive(w->status)) {
      w->last_heartbeat_at = now;  // a renewal is proof of life
      TX_RETURN_IF_ERROR(txn.UpdateWorker(*w));
    }
    TX_RETURN_IF_ERROR(Emit(txn, now, "lease.renewed", claim.task_id, claim.worker_id,
                            {{"token", token}, {"renewed_count", claim.renewed_count}}));
    out = std::move(claim);
    return Ok();
  }));
  return std::move(*out);
}

Result<Task> ClaimService::Release(std::string_view task_id, std::int64_t token, EndReason reason) {
  std::optional<Task> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Held held, CheckToken(txn, task_id, token, now));
    Claim& claim = held.claim;
    Task& task = held.task;
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kReleased, reason, now,
                                        std::nullopt, {.heartbeat = true}));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.released", task.id, claim.worker_id,
                            {{"token", token}, {"reason", ToString(reason)}}));
    TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, reason, /*counts=*/false, now));
    out = std::move(task);
    return Ok();
  }));
  return std::move(*out);
}

Result<Task> ClaimService::ReportLocked(store::Txn& txn, std::string_view task_id,
                                        std::int64_t token, Outcome outcome,
                                        const std::string& text, std::optional<int> exit_code,
                                        Millis now, Worker* deferred) {
  TX_ASSIGN_OR_RETURN(Held held, CheckToken(txn, task_id, token, now));
  Claim& claim = held.claim;
  Task& task = held.task;
  EndReason reason = outcome == Outcome::kFail ? EndReason::kFailed : EndReason::kExited;
  TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kCompleted, reason, now, exit_code,
                                      {.heartbeat = true, .completed = outcome != Outcome::kFail},
                                      deferred));
  if (outcome == Outcome::kFail) {
    TX_RETURN_IF_ERROR(detail::FailAttempt(txn, task, text, now, options_));
  } else if (outcome == Outcome::kReview || task.review) {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kSubmitReview, TaskStatus::kReview));
    task.status = TaskStatus::kReview;
    task.result = text;
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "task.review", task.id, claim.worker_id, {{"attempt", task.attempt}}));
  } else {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kSucceed, TaskStatus::kDone));
    TX_RETURN_IF_ERROR(detail::FinishDone(txn, task, text, now, claim.worker_id));
  }
  return std::move(task);
}

Result<Task> ClaimService::Report(std::string_view task_id, std::int64_t token, Outcome outcome,
                                  const std::string& text, std::optional<int> exit_code) {
  std::optional<Task> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, ReportLocked(txn, task_id, token, outcome, text, exit_code, now,
                                          /*deferred=*/nullptr));
    return Ok();
  }));
  return std::move(*out);
}

Result<ClaimService::ReportResult> ClaimService::ReportAndClaimNext(
    std::string_view task_id, std::int64_t token, Outcome outcome, const std::string& text,
    std::optional<int> exit_code, Millis lease_ms) {
  std::optional<ReportResult> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    // The worker is read once and written once: busy with its next task, or idle.
    Worker worker;
    TX_ASSIGN_OR_RETURN(Task task,
                        ReportLocked(txn, task_id, token, outcome, text, exit_code, now, &worker));
    out = ReportResult{std::move(task), std::nullopt};
    if (worker.id.empty()) return Ok();
    if (!CheckCanClaim(worker, now).ok()) return txn.UpdateWorker(worker);
    TX_ASSIGN_OR_RETURN(out->next, ClaimNextLocked(txn, worker, lease_ms, now));
    if (!out->next) return txn.UpdateWorker(worker);
    return Ok();
  }));
  return std::move(*out);
}

Result<Task> ClaimService::Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                                const std::string& error, std::optional<int> exit_code) {
  std::optional<Task> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Held held, CheckToken(txn, task_id, token, now));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, held.claim, ClaimStatus::kCompleted, reason, now,
                                        exit_code, {.heartbeat = true}));
    TX_RETURN_IF_ERROR(detail::FailAttempt(txn, held.task, error, now, options_));
    out = std::move(held.task);
    return Ok();
  }));
  return std::move(*out);
}

Result<Claim> ClaimService::GiveUp(std::string_view task_id, std::int64_t token, EndReason reason) {
  std::optional<Claim> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(token));
    if (!claim) return Error::NotFound("no claim has token " + std::to_string(token));
    if (claim->task_id != task_id) {
      return Error::Conflict("token " + std::to_string(token) + " belongs to task " +
                             claim->task_id + ", not " + std::string(task_id));
    }
    if (claim->status == ClaimStatus::kActive) {
      TX_RETURN_IF_ERROR(
          detail::EndClaim(txn, *claim, ClaimStatus::kExpired, reason, now, std::nullopt, {}));
      TX_RETURN_IF_ERROR(Emit(txn, now, "lease.lost", claim->task_id, claim->worker_id,
                              {{"token", token}, {"reason", ToString(reason)}}));
      TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, claim->task_id));
      if (task.status == TaskStatus::kRunning) {
        TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, reason, /*counts=*/true, now));
      }
    }
    out = std::move(*claim);
    return Ok();
  }));
  return std::move(*out);
}

Result<std::optional<Millis>> ClaimService::NextEligibleAt(std::string_view worker_id) {
  std::optional<Millis> out;
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    store::PickCriteria criteria{worker.queues, worker.capabilities, worker.name, worker.slot, now};
    if (criteria.queues.empty()) criteria.queues = {"default"};
    TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.PickNextReady(criteria));
    if (task) {
      out = now;
      return Ok();
    }
    TX_ASSIGN_OR_RETURN(out, txn.NextReadyAt(criteria));
    return Ok();
  }));
  return out;
}

Result<Claim> ClaimService::Inspect(std::int64_t token) {
  std::optional<Claim> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.GetClaim(token));
    if (!out) return Error::NotFound("no claim has token " + std::to_string(token));
    return Ok();
  }));
  return std::move(*out);
}

}  // namespace tx::service
