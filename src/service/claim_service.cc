#include "service/claim_service.h"

#include <algorithm>

#include "core/duration.h"
#include "core/question.h"
#include "core/validation.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::CheckToken;
using detail::Emit;
using detail::LoadTask;
using detail::LoadWorker;

namespace {

Status CheckCanClaim(const Worker& w, const Moment& now) {
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
        w.last_heartbeat_at > 0 ? FormatDuration(SilentFor(w, now)) + " ago" : "never";
    return Error::Conflict("worker " + w.id + " is stale (last heartbeat " + age +
                           "); heartbeat before claiming");
  }
  return Ok();
}

// 0 asks for the default lease.
Status CheckLease(Millis lease_ms) {
  if (lease_ms == 0 || lease_ms >= kMinLeaseMs) return Ok();
  return Error::InvalidArgument("a lease must be at least " + FormatDuration(kMinLeaseMs) +
                                ", not " + FormatDuration(lease_ms));
}

bool HasCapabilities(const Worker& w, const Task& t) {
  return std::all_of(t.requires_caps.begin(), t.requires_caps.end(), [&](const std::string& cap) {
    return std::find(w.capabilities.begin(), w.capabilities.end(), cap) != w.capabilities.end();
  });
}

}  // namespace

ClaimService::ClaimService(store::Store& store, const Clock& clock, ServiceOptions options)
    : store_(store), clock_(clock), options_(WithDefaults(std::move(options))) {}

Status ClaimService::ClaimLocked(store::Txn& txn, ClaimResult& out, Worker& worker, Millis lease_ms,
                                 const Moment& now, bool write_worker) {
  Task& task = out.task;
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kClaim, TaskStatus::kRunning));
  TX_ASSIGN_OR_RETURN(int previous, txn.CountClaimsForTask(task.id));
  task.status = TaskStatus::kRunning;
  ++task.attempt;
  task.started_at = now;
  task.updated_at = now;
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));

  Claim& claim = out.claim;
  claim = Claim();
  claim.task_id = task.id;
  claim.worker_id = worker.id;
  claim.attempt = previous + 1;
  claim.claimed_at = now;
  claim.lease_ms = lease_ms > 0 ? lease_ms : options_.default_lease_ms;
  RenewLease(claim, now);
  TX_RETURN_IF_ERROR(txn.InsertClaim(claim));

  worker.status = WorkerStatus::kBusy;
  worker.current_task_id = task.id;
  RecordBeat(worker, now);  // a claim is proof of life
  if (write_worker) TX_RETURN_IF_ERROR(txn.UpdateWorker(worker));
  // {"attempt":..,"lease":..,"token":..}: a duration is digits and unit letters, no escapes.
  return detail::EmitData(txn, now, "task.claimed", task.id, worker.id,
                          "{\"attempt\":" + std::to_string(task.attempt) + ",\"lease\":\"" +
                              FormatDuration(claim.lease_ms) +
                              "\",\"token\":" + std::to_string(claim.token) + "}");
}

Status ClaimService::ClaimNextLocked(store::Txn& txn, Worker& worker, Millis lease_ms,
                                     const Moment& now, std::optional<ClaimResult>& out,
                                     const AgentGate* gate) {
  out.reset();
  TX_RETURN_IF_ERROR(CheckCanClaim(worker, now));
  // A worker that claims while the store says it holds a claim lost the answer to that claim (a
  // connection dropped while it committed): it gets the claim back, its lease running from now,
  // rather than a second task, and the task does not wait out the lease for another attempt.
  // (A name registered by hand claims, tx claim --worker NAME, may hold several on purpose.)
  if (!worker.current_task_id.empty() && !worker.metadata.value("manual", false)) {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> held,
                        txn.GetActiveClaimForTask(worker.current_task_id));
    if (held && held->worker_id == worker.id) {
      TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, held->task_id));
      if (LeaseLeft(*held, now) < held->lease_ms) RenewLease(*held, now);
      TX_RETURN_IF_ERROR(txn.UpdateClaim(*held));
      RecordBeat(worker, now);  // a claim is proof of life, an adopted one too
      TX_RETURN_IF_ERROR(txn.UpdateWorker(worker));
      TX_RETURN_IF_ERROR(
          Emit(txn, now, "claim.adopted", task.id, worker.id, {{"token", held->token}}));
      out.emplace(ClaimResult{std::move(*held), std::move(task)});
      return Ok();
    }
  }
  store::PickCriteria criteria{worker.queues, worker.capabilities, worker.name, worker.slot, now};
  if (criteria.queues.empty()) criteria.queues = {"default"};
  if (gate != nullptr) {
    criteria.blocked_agents = gate->blocked_agents;
    criteria.blocked_agent_queues = gate->blocked_agent_queues;
  }
  // A task whose budget is spent fails here instead of starting (detail::FailIfBudgetSpent);
  // the pick then goes on to the next.
  for (int picks = 0; picks < 16; ++picks) {
    TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.PickNextReady(criteria));
    if (!task) return Ok();
    if (BudgetUsd(*task) > 0) {
      TX_ASSIGN_OR_RETURN(bool spent, detail::FailIfBudgetSpent(txn, *task, now));
      if (spent) continue;
    }
    out.emplace().task = std::move(*task);
    return ClaimLocked(txn, *out, worker, lease_ms, now);
  }
  return Ok();
}

Status ClaimService::ClaimTaskLocked(store::Txn& txn, std::string_view task_id, Worker& worker,
                                     Millis lease_ms, const Moment& now, ClaimResult& out) {
  TX_ASSIGN_OR_RETURN(out.task, LoadTask(txn, task_id));
  const Task& task = out.task;
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
  if (BudgetUsd(task) > 0) {
    TX_ASSIGN_OR_RETURN(double spent, txn.TaskCost(task.id));
    if (spent >= BudgetUsd(task)) {
      return Error::Conflict("task " + task.id + " has spent its budget");
    }
  }
  return ClaimLocked(txn, out, worker, lease_ms, now);
}

// The claim and report methods below build their result in place and return it from one return
// statement, so it is never moved (a ClaimResult holds a whole Task).

Result<std::optional<ClaimResult>> ClaimService::ClaimNext(std::string_view worker_id,
                                                           Millis lease_ms, const AgentGate* gate) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  Result<std::optional<ClaimResult>> result(std::in_place);
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    return ClaimNextLocked(txn, worker, lease_ms, now, *result, gate);
  });
  if (!s.ok()) result = s.error();
  return result;
}

Result<ClaimResult> ClaimService::ClaimTask(std::string_view task_id, std::string_view worker_id,
                                            Millis lease_ms) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  Result<ClaimResult> result(std::in_place);
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    return ClaimTaskLocked(txn, task_id, worker, lease_ms, now, *result);
  });
  if (!s.ok()) result = s.error();
  return result;
}

Result<ClaimResult> ClaimService::ClaimNextAs(const ManualWorker& who, Millis lease_ms) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  TX_RETURN_IF_ERROR(ValidateName("worker name", who.name));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<ClaimResult> {
    TX_ASSIGN_OR_RETURN(Worker worker, detail::EnsureWorkerByName(txn, who, now));
    std::string queues;
    for (const auto& q : worker.queues) queues += (queues.empty() ? "" : ",") + q;
    std::optional<ClaimResult> claimed;
    TX_RETURN_IF_ERROR(ClaimNextLocked(txn, worker, lease_ms, now, claimed));
    if (!claimed) {  // an error, so the transaction (and any registration) rolls back
      return Error::NotFound("no eligible ready task in queue " + queues + " for " + who.name);
    }
    return std::move(*claimed);
  });
}

Result<ClaimResult> ClaimService::ClaimTaskAs(std::string_view task_id, const ManualWorker& who,
                                              Millis lease_ms) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  TX_RETURN_IF_ERROR(ValidateName("worker name", who.name));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<ClaimResult> {
    TX_ASSIGN_OR_RETURN(Worker worker, detail::EnsureWorkerByName(txn, who, now));
    ClaimResult claimed;
    TX_RETURN_IF_ERROR(ClaimTaskLocked(txn, task_id, worker, lease_ms, now, claimed));
    return claimed;
  });
}

Result<Claim> ClaimService::Renew(std::string_view task_id, std::int64_t token) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Claim> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(CheckToken(txn, task_id, token, now, claim, task));
    if (claim.renewed_count >= options_.max_renewals) {
      return Error::Conflict("token " + std::to_string(token) + " on task " + claim.task_id +
                             " reached the renewal cap (" + std::to_string(options_.max_renewals) +
                             ")");
    }
    ++claim.renewed_count;
    RenewLease(claim, now);
    TX_RETURN_IF_ERROR(txn.UpdateClaim(claim));
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(claim.worker_id));
    if (w && IsLive(w->status)) {
      RecordBeat(*w, now);  // a renewal is proof of life
      TX_RETURN_IF_ERROR(txn.UpdateWorker(*w));
    }
    TX_RETURN_IF_ERROR(Emit(txn, now, "lease.renewed", claim.task_id, claim.worker_id,
                            {{"token", token}, {"renewed_count", claim.renewed_count}}));
    return claim;
  });
}

Result<Task> ClaimService::Release(std::string_view task_id, std::int64_t token, EndReason reason) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kReleased, reason, now,
                                        std::nullopt, {.heartbeat = now}));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.released", task.id, claim.worker_id,
                            {{"token", token}, {"reason", ToString(reason)}}));
    TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, reason, /*counts=*/false, now));
    return task;
  });
}

Status ClaimService::ReportLocked(store::Txn& txn, std::string_view task_id, std::int64_t token,
                                  Outcome outcome, const std::string& text,
                                  std::optional<int> exit_code, const Moment& now, Task& task,
                                  Worker* deferred, const nlohmann::json* branch) {
  Claim claim;
  TX_RETURN_IF_ERROR(CheckToken(txn, task_id, token, now, claim, task));
  EndReason reason = outcome == Outcome::kFail ? EndReason::kFailed : EndReason::kExited;
  TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kCompleted, reason, now, exit_code,
                                      {.heartbeat = now, .completed = outcome != Outcome::kFail},
                                      deferred));
  if (outcome == Outcome::kFail) {
    // An agent that reported its own failure may still be running for a moment (its worker
    // stops it within a few seconds): its retry waits that long, so that it never runs beside it.
    Millis min_delay = task.agent.empty() ? 0 : kReportedFailureRetryMs;
    TX_RETURN_IF_ERROR(detail::FailAttempt(txn, task, text, now, options_, min_delay));
  } else if (outcome == Outcome::kReview || task.review) {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kSubmitReview, TaskStatus::kReview));
    task.status = TaskStatus::kReview;
    task.result = text;
    task.updated_at = now;
    // A review starts afresh: the last one's overdue mark goes (the reconciler's, reconciler.h).
    bool rewrite = task.metadata.erase("review_overdue_at") > 0;
    if (branch != nullptr && branch->is_object()) {
      task.metadata["branch"] = *branch;
      rewrite = true;
    } else if (!task.repo.empty() && task.metadata.erase("branch") > 0) {
      rewrite = true;  // an earlier review's: no longer what the branch holds
    }
    TX_RETURN_IF_ERROR(rewrite ? txn.UpdateTask(task) : txn.UpdateTaskState(task));
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "task.review", task.id, claim.worker_id, {{"attempt", task.attempt}}));
  } else {
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kSucceed, TaskStatus::kDone));
    TX_RETURN_IF_ERROR(detail::FinishDone(txn, task, text, now, claim.worker_id));
  }
  return Ok();
}

Result<Task> ClaimService::Report(std::string_view task_id, std::int64_t token, Outcome outcome,
                                  const std::string& text, std::optional<int> exit_code,
                                  const nlohmann::json* branch) {
  Result<Task> result(std::in_place);
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    return ReportLocked(txn, task_id, token, outcome, text, exit_code, now, *result,
                        /*deferred=*/nullptr, branch);
  });
  if (!s.ok()) result = s.error();
  return result;
}

Result<ClaimService::ReportResult> ClaimService::ReportAndClaimNext(
    std::string_view task_id, std::int64_t token, Outcome outcome, const std::string& text,
    std::optional<int> exit_code, Millis lease_ms, const AgentGate* gate) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  Result<ReportResult> result(std::in_place);
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    ReportResult& out = *result;
    out.next.reset();
    // The worker is read once and written once: busy with its next task, or idle.
    Worker worker;
    TX_RETURN_IF_ERROR(
        ReportLocked(txn, task_id, token, outcome, text, exit_code, now, out.task, &worker));
    if (worker.id.empty()) return Ok();
    // An operator's request (pause, stop) is read by the worker before it claims again.
    if (!CheckCanClaim(worker, now).ok() || worker.request != WorkerRequest::kNone) {
      return txn.UpdateWorker(worker);
    }
    TX_RETURN_IF_ERROR(ClaimNextLocked(txn, worker, lease_ms, now, out.next, gate));
    if (!out.next) return txn.UpdateWorker(worker);
    return Ok();
  });
  if (!s.ok()) result = s.error();
  return result;
}

Result<ClaimService::BatchResult> ClaimService::ReportAndClaimBatch(
    std::string_view worker_id, const std::vector<Finished>& finished, int want, Millis lease_ms) {
  TX_RETURN_IF_ERROR(CheckLease(lease_ms));
  if (want < 0 || want > kMaxBatch) {
    return Error::InvalidArgument("a batch claims 0 to " + std::to_string(kMaxBatch) +
                                  " tasks, not " + std::to_string(want));
  }
  if (finished.size() > static_cast<std::size_t>(kMaxBatch)) {
    return Error::InvalidArgument("a batch reports at most " + std::to_string(kMaxBatch) +
                                  " outcomes, not " + std::to_string(finished.size()));
  }
  std::vector<std::int64_t> tokens;
  for (const Finished& f : finished) tokens.push_back(f.token);
  std::sort(tokens.begin(), tokens.end());
  if (auto dup = std::adjacent_find(tokens.begin(), tokens.end()); dup != tokens.end()) {
    return Error::InvalidArgument("token " + std::to_string(*dup) + " is reported twice");
  }
  Result<BatchResult> result(std::in_place);
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    BatchResult& out = *result;
    out.reported.clear();  // a transaction run again (a dropped connection) starts over
    out.claimed.clear();
    TX_RETURN_IF_ERROR(txn.LockClaims(tokens));
    // The worker is read once and written once, however many claims it ends and makes.
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    out.reported.reserve(finished.size());
    for (const Finished& f : finished) {
      TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(f.token));
      if (claim && claim->worker_id != worker.id) {
        return Error::Conflict("token " + std::to_string(f.token) + " is held by worker " +
                               claim->worker_id + ", not " + worker.id);
      }
      TX_RETURN_IF_ERROR(ReportLocked(txn, f.task_id, f.token, f.outcome, f.text, f.exit_code, now,
                                      out.reported.emplace_back(), &worker));
    }
    Status may_claim = CheckCanClaim(worker, now);
    if (want > 0 && may_claim.ok()) {
      store::PickCriteria criteria{worker.queues, worker.capabilities, worker.name, worker.slot,
                                   now};
      if (criteria.queues.empty()) criteria.queues = {"default"};
      out.claimed.reserve(want);
      while (static_cast<int>(out.claimed.size()) < want) {
        TX_ASSIGN_OR_RETURN(std::vector<Task> picked,
                            txn.PickReady(criteria, want - static_cast<int>(out.claimed.size())));
        if (picked.empty()) break;
        for (Task& t : picked) {
          ClaimResult& c = out.claimed.emplace_back();
          c.task = std::move(t);
          TX_RETURN_IF_ERROR(ClaimLocked(txn, c, worker, lease_ms, now, /*write_worker=*/false));
        }
      }
    } else if (want > 0 && finished.empty()) {
      return may_claim;
    }
    if (finished.empty() && out.claimed.empty()) return Ok();
    return txn.UpdateWorker(worker);
  });
  if (!s.ok()) result = s.error();
  return result;
}

Result<Task> ClaimService::Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                                const std::string& error, std::optional<int> exit_code) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kCompleted, reason, now, exit_code,
                                        {.heartbeat = now}));
    TX_RETURN_IF_ERROR(detail::FailAttempt(txn, task, error, now, options_));
    return task;
  });
}

Result<Task> ClaimService::Ask(std::string_view task_id, std::int64_t token,
                               const std::string& question) {
  TX_RETURN_IF_ERROR(ValidateQuestionText("question", question, options_.limits.max_text));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kAsk, TaskStatus::kWaiting));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kCompleted, EndReason::kAsked,
                                        now.wall, std::nullopt, {.heartbeat = now}));
    txn.WakeWatchersOnCommit();  // its worker sees the claim end now, not at its next look
    if (task.attempt > 0) --task.attempt;  // a question is not an attempt used up
    task.status = TaskStatus::kWaiting;
    task.updated_at = now.wall;
    AddQuestion(task, question, claim.attempt, now.wall);
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    TX_RETURN_IF_ERROR(Emit(txn, now.wall, "task.asked", task.id, claim.worker_id,
                            {{"question", question}, {"attempt", claim.attempt}}));
    return task;
  });
}

Result<Claim> ClaimService::GiveUp(std::string_view task_id, std::int64_t token, EndReason reason) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Claim> {
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
    return std::move(*claim);
  });
}

Result<std::optional<Millis>> ClaimService::NextEligibleAt(std::string_view worker_id,
                                                           const AgentGate* gate) {
  const Moment now = clock_.Now();
  return store_.ReadReturning([&](store::Txn& txn) -> Result<std::optional<Millis>> {
    TX_ASSIGN_OR_RETURN(Worker worker, LoadWorker(txn, worker_id));
    store::PickCriteria criteria{worker.queues, worker.capabilities, worker.name, worker.slot, now};
    if (criteria.queues.empty()) criteria.queues = {"default"};
    if (gate != nullptr) {
      criteria.blocked_agents = gate->blocked_agents;
      criteria.blocked_agent_queues = gate->blocked_agent_queues;
    }
    TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.PickNextReady(criteria));
    if (task) return std::optional<Millis>(now);
    return txn.NextReadyAt(criteria);
  });
}

Result<Claim> ClaimService::Inspect(std::int64_t token) {
  return store_.ReadReturning([&](store::Txn& txn) -> Result<Claim> {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(token));
    if (!claim) return Error::NotFound("no claim has token " + std::to_string(token));
    return std::move(*claim);
  });
}

Result<std::vector<Session>> ClaimService::ListSessions() {
  std::vector<Session> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    out.clear();  // a read run again (a dropped connection) starts over
    TX_ASSIGN_OR_RETURN(std::vector<Claim> active, txn.ListActiveClaims());
    std::sort(active.begin(), active.end(),
              [](const Claim& a, const Claim& b) { return a.token < b.token; });
    for (auto& c : active) {
      Session s;
      TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.GetTask(c.task_id));
      if (task) s.task_title = task->title;
      TX_ASSIGN_OR_RETURN(s.worker, txn.GetWorker(c.worker_id));
      s.claim = std::move(c);
      out.push_back(std::move(s));
    }
    return Ok();
  }));
  return out;
}

Result<Task> ClaimService::EndSession(std::int64_t token, const std::string& note) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(token));
    if (!claim) return Error::NotFound("no session " + std::to_string(token));
    if (claim->status != ClaimStatus::kActive) {
      return Error::Conflict("session " + std::to_string(token) + " has ended (claim " +
                             std::string(ToString(claim->status)) + ")");
    }
    TX_RETURN_IF_ERROR(
        detail::EndClaim(txn, *claim, ClaimStatus::kReleased, EndReason::kCancelled, now));
    txn.WakeWatchersOnCommit();  // its worker stops the agent now, not at its next heartbeat
    TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, claim->task_id));
    TX_RETURN_IF_ERROR(Emit(txn, now, "session.ended", task.id, claim->worker_id,
                            {{"token", token}, {"note", note}}));
    if (task.status == TaskStatus::kRunning) {
      TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, EndReason::kCancelled, true, now));
    }
    return task;
  });
}

}  // namespace tx::service
