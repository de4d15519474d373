// The orchestrator's row (holding it, requests, publishing), what it changes elsewhere
// (registrations refused while stopping, backpressure on task add), the crash record of a
// supervised worker, and when the reconciler is next due.

#include "service/orchestrator_service.h"

#include "service/service_test_util.h"

namespace tx::service {
namespace {

class OrchestratorServiceTest : public ServiceTest {
 protected:
  OrchestratorServiceTest() : row_(*store_, clock_) {}

  OrchestratorState Acquire(std::int64_t pid, bool others_alive = true) {
    auto r = row_.Acquire(pid, "host-a", {{"max_queue_depth", 0}},
                          [&](const OrchestratorState&) { return others_alive; });
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : OrchestratorState{};
  }

  OrchestratorService row_;
};

TEST_F(OrchestratorServiceTest, AcquireTakesAFreeRowAsStarting) {
  OrchestratorState o = Acquire(100);
  EXPECT_EQ(o.status, "starting");
  EXPECT_EQ(o.pid, 100);
  EXPECT_EQ(o.hostname, "host-a");
  EXPECT_EQ(o.started_at, clock_.NowMs());
  ASSERT_OK(row_.SetStatus(100, "running"));
  EXPECT_EQ(row_.Get()->status, "running");
}

TEST_F(OrchestratorServiceTest, ASecondHolderIsRefusedWhileTheFirstLivesNamingItsPidAndHost) {
  Acquire(100);
  auto r = row_.Acquire(200, "host-b", {}, [](const OrchestratorState&) { return true; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kConflict);
  EXPECT_NE(r.error().message().find("pid 100 on host-a"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(row_.Get()->pid, 100);
}

TEST_F(OrchestratorServiceTest, ADeadHoldersRowIsReclaimedWithAnEvent) {
  Acquire(100);
  OrchestratorState o = Acquire(200, /*others_alive=*/false);
  EXPECT_EQ(o.pid, 200);
  auto types = EventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "orchestrator.stale_reclaimed"), types.end());
  // The old holder can no longer act on the row.
  EXPECT_ERROR_CODE(row_.SetStatus(100, "stopping"), ErrorCode::kConflict);
}

TEST_F(OrchestratorServiceTest, RequestsNeedARunningOrchestratorAndAreTakenOnce) {
  EXPECT_ERROR_CODE(row_.RequestScale(3, "s1"), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(row_.RequestStop(false), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(row_.RequestScale(-1, "s1"), ErrorCode::kInvalidArgument);
  Acquire(100);
  ASSERT_OK(row_.SetStatus(100, "running"));
  ASSERT_OK(row_.RequestScale(3, "s1"));
  EXPECT_TRUE(*row_.HasRequest());
  ASSERT_OK_AND_ASSIGN(nlohmann::json taken, row_.Publish(100, {{"desired", 2}}));
  EXPECT_EQ(taken["workers"], 3);
  EXPECT_EQ(taken["scale_id"], "s1");
  EXPECT_FALSE(*row_.HasRequest());
  ASSERT_OK_AND_ASSIGN(taken, row_.Publish(100, {{"desired", 3}}));
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(row_.Get()->pool["desired"], 3);
  ASSERT_OK(row_.RequestStop(true));
  ASSERT_OK_AND_ASSIGN(taken, row_.Publish(100, {}));
  EXPECT_EQ(taken["stop"], "force");
}

TEST_F(OrchestratorServiceTest, PublishRefreshesSeenAtAndFailsForANonHolder) {
  Acquire(100);
  clock_.Advance(5s);
  ASSERT_OK(row_.Publish(100, {}));
  EXPECT_EQ(row_.Get()->seen_at, clock_.NowMs());
  EXPECT_ERROR_CODE(row_.Publish(999, {}), ErrorCode::kConflict);
}

TEST_F(OrchestratorServiceTest, RegistrationsAreRefusedWhileTheOrchestratorStops) {
  Acquire(100);
  ASSERT_OK(row_.SetStatus(100, "stopping"));
  Registration r;
  r.name = "late";
  EXPECT_ERROR_CODE(workers_.Register(r), ErrorCode::kUnavailable);
  // An orchestrator that died while stopping stops refreshing its row: registrations resume.
  clock_.Advance(31s);
  EXPECT_TRUE(workers_.Register(r).ok());
}

TEST_F(OrchestratorServiceTest, TaskAddPastMaxQueueDepthIsRefusedWithBackpressure) {
  ASSERT_OK(row_.Acquire(100, "host-a", {{"max_queue_depth", 2}},
                         [](const OrchestratorState&) { return false; }));
  AddTask("a");
  AddTask("b");
  Task third;
  third.title = "c";
  auto r = tasks_.Add(third);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBackpressure);
  EXPECT_NE(r.error().message().find("queue full: 2 tasks ready of 2"), std::string::npos)
      << r.error().message();
  EXPECT_ERROR_CODE(tasks_.AddMany({third}), ErrorCode::kBackpressure);
  // A claimed task leaves the ready queue and makes room.
  Worker w = Register();
  ClaimNextFor(w);
  EXPECT_TRUE(tasks_.Add(third).ok());
  // Once the orchestrator has stopped, its limit no longer applies.
  ASSERT_OK(row_.SetStatus(100, "stopped"));
  EXPECT_TRUE(tasks_.Add(third).ok());
}

// An orchestrator killed with kill -9 never marks its row stopped: its limit must still end.
TEST_F(OrchestratorServiceTest, BackpressureEndsWhenTheRowsHolderIsGone) {
  ASSERT_OK(row_.Acquire(100, "host-a", {{"max_queue_depth", 1}},
                         [](const OrchestratorState&) { return false; }));
  ASSERT_OK(row_.SetStatus(100, "running"));
  AddTask("a");
  Task b;
  b.title = "b";
  EXPECT_ERROR_CODE(tasks_.Add(b), ErrorCode::kBackpressure);
  // By default the row's freshness decides: refreshed within 30 s, the holder is presumed alive.
  clock_.Advance(29s);
  EXPECT_ERROR_CODE(tasks_.Add(b), ErrorCode::kBackpressure);
  clock_.Advance(2s);
  EXPECT_TRUE(tasks_.Add(b).ok()) << "a row unrefreshed for 31 s names a dead orchestrator";

  // A caller that can see the process (the CLI on the holder's host) decides at once.
  ASSERT_OK(row_.SetStatus(100, "running"));  // refreshed
  EXPECT_ERROR_CODE(tasks_.Add(b), ErrorCode::kBackpressure);
  ServiceOptions options = TestOptions();
  std::vector<std::int64_t> asked;
  options.orchestrator_alive = [&](const OrchestratorState& o, Millis) {
    asked.push_back(o.pid);
    return false;
  };
  TaskService seeing(*store_, clock_, options);
  EXPECT_TRUE(seeing.Add(b).ok());
  EXPECT_EQ(asked, std::vector<std::int64_t>{100});
}

TEST_F(OrchestratorServiceTest, ACrashedWorkerIsDeadItsTaskRequeuedAndTheExitRecorded) {
  Task t = AddTask("t");
  Worker w = Register("w1", {}, "slot-1");
  ClaimNextFor(w);
  ASSERT_OK(workers_.MarkCrashed(
      w.id, {{"exit_code", 137}, {"signal", 9}, {"class", "killed"}, {"description", "killed"}}));
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kDead);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kReady);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kWorkerDied);
  auto events = events_.Since(0).value();
  auto crashed = std::find_if(events.begin(), events.end(),
                              [](const Event& e) { return e.type == "worker.crashed"; });
  ASSERT_NE(crashed, events.end());
  EXPECT_EQ(crashed->task_id, t.id);
  EXPECT_EQ(crashed->data["exit_code"], 137);
  EXPECT_EQ(crashed->data["class"], "killed");
  EXPECT_EQ(crashed->data["slot"], "slot-1");
  // It is dead now: a second report changes nothing.
  EXPECT_ERROR_CODE(workers_.MarkCrashed(w.id, {}), ErrorCode::kConflict);
}

TEST_F(OrchestratorServiceTest, TheReconcilerIsNextDueWhenAWorkerGoesStaleOrALeaseExpires) {
  EXPECT_FALSE(reconciler_.NextDueAt()->has_value());
  Millis t0 = clock_.NowMs();
  Worker w = Register();  // heartbeat interval 10 s: stale at t0 + 20 s
  EXPECT_EQ(**reconciler_.NextDueAt(), t0 + 20'000);
  AddTask("t");
  auto claimed = claims_.ClaimNext(w.id, 5'000);  // a 5 s lease expires first
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  EXPECT_EQ(**reconciler_.NextDueAt(), t0 + 5'000);
}

}  // namespace
}  // namespace tx::service
