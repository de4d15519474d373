#include "service/reconciler.h"

#include <algorithm>
#include <limits>

#include "core/duration.h"
#include "core/json.h"
#include "core/question.h"
#include "service/agent_service.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;

Reconciler::Reconciler(store::Store& store, ServiceOptions options)
    : store_(store), options_(WithDefaults(std::move(options))) {}

// Each pass counts into its own field of the report, from zero at the top of its transaction:
// a transaction that the store runs again (a deadlock, a dropped connection) must not count twice.
Millis Reconciler::Observable(const Moment& now) const {
  if (failed_last_) return 0;
  if (!last_failure_) return std::numeric_limits<Millis>::max();
  if (last_failure_->steady && now.steady) return *now.steady - *last_failure_->steady;
  return now.wall - last_failure_->wall;
}

bool Reconciler::WouldDeclareDead(const Worker& w, const Moment& now) const {
  return IsLive(w.status) && IsStale(w, now) && Observable(now) >= StaleAfterMs(w);
}

Status Reconciler::DeclareDeadWorkers(const Moment& now, ReconcileReport& report) {
  return store_.Write([&](store::Txn& txn) -> Status {
    report.dead_workers = 0;
    TX_ASSIGN_OR_RETURN(std::vector<Worker> workers, txn.ListWorkers(LiveWorkerStatuses()));
    for (auto& w : workers) {
      if (!WouldDeclareDead(w, now)) continue;
      TX_RETURN_IF_ERROR(detail::MarkDead(
          txn, w, std::string(kStaleHeartbeat), now,
          {{"silent_ms",
            w.last_heartbeat_at > 0 ? nlohmann::json(SilentFor(w, now)) : nlohmann::json()}}));
      ++report.dead_workers;
    }
    return Ok();
  });
}

Status Reconciler::ReleaseExpiredLeases(const Moment& now, ReconcileReport& report) {
  Millis observable = Observable(now);
  return store_.Write([&](store::Txn& txn) -> Status {
    report.expired_leases = 0;
    TX_ASSIGN_OR_RETURN(std::vector<Claim> expired, txn.ListActiveClaimsExpiredAt(now));
    for (auto& claim : expired) {
      if (observable < claim.lease_ms) continue;
      TX_RETURN_IF_ERROR(
          detail::EndClaim(txn, claim, ClaimStatus::kExpired, EndReason::kLeaseLost, now));
      TX_RETURN_IF_ERROR(Emit(txn, now, "lease.expired", claim.task_id, claim.worker_id,
                              {{"token", claim.token}}));
      TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, claim.task_id));
      if (task.status == TaskStatus::kRunning) {
        TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, EndReason::kLeaseLost, true, now));
      }
      ++report.expired_leases;
    }
    return Ok();
  });
}

Status Reconciler::RequeueOrphanedTasks(Millis now, ReconcileReport& report) {
  // Finding them scans the tasks, so it runs as a read, which never holds up claimers; each
  // candidate is checked again inside the write before it is touched.
  std::vector<std::string> candidates;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(candidates, txn.ListRunningTasksWithoutActiveClaim());
    return Ok();
  }));
  if (candidates.empty()) return Ok();
  return store_.Write([&](store::Txn& txn) -> Status {
    report.orphaned_tasks = 0;
    for (const auto& id : candidates) {
      TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, id));
      if (task.status != TaskStatus::kRunning) continue;
      TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetActiveClaimForTask(id));
      if (claim) continue;
      // Its claim vanished without an outcome: the attempt is given back, not held against it.
      TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, EndReason::kOrphaned, false, now));
      ++report.orphaned_tasks;
    }
    return Ok();
  });
}

Status Reconciler::FixInconsistencies(Millis now, ReconcileReport& report) {
  return store_.Write([&](store::Txn& txn) -> Status {
    report.inconsistencies_fixed = 0;
    TX_ASSIGN_OR_RETURN(std::vector<Claim> active, txn.ListActiveClaims());
    for (auto& claim : active) {
      TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(claim.worker_id));
      TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, claim.task_id));
      if (task.status != TaskStatus::kRunning) {
        TX_RETURN_IF_ERROR(
            detail::EndClaim(txn, claim, ClaimStatus::kReleased, EndReason::kOrphaned, now));
        TX_RETURN_IF_ERROR(Emit(txn, now, "claim.orphaned", task.id, claim.worker_id,
                                {{"token", claim.token}, {"task_status", ToString(task.status)}}));
        ++report.inconsistencies_fixed;
      } else if (!w || !IsLive(w->status)) {
        TX_RETURN_IF_ERROR(
            detail::EndClaim(txn, claim, ClaimStatus::kReleased, EndReason::kWorkerDied, now));
        TX_RETURN_IF_ERROR(detail::RequeueTask(txn, task, EndReason::kWorkerDied, true, now));
        ++report.inconsistencies_fixed;
      }
    }
    TX_ASSIGN_OR_RETURN(std::vector<Worker> busy, txn.ListWorkers({WorkerStatus::kBusy}));
    TX_ASSIGN_OR_RETURN(active, txn.ListActiveClaims());
    for (auto& w : busy) {
      bool holds = false;
      for (const auto& c : active) holds = holds || c.worker_id == w.id;
      if (holds) continue;
      w.status = WorkerStatus::kIdle;
      w.current_task_id.clear();
      TX_RETURN_IF_ERROR(txn.UpdateWorker(w));
      TX_RETURN_IF_ERROR(Emit(txn, now, "worker.status", "", w.id,
                              {{"from", "busy"}, {"to", "idle"}, {"reason", "no active claim"}}));
      ++report.inconsistencies_fixed;
    }
    return Ok();
  });
}

namespace {

// When the task last entered review: the end of its last attempt (a forced review ends it too).
Millis EnteredReviewAt(const Task& task, const std::vector<Claim>& attempts) {
  Millis at = 0;
  for (const auto& c : attempts) at = std::max(at, c.ended_at);
  return at > 0 ? at : task.updated_at;
}

}  // namespace

Status Reconciler::MarkOverdueReviews(Millis now, ReconcileReport& report) {
  report.overdue_reviews = 0;
  Millis timeout = options_.review_timeout_ms;
  if (timeout <= 0) return Ok();
  // Found by a read, which never holds up claimers; each is checked again inside the write.
  std::vector<std::string> candidates;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    store::TaskFilter f;
    f.status = TaskStatus::kReview;
    TX_ASSIGN_OR_RETURN(std::vector<Task> waiting, txn.ListTasks(f));
    for (const auto& t : waiting) {
      if (t.metadata.contains("review_overdue_at")) continue;
      TX_ASSIGN_OR_RETURN(std::vector<Claim> attempts, txn.ListClaimsForTask(t.id));
      if (now - EnteredReviewAt(t, attempts) >= timeout) candidates.push_back(t.id);
    }
    return Ok();
  }));
  if (candidates.empty()) return Ok();
  return store_.Write([&](store::Txn& txn) -> Status {
    report.overdue_reviews = 0;
    for (const auto& id : candidates) {
      TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, id));
      if (task.status != TaskStatus::kReview || task.metadata.contains("review_overdue_at")) {
        continue;
      }
      TX_ASSIGN_OR_RETURN(std::vector<Claim> attempts, txn.ListClaimsForTask(id));
      Millis entered = EnteredReviewAt(task, attempts);
      if (now - entered < timeout) continue;
      task.metadata["review_overdue_at"] = now;
      task.updated_at = now;
      TX_RETURN_IF_ERROR(txn.UpdateTask(task));
      TX_RETURN_IF_ERROR(Emit(txn, now, "task.review_overdue", task.id, "",
                              {{"waiting_ms", now - entered}, {"review_timeout_ms", timeout}}));
      ++report.overdue_reviews;
    }
    return Ok();
  });
}

namespace {

// When the task's open question was asked (the task's last change, for a question kept without
// its time).
Millis AskedAt(const Task& task) {
  std::optional<Question> open = OpenQuestion(task);
  return open && open->asked_at > 0 ? open->asked_at : task.updated_at;
}

}  // namespace

Status Reconciler::FailUnansweredQuestions(Millis now, ReconcileReport& report) {
  report.expired_questions = 0;
  Millis timeout = options_.question_timeout_ms;
  if (timeout <= 0) return Ok();
  // Found by a read, which never holds up claimers; each is checked again inside the write.
  std::vector<std::string> candidates;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    candidates.clear();
    store::TaskFilter f;
    f.status = TaskStatus::kWaiting;
    TX_ASSIGN_OR_RETURN(std::vector<Task> waiting, txn.ListTasks(f));
    for (const auto& t : waiting) {
      if (now - AskedAt(t) >= timeout) candidates.push_back(t.id);
    }
    return Ok();
  }));
  if (candidates.empty()) return Ok();
  return store_.Write([&](store::Txn& txn) -> Status {
    report.expired_questions = 0;
    for (const auto& id : candidates) {
      TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, id));
      if (task.status != TaskStatus::kWaiting) continue;
      Millis asked = AskedAt(task);
      if (now - asked < timeout) continue;
      TX_RETURN_IF_ERROR(
          CheckTransition(task.id, task.status, TaskEvent::kQuestionExpired, TaskStatus::kFailed));
      std::optional<Question> open = OpenQuestion(task);
      std::string question = open ? open->question : "";
      task.status = TaskStatus::kFailed;
      Millis waited = now - asked >= 1000 ? (now - asked) / 1000 * 1000 : now - asked;
      task.error = "question unanswered for " + FormatDuration(waited) + " (question_timeout " +
                   FormatDuration(timeout) + "): " + question;
      task.finished_at = now;
      task.updated_at = now;
      TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
      TX_RETURN_IF_ERROR(Emit(txn, now, "task.failed", task.id, "",
                              {{"reason", "question_timeout"},
                               {"question", question},
                               {"waiting_ms", now - asked},
                               {"question_timeout_ms", timeout},
                               {"attempt", task.attempt},
                               {"error", task.error}}));
      ++report.expired_questions;
    }
    return Ok();
  });
}

Result<std::optional<Millis>> Reconciler::NextDueAt(const Moment& now) {
  std::optional<Millis> due;
  Millis observable = Observable(now);
  // `left`: how long until it is due by its own clock; `needs`: how much observable silence.
  auto earliest = [&](Millis left, Millis needs) {
    Millis t = now.wall + std::max(left, needs - std::min(observable, needs));
    due = due ? std::min(*due, t) : t;
  };
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::vector<Worker> workers, txn.ListWorkers(LiveWorkerStatuses()));
    for (const auto& w : workers) {
      Millis needs = StaleAfterMs(w);
      if (IsLive(w.status)) earliest(needs - SilentFor(w, now), needs);
    }
    TX_ASSIGN_OR_RETURN(std::vector<Claim> active, txn.ListActiveClaims());
    for (const auto& c : active) earliest(LeaseLeft(c, now), c.lease_ms);
    return Ok();
  }));
  return due;
}

Result<ReconcileReport> Reconciler::RunOnce(const Moment& now) {
  // The pass after a failed one cannot tell when the store came back (it may be this instant):
  // silence counts from it.
  if (failed_last_) {
    last_failure_ = now;
    failed_last_ = false;
  }
  Result<ReconcileReport> report = RunPasses(now);
  if (!report.ok()) {
    last_failure_ = now;
    failed_last_ = true;
  }
  return report;
}

Result<ReconcileReport> Reconciler::RunPasses(const Moment& now) {
  ReconcileReport report;
  report.at = now;
  TX_RETURN_IF_ERROR(DeclareDeadWorkers(now, report));
  TX_RETURN_IF_ERROR(ReleaseExpiredLeases(now, report));
  TX_RETURN_IF_ERROR(RequeueOrphanedTasks(now, report));
  TX_RETURN_IF_ERROR(FixInconsistencies(now, report));
  TX_RETURN_IF_ERROR(MarkOverdueReviews(now, report));
  TX_RETURN_IF_ERROR(FailUnansweredQuestions(now, report));
  TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> resumed, ResumeExpiredLimits(store_, now));
  report.agents_resumed = static_cast<int>(resumed.size());
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(ReconcilerRecord r, txn.GetReconcilerRecord());
    r.last_reconcile_at = now;
    // The passes are counted here, not by an event each (one a minute would flood the log):
    // GET /metrics exposes the count.
    std::int64_t runs = 1;
    if (r.last_report.is_object()) runs += r.last_report.value("runs", std::int64_t{0});
    r.last_report = ToJson(report);
    r.last_report["runs"] = runs;
    TX_RETURN_IF_ERROR(txn.PutReconcilerRecord(r));
    if (report.Total() > 0) return Emit(txn, now, "reconcile.repaired", "", "", ToJson(report));
    return Ok();
  }));
  return report;
}

}  // namespace tx::service
