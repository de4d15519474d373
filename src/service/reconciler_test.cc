#include "service/reconciler.h"

#include <stdlib.h>

#include <filesystem>
#include <future>
#include <thread>

#include "service/service_test_util.h"

namespace tx::service {
namespace {

class ReconcilerTest : public ServiceTest {
 protected:
  ReconcileReport Reconcile() {
    auto r = reconciler_.RunOnce(clock_.Now());
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

TEST_F(ReconcilerTest, ABusyWorkerIsDeadAfterTwoOfTheIntervalsItPromisesWhileBusy) {
  Worker w = RegisterFast();
  // Idle, it has two of its heartbeat intervals.
  clock_.Advance(1'999ms);
  EXPECT_EQ(Reconcile().dead_workers, 0);
  Task t = AddTask("t");
  ClaimNextFor(w);  // a claim is a beat
  const Millis claimed_at = clock_.NowMs();
  ASSERT_OK_AND_ASSIGN(std::optional<Millis> due, reconciler_.NextDueAt(clock_.Now()));
  EXPECT_EQ(due, claimed_at + 1'000);
  clock_.Advance(999ms);
  EXPECT_EQ(Reconcile().dead_workers, 0);
  clock_.Advance(1ms);
  EXPECT_EQ(Reconcile().dead_workers, 1);
  EXPECT_EQ(GetWorker(w.id).reason, "stale-heartbeat");
  EXPECT_EQ(Get(t.id).status, TaskStatus::kReady);
}

TEST_F(ReconcilerTest, ABusyWorkerThatBeatsAtItsBusyIntervalIsNeverDeclaredDead) {
  Worker w = RegisterFast();
  AddTask("t");
  ClaimNextFor(w);
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(999ms);  // silent for just under two busy intervals, then a beat
    EXPECT_EQ(Reconcile().dead_workers, 0) << i;
    ASSERT_TRUE(workers_.Heartbeat(w.id, {}).ok());
  }
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kBusy);
}

TEST_F(ReconcilerTest, AStepOfTheWallClockKillsNoHealthyWorkerAndExpiresNoLease) {
  Task t = AddTask("t");
  Worker w = Register();  // heartbeat interval 10 s, lease 60 s
  ClaimNextFor(w);
  clock_.StepWall(2min);  // NTP, `date -s`: the wall clock jumps, the steady one does not
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.dead_workers, 0);
  EXPECT_EQ(r.expired_leases, 0);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kBusy);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kRunning);
  // Real silence is still found, counted on the steady clock.
  clock_.Advance(20s);
  EXPECT_EQ(Reconcile().dead_workers, 1);
  EXPECT_EQ(GetWorker(w.id).reason, "stale-heartbeat");
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

// A task waiting in review past the review timeout (1 h by default) is marked once: an event and
// metadata.review_overdue_at. Entering review again clears the mark, and the clock starts anew.
TEST_F(ReconcilerTest, MarksAReviewOverdueOnceAndAgainAfterTheNextReview) {
  Task d;
  d.title = "to review";
  d.review = true;
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.Add(d));
  Worker w = Register();
  w.heartbeat_interval_ms = 24 * 3'600'000;  // alive throughout: only the review matters
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, c.claim.token, Outcome::kDone, ""));
  ASSERT_EQ(Get(t.id).status, TaskStatus::kReview);
  auto keep_alive = [&] { ASSERT_OK(workers_.Heartbeat(w.id, {})); };

  clock_.Advance(59min);
  keep_alive();
  EXPECT_EQ(Reconcile().overdue_reviews, 0);
  // A metadata edit meanwhile does not restart the clock: it counts from the attempt's end.
  TaskPatch patch;
  patch.metadata_merge = nlohmann::json{{"note", "looked at it"}};
  ASSERT_OK(tasks_.Update(t.id, patch));
  clock_.Advance(1min);
  keep_alive();
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.overdue_reviews, 1);
  EXPECT_EQ(r.Total(), 0);  // waiting on a person is not a repair
  Task marked = Get(t.id);
  EXPECT_EQ(marked.status, TaskStatus::kReview);
  EXPECT_EQ(marked.metadata.value("review_overdue_at", Millis{0}), clock_.NowMs());
  auto events = events_.Since(0).value();
  ASSERT_EQ(events.back().type, "task.review_overdue");
  EXPECT_EQ(events.back().task_id, t.id);
  EXPECT_EQ(events.back().data.value("waiting_ms", Millis{0}), 60 * 60'000);
  EXPECT_EQ(events.back().data.value("review_timeout_ms", Millis{0}), 60 * 60'000);

  clock_.Advance(2h);  // still waiting: no second event
  keep_alive();
  std::int64_t count = EventCount();
  EXPECT_EQ(Reconcile().overdue_reviews, 0);
  EXPECT_EQ(EventCount(), count);

  // Changes requested, a second attempt, back in review: the mark is gone until another hour.
  ASSERT_OK(tasks_.RequestChanges(t.id, "add a test"));
  c = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, c.claim.token, Outcome::kDone, ""));
  EXPECT_FALSE(Get(t.id).metadata.contains("review_overdue_at"));
  clock_.Advance(30min);
  keep_alive();
  EXPECT_EQ(Reconcile().overdue_reviews, 0);
  clock_.Advance(30min);
  keep_alive();
  EXPECT_EQ(Reconcile().overdue_reviews, 1);
  EXPECT_TRUE(Get(t.id).metadata.contains("review_overdue_at"));

  // An operator's forced review starts afresh too.
  ASSERT_OK(tasks_.RequestChanges(t.id, "once more"));
  ClaimNextFor(w);
  ASSERT_OK(tasks_.ForceOutcome(t.id, Outcome::kReview, ""));
  EXPECT_FALSE(Get(t.id).metadata.contains("review_overdue_at"));
}

TEST_F(ReconcilerTest, AReviewTimeoutOfZeroNeverMarks) {
  ServiceOptions o = TestOptions();
  o.review_timeout_ms = 0;
  Reconciler never(*store_, o);
  Task d;
  d.title = "to review";
  d.review = true;
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.Add(d));
  Worker w = Register();
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, c.claim.token, Outcome::kDone, ""));
  clock_.Advance(48h);
  ASSERT_OK_AND_ASSIGN(ReconcileReport r, never.RunOnce(clock_.Now()));
  EXPECT_EQ(r.overdue_reviews, 0);
  EXPECT_FALSE(Get(t.id).metadata.contains("review_overdue_at"));
}

// While another connection holds the store's write lock, every write fails (busy): as with a full
// disk, no worker can heartbeat then, so its silence must count only from the first pass after.
TEST(ReconcilerOutage, SilenceCountsFromThePassAfterTheOutageNotFromTheLastHeartbeat) {
  std::string dir = "/tmp/tx-reconciler-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::string path = dir + "/tx.db";
  store::OpenOptions o{path, true};
  o.busy_timeout_ms = 50;
  auto store = store::Open(o).value();
  auto holder = store::Open(o).value();
  FakeClock clock;
  WorkerService workers(*store, clock, TestOptions());
  TaskService tasks(*store, clock, TestOptions());
  ClaimService claims(*store, clock, TestOptions());
  Reconciler reconciler(*store, TestOptions());

  Task t;
  t.title = "t";
  ASSERT_OK(tasks.Add(t));
  Registration r;
  r.name = "w1";
  ASSERT_OK_AND_ASSIGN(Worker w, workers.Register(r));  // beats every 10 s; lease 60 s
  ASSERT_OK_AND_ASSIGN(std::optional<ClaimResult> c, claims.ClaimNext(w.id));
  ASSERT_TRUE(c.has_value());

  std::promise<void> locked, release;
  std::thread lock([&] {
    (void)holder->Write([&](store::Txn&) -> Status {
      locked.set_value();
      release.get_future().wait();
      return Ok();
    });
  });
  locked.get_future().wait();
  clock.Advance(90s);  // the outage: nobody could beat or renew
  EXPECT_FALSE(reconciler.RunOnce(clock.Now()).ok());
  release.set_value();
  lock.join();

  // The store answers again: the worker has not been silent for two intervals since. Nor has it
  // been since this pass, the first to find the store back (it may have come back just now).
  clock.Advance(1s);
  // Before that pass, the agents of no worker are killed as if it were about to be declared dead.
  EXPECT_FALSE(reconciler.WouldDeclareDead(workers.Get(w.id).value(), clock.Now()));
  ASSERT_OK_AND_ASSIGN(ReconcileReport first, reconciler.RunOnce(clock.Now()));
  EXPECT_EQ(first.dead_workers, 0);
  EXPECT_EQ(first.expired_leases, 0);
  EXPECT_FALSE(reconciler.WouldDeclareDead(workers.Get(w.id).value(), clock.Now()));
  ASSERT_OK_AND_ASSIGN(std::optional<Millis> due, reconciler.NextDueAt(clock.Now()));
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(*due, clock.NowMs() + 20'000);  // 20 s after this pass

  // A worker that beats again is fine; one that stays silent is dead 20 s after the outage.
  ASSERT_OK(workers.Heartbeat(w.id, {}));
  clock.Advance(19s);
  ASSERT_OK_AND_ASSIGN(ReconcileReport second, reconciler.RunOnce(clock.Now()));
  EXPECT_EQ(second.dead_workers, 0);
  EXPECT_EQ(second.expired_leases, 0);
  clock.Advance(20s);
  ASSERT_OK_AND_ASSIGN(ReconcileReport third, reconciler.RunOnce(clock.Now()));
  EXPECT_EQ(third.dead_workers, 1);
  store.reset();
  holder.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tx::service
