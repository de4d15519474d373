#include "service/reconciler.h"

#include "service/service_test_util.h"

namespace tx::service {
namespace {

class ReconcilerTest : public ServiceTest {
 protected:
  ReconcileReport Reconcile() {
    auto r = reconciler_.RunOnce(clock_.NowMs());
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : ReconcileReport{};
  }

  // Writes a state that atomic transitions never produce, as an older version, a manual edit or
  // a bug might leave it.
  void Corrupt(const std::function<Status(store::Txn&)>& fn) { ASSERT_OK(store_->Write(fn)); }
};

TEST_F(ReconcilerTest, FindsNothingInAHealthyStore) {
  AddTask("t");
  Worker w = Register();
  ClaimNextFor(w);
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.Total(), 0);
}

TEST_F(ReconcilerTest, DeclaresAWorkerDeadAfterTwoMissedHeartbeatsAndRequeuesItsTask) {
  Task t = AddTask("t");
  Worker w = Register();  // heartbeat interval 10 s
  ClaimResult claim = ClaimNextFor(w);
  clock_.Advance(19'999ms);
  EXPECT_EQ(Reconcile().dead_workers, 0);
  clock_.Advance(1ms);
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.dead_workers, 1);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kDead);
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 1);  // a death counts against max_attempts
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kWorkerDied);
  EXPECT_ERROR_CODE(claims_.Report(t.id, claim.claim.token, Outcome::kDone, ""),
                    ErrorCode::kConflict);
}

TEST_F(ReconcilerTest, ReleasesAnExpiredLeaseAndTheOldHolderIsRefused) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult claim = ClaimNextFor(w);
  // Keep the worker alive so only the lease matters.
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(10s);
    ASSERT_OK(workers_.Heartbeat(w.id, {}));
  }
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.expired_leases, 1);
  EXPECT_EQ(r.dead_workers, 0);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kReady);
  auto attempts = Attempts(t.id);
  EXPECT_EQ(attempts[0].status, ClaimStatus::kExpired);
  EXPECT_EQ(attempts[0].end_reason, EndReason::kLeaseLost);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.Report(t.id, claim.claim.token, Outcome::kDone, "late"),
                    ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
}

TEST_F(ReconcilerTest, AnExpiryThatExhaustsMaxAttemptsFailsTheTask) {
  Task d;
  d.title = "t";
  d.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.Add(d));
  Worker w = Register();
  w.heartbeat_interval_ms = 3'600'000;
  ClaimNextFor(w);
  clock_.Advance(61s);
  ASSERT_OK(workers_.Heartbeat(w.id, {}));
  Reconcile();
  EXPECT_EQ(Get(t.id).status, TaskStatus::kFailed);
}

TEST_F(ReconcilerTest, RequeuesARunningTaskThatHasNoActiveClaim) {
  Task t = AddTask("t");
  Corrupt([&](store::Txn& txn) -> Status {
    Task task = txn.GetTask(t.id).value().value();
    task.status = TaskStatus::kRunning;
    task.attempt = 1;
    return txn.UpdateTask(task);
  });
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.orphaned_tasks, 1);
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 0);
}

TEST_F(ReconcilerTest, IdlesABusyWorkerThatHoldsNoClaim) {
  Worker w = Register();
  Corrupt([&](store::Txn& txn) -> Status {
    Worker bad = txn.GetWorker(w.id).value().value();
    bad.status = WorkerStatus::kBusy;
    bad.current_task_id = "task-zzzzzzzz";
    return txn.UpdateWorker(bad);
  });
  EXPECT_EQ(Reconcile().inconsistencies_fixed, 1);
  Worker after = GetWorker(w.id);
  EXPECT_EQ(after.status, WorkerStatus::kIdle);
  EXPECT_TRUE(after.current_task_id.empty());
}

TEST_F(ReconcilerTest, RecoversATaskHeldByADeadWorker) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimNextFor(w);
  Corrupt([&](store::Txn& txn) -> Status {
    Worker dead = txn.GetWorker(w.id).value().value();
    dead.status = WorkerStatus::kDead;  // marked dead without its claims being recovered
    return txn.UpdateWorker(dead);
  });
  EXPECT_EQ(Reconcile().inconsistencies_fixed, 1);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kReady);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kWorkerDied);
}

TEST_F(ReconcilerTest, EndsAnActiveClaimOnATaskThatAlreadyFinished) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult claim = ClaimNextFor(w);
  Corrupt([&](store::Txn& txn) -> Status {
    Task task = txn.GetTask(t.id).value().value();
    task.status = TaskStatus::kDone;
    return txn.UpdateTask(task);
  });
  EXPECT_EQ(Reconcile().inconsistencies_fixed, 1);  // ending the claim also idles its worker
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kOrphaned);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kDone);
  EXPECT_ERROR_CODE(claims_.Renew(t.id, claim.claim.token), ErrorCode::kConflict);
}

TEST_F(ReconcilerTest, ASecondRunFindsNothingAndTheRunIsRecorded) {
  AddTask("t");
  Worker w = Register();
  ClaimNextFor(w);
  clock_.Advance(5min);
  EXPECT_GT(Reconcile().Total(), 0);
  EXPECT_EQ(Reconcile().Total(), 0);
  Millis now = clock_.NowMs();
  ASSERT_OK(store_->Read([&](store::Txn& txn) -> Status {
    auto o = txn.GetReconcilerRecord();
    EXPECT_TRUE(o.ok() && o->last_reconcile_at == now);
    EXPECT_TRUE(o.ok() && o->last_report.contains("dead_workers"));
    EXPECT_TRUE(o.ok() && o->last_report.value("runs", 0) == 2);  // both passes counted
    return Ok();
  }));
}

}  // namespace
}  // namespace tx::service
