#include "service/worker_service.h"

#include "core/ids.h"
#include "service/service_test_util.h"

namespace tx::service {
namespace {

class WorkerServiceTest : public ServiceTest {};

TEST_F(WorkerServiceTest, EachRegistrationGetsAFreshIdAndCountsAsAHeartbeat) {
  Worker a = Register("w");
  Worker b = Register("w");
  EXPECT_NE(a.id, b.id);
  EXPECT_TRUE(LooksLikeWorkerId(a.id));
  EXPECT_EQ(a.status, WorkerStatus::kIdle);
  EXPECT_EQ(a.last_heartbeat_at, clock_.NowMs());
  EXPECT_EQ(a.heartbeat_interval_ms, 10'000);
}

TEST_F(WorkerServiceTest, ANewRegistrationInASlotRetiresThePreviousIncarnationAndRecoversItsTask) {
  Task t = AddTask("t");
  Worker old = Register("a", {}, "slot-1");
  ClaimResult r = ClaimNextFor(old);
  Worker fresh = Register("a", {}, "slot-1");
  EXPECT_EQ(GetWorker(old.id).status, WorkerStatus::kDead);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kReady);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kWorkerDied);
  EXPECT_ERROR_CODE(claims_.Renew(t.id, r.claim.token), ErrorCode::kConflict);
  EXPECT_EQ(ClaimNextFor(fresh).task.id, t.id);
}

TEST_F(WorkerServiceTest, ARegistrationKeepsTheBusyIntervalAndRefusesOneTooShort) {
  Worker w = RegisterFast();
  EXPECT_EQ(GetWorker(w.id).busy_heartbeat_interval_ms, 500);
  Registration r;
  r.busy_heartbeat_interval_ms = 10;
  auto refused = workers_.Register(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("busy heartbeat interval"), std::string::npos);
}

// Many beats in one transaction (tx serve's batch): each its own result, a refusal holding up no
// other, a worker beating twice seeing its first beat.
TEST_F(WorkerServiceTest, HeartbeatManyRecordsEachBeatAndRefusesOnlyTheBadOnes) {
  Worker a = Register("a");
  Worker b = Register("b");
  Worker gone = Register("gone");
  ASSERT_OK(workers_.Deregister(gone.id, "done"));
  clock_.Advance(3s);
  HeartbeatUpdate busy;
  busy.status = WorkerStatus::kBusy;
  busy.metadata = {{"rss_mb", 7}};
  HeartbeatUpdate more;
  more.metadata = {{"cpu_percent", 3}};
  std::vector<Result<Worker>> got = workers_.HeartbeatMany(
      {{a.id, busy}, {"worker-nosuchon", {}}, {gone.id, {}}, {b.id, {}}, {a.id, more}});
  ASSERT_EQ(got.size(), 5u);
  ASSERT_TRUE(got[0].ok()) << got[0].error().message();
  EXPECT_EQ(got[0]->status, WorkerStatus::kBusy);
  EXPECT_EQ(got[1].error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(got[2].error().code(), ErrorCode::kConflict);
  ASSERT_TRUE(got[3].ok());
  ASSERT_TRUE(got[4].ok());
  EXPECT_EQ(got[4]->status, WorkerStatus::kBusy) << "the second beat sees the first";
  EXPECT_EQ(got[4]->metadata["rss_mb"], 7);
  EXPECT_EQ(got[4]->metadata["cpu_percent"], 3);
  Worker stored = GetWorker(a.id);
  EXPECT_EQ(stored.last_heartbeat_at, clock_.NowMs());
  EXPECT_EQ(stored.status, WorkerStatus::kBusy);
  EXPECT_EQ(stored.metadata["cpu_percent"], 3);
  EXPECT_EQ(GetWorker(b.id).last_heartbeat_at, clock_.NowMs());
  EXPECT_EQ(GetWorker(gone.id).status, WorkerStatus::kStopped) << "a refused beat wrote nothing";
  auto types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "worker.status"), 1);
}

TEST_F(WorkerServiceTest, HeartbeatRefreshesFreshnessAndRecordsStatusChanges) {
  Worker w = Register();
  clock_.Advance(15s);
  HeartbeatUpdate u;
  u.status = WorkerStatus::kPaused;
  u.metadata = {{"rss_mb", 4}};
  ASSERT_OK_AND_ASSIGN(Worker after, workers_.Heartbeat(w.id, u));
  EXPECT_EQ(after.last_heartbeat_at, clock_.NowMs());
  EXPECT_EQ(after.status, WorkerStatus::kPaused);
  EXPECT_EQ(after.metadata["rss_mb"], 4);
  EXPECT_EQ(EventTypes().back(), "worker.status");
}

TEST_F(WorkerServiceTest, ADeadWorkerMustRegisterAgain) {
  Worker w = Register();
  ASSERT_OK(workers_.MarkDead(w.id, "gone"));
  EXPECT_ERROR_CODE(workers_.Heartbeat(w.id, {}), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(workers_.MarkDead(w.id, "again"), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(workers_.Heartbeat("worker-zzzzzzzz", {}), ErrorCode::kNotFound);
}

TEST_F(WorkerServiceTest, DeregisterReleasesItsClaimWithoutCountingTheAttempt) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Worker stopped, workers_.Deregister(w.id, "graceful-shutdown"));
  EXPECT_EQ(stopped.status, WorkerStatus::kStopped);
  EXPECT_EQ(stopped.reason, "graceful-shutdown");
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 0);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kShutdown);
}

TEST_F(WorkerServiceTest, MarkDeadRequeuesItsTaskCountingTheAttempt) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimNextFor(w);
  ASSERT_OK(workers_.MarkDead(w.id, "crashed"));
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 1);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kWorkerDied);
}

TEST_F(WorkerServiceTest, AWorkerDeathThatExhaustsMaxAttemptsFailsTheTask) {
  Task d;
  d.title = "one shot";
  d.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.Add(d));
  Worker w = Register();
  ClaimNextFor(w);
  ASSERT_OK(workers_.MarkDead(w.id, "crashed"));
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kFailed);
  EXPECT_NE(after.error.find("worker_died"), std::string::npos);
}

TEST_F(WorkerServiceTest, GetFindsAWorkerByIdNameOrSlot) {
  Worker w = Register("alice", {}, "slot-3");
  EXPECT_EQ(workers_.Get(w.id)->id, w.id);
  EXPECT_EQ(workers_.Get("alice")->id, w.id);
  EXPECT_EQ(workers_.Get("slot-3")->id, w.id);
  EXPECT_ERROR_CODE(workers_.Get("bob"), ErrorCode::kNotFound);
}

TEST_F(WorkerServiceTest, RegistrationRefusesBadNames) {
  Registration r;
  r.name = "has space";
  EXPECT_ERROR_CODE(workers_.Register(r), ErrorCode::kInvalidArgument);
  EXPECT_EQ(EventCount(), 0);
}

TEST_F(WorkerServiceTest, EnsureByNameReusesAFreshWorkerAndReplacesAStaleOne) {
  ASSERT_OK_AND_ASSIGN(Worker a, workers_.EnsureByName({"cli", 60'000, "h", 1}));
  ASSERT_OK_AND_ASSIGN(Worker b, workers_.EnsureByName({"cli", 60'000, "h", 1}));
  EXPECT_EQ(a.id, b.id);
  clock_.Advance(120s);
  ASSERT_OK_AND_ASSIGN(Worker c, workers_.EnsureByName({"cli", 60'000, "h", 1}));
  EXPECT_NE(a.id, c.id);
}

}  // namespace
}  // namespace tx::service
