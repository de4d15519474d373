// The orchestrators' rows (holding one, requests, publishing, several on a shared store), the
// reconciler's lead, which orchestrator a command means, what a row changes elsewhere
// (registrations refused while stopping, slots scoped to a pool, backpressure on task add), the
// crash record of a supervised worker, and when the reconciler is next due.

#include "service/orchestrator_service.h"

#include "service/service_test_util.h"

namespace tx::service {
namespace {

constexpr char kA[] = "host-a:/srv/.tx";
constexpr char kB[] = "host-b:/srv/.tx";

class OrchestratorServiceTest : public ServiceTest {
 protected:
  OrchestratorServiceTest() : row_(*store_, clock_) {}

  OrchestratorState Acquire(std::int64_t pid, bool others_alive = true, const std::string& id = kA,
                            bool exclusive = true) {
    auto r = row_.Acquire(
        id, "/srv/.tx", pid, id.substr(0, id.find(':')), {{"max_queue_depth", 0}},
        [&](const OrchestratorState&) { return others_alive; }, exclusive);
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
  EXPECT_EQ(o.id, kA);
  EXPECT_EQ(o.dir, "/srv/.tx");
  ASSERT_OK(row_.SetStatus(kA, 100, "running"));
  EXPECT_EQ(row_.Get(kA)->status, "running");
  EXPECT_EQ(row_.Get(kB)->status, "stopped") << "a pool never started reads as stopped";
}

// SQLite: one orchestrator per store, whatever its pool.
TEST_F(OrchestratorServiceTest, ASecondHolderIsRefusedWhileTheFirstLivesNamingItsPidAndHost) {
  Acquire(100);
  for (const char* id : {kA, kB}) {
    auto r = row_.Acquire(
        id, "/srv/.tx", 200, "host-b", {}, [](const OrchestratorState&) { return true; },
        /*exclusive=*/true);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kConflict);
    EXPECT_NE(r.error().message().find("pid 100 on host-a"), std::string::npos)
        << r.error().message();
  }
  EXPECT_EQ(row_.Get(kA)->pid, 100);
}

// PostgreSQL: any number of pools, one process per pool.
TEST_F(OrchestratorServiceTest, OnASharedStoreEachPoolHasItsOwnRowAndHolder) {
  Acquire(100, true, kA, /*exclusive=*/false);
  Acquire(200, true, kB, /*exclusive=*/false);
  auto again = row_.Acquire(
      kB, "/srv/.tx", 300, "host-b", {}, [](const OrchestratorState&) { return true; }, false);
  EXPECT_ERROR_CODE(again, ErrorCode::kConflict);
  ASSERT_OK_AND_ASSIGN(std::vector<OrchestratorState> all, row_.List());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].pid, 100);
  EXPECT_EQ(all[1].pid, 200);
  // Requests go to the row they name.
  ASSERT_OK(row_.SetStatus(kB, 200, "running"));
  ASSERT_OK(row_.RequestScale(kB, 4, "s1"));
  EXPECT_FALSE(*row_.HasRequest(kA));
  EXPECT_TRUE(*row_.HasRequest(kB));
}

TEST_F(OrchestratorServiceTest, TheLeadIsRecordedOnceWithAnEventAndClearedOnlyByItsHolder) {
  ASSERT_OK(row_.RecordLeader(kA));
  clock_.Advance(1s);
  ASSERT_OK(row_.RecordLeader(kA));  // again: nothing changes
  ASSERT_OK_AND_ASSIGN(ReconcilerRecord r, row_.Reconciler());
  EXPECT_EQ(r.leader, kA);
  EXPECT_EQ(r.leader_since, clock_.NowMs() - 1000);
  ASSERT_OK(row_.RecordLeader(kB));
  ASSERT_OK(row_.ClearLeader(kA));  // no longer the leader: leaves the record alone
  EXPECT_EQ(row_.Reconciler()->leader, kB);
  ASSERT_OK(row_.ClearLeader(kB));
  EXPECT_EQ(row_.Reconciler()->leader, "");
  auto events = events_.Since(0).value();
  int leads = 0;
  for (const auto& e : events) {
    if (e.type != "orchestrator.leader") continue;
    ++leads;
    if (leads == 2) {
      EXPECT_EQ(e.data["id"], kB);
      EXPECT_EQ(e.data["previous"], kA);
    }
  }
  EXPECT_EQ(leads, 2);
}

TEST(ChooseOrchestrator, NamedThenLocalThenTheOnlyOneRunning) {
  auto row = [](const char* id, const char* status, Millis seen) {
    OrchestratorState o;
    o.id = id;
    o.status = status;
    o.seen_at = seen;
    return o;
  };
  auto alive = [](const OrchestratorState&) { return true; };
  std::vector<OrchestratorState> rows = {row("a", "running", 5), row("b", "running", 6),
                                         row("c", "stopped", 9)};
  EXPECT_EQ(*ChooseOrchestrator(rows, "c", "a", "", alive, false), "c");
  EXPECT_EQ(ChooseOrchestrator(rows, "zz", "a", "", alive, false).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(*ChooseOrchestrator(rows, "", "b", "", alive, false), "b");
  auto several = ChooseOrchestrator(rows, "", "c", "", alive, false);
  ASSERT_FALSE(several.ok());
  EXPECT_EQ(several.error().code(), ErrorCode::kConflict);
  EXPECT_NE(several.error().message().find("a, b"), std::string::npos);
  EXPECT_NE(several.error().message().find("--id"), std::string::npos);
  EXPECT_EQ(*ChooseOrchestrator(rows, "", "c", "b", alive, true), "b") << "status: the leader";
  rows[1].status = "stopped";
  EXPECT_EQ(*ChooseOrchestrator(rows, "", "c", "", alive, false), "a");
  rows[0].status = "stopped";
  EXPECT_EQ(*ChooseOrchestrator(rows, "", "b", "", alive, false), "b") << "none runs: ours";
  EXPECT_EQ(*ChooseOrchestrator(rows, "", "x", "", alive, false), "c") << "else the last seen";
  EXPECT_EQ(*ChooseOrchestrator({}, "", "x", "", alive, false), "");
}

TEST_F(OrchestratorServiceTest, ADeadHoldersRowIsReclaimedWithAnEvent) {
  Acquire(100);
  OrchestratorState o = Acquire(200, /*others_alive=*/false);
  EXPECT_EQ(o.pid, 200);
  auto types = EventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "orchestrator.stale_reclaimed"), types.end());
  // The old holder can no longer act on the row.
  EXPECT_ERROR_CODE(row_.SetStatus(kA, 100, "stopping"), ErrorCode::kConflict);
}

TEST_F(OrchestratorServiceTest, RequestsNeedARunningOrchestratorAndAreTakenOnce) {
  EXPECT_ERROR_CODE(row_.RequestScale(kA, 3, "s1"), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(row_.RequestStop(kA, false), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(row_.RequestScale(kA, -1, "s1"), ErrorCode::kInvalidArgument);
  Acquire(100);
  ASSERT_OK(row_.SetStatus(kA, 100, "running"));
  ASSERT_OK(row_.RequestScale(kA, 3, "s1"));
  EXPECT_TRUE(*row_.HasRequest(kA));
  ASSERT_OK_AND_ASSIGN(nlohmann::json taken, row_.Publish(kA, 100, {{"desired", 2}}));
  EXPECT_EQ(taken["workers"], 3);
  EXPECT_EQ(taken["scale_id"], "s1");
  EXPECT_FALSE(*row_.HasRequest(kA));
  ASSERT_OK_AND_ASSIGN(taken, row_.Publish(kA, 100, {{"desired", 3}}));
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(row_.Get(kA)->pool["desired"], 3);
  ASSERT_OK(row_.RequestStop(kA, true));
  ASSERT_OK_AND_ASSIGN(taken, row_.Publish(kA, 100, {}));
  EXPECT_EQ(taken["stop"], "force");
}

TEST_F(OrchestratorServiceTest, PublishRefreshesSeenAtAndFailsForANonHolder) {
  Acquire(100);
  clock_.Advance(5s);
  ASSERT_OK(row_.Publish(kA, 100, {}));
  EXPECT_EQ(row_.Get(kA)->seen_at, clock_.NowMs());
  EXPECT_ERROR_CODE(row_.Publish(kA, 999, {}), ErrorCode::kConflict);
}

TEST_F(OrchestratorServiceTest, RegistrationsAreRefusedWhileTheOrchestratorStops) {
  Acquire(100);
  ASSERT_OK(row_.SetStatus(kA, 100, "stopping"));
  Registration r;
  r.name = "late";
  r.pool = kA;
  EXPECT_ERROR_CODE(workers_.Register(r), ErrorCode::kUnavailable);
  Registration remote;  // of no pool: refused while every running orchestrator stops
  remote.name = "remote";
  EXPECT_ERROR_CODE(workers_.Register(remote), ErrorCode::kUnavailable);
  // An orchestrator that died while stopping stops refreshing its row: registrations resume.
  clock_.Advance(31s);
  EXPECT_TRUE(workers_.Register(r).ok());
}

// On a shared store, another pool stopping refuses only its own workers.
TEST_F(OrchestratorServiceTest, AnotherPoolStoppingRefusesOnlyItsOwnWorkers) {
  Acquire(100, true, kA, false);
  Acquire(200, true, kB, false);
  ASSERT_OK(row_.SetStatus(kA, 100, "running"));
  ASSERT_OK(row_.SetStatus(kB, 200, "stopping"));
  Registration r;
  r.name = "w";
  r.pool = kA;
  EXPECT_TRUE(workers_.Register(r).ok());
  r.pool = kB;
  EXPECT_ERROR_CODE(workers_.Register(r), ErrorCode::kUnavailable);
  r.pool.clear();
  EXPECT_TRUE(workers_.Register(r).ok()) << "a remote worker: one orchestrator still runs";
}

// slot-1 of one pool is not slot-1 of another: registering one never declares the other dead.
TEST_F(OrchestratorServiceTest, ASlotIsUniqueWithinItsPoolOnly) {
  Registration a;
  a.slot = "slot-1";
  a.pool = kA;
  ASSERT_OK_AND_ASSIGN(Worker first, workers_.Register(a));
  Registration b = a;
  b.pool = kB;
  std::vector<Worker> replaced;
  ASSERT_OK_AND_ASSIGN(Worker other, workers_.Register(b, &replaced));
  EXPECT_TRUE(replaced.empty());
  EXPECT_EQ(GetWorker(first.id).status, WorkerStatus::kIdle);
  ASSERT_OK_AND_ASSIGN(Worker again, workers_.Register(a, &replaced));
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0].id, first.id);
  EXPECT_EQ(GetWorker(first.id).status, WorkerStatus::kDead);
  EXPECT_EQ(GetWorker(other.id).status, WorkerStatus::kIdle);
  EXPECT_EQ(GetWorker(again.id).pool, kA);
}

TEST_F(OrchestratorServiceTest, TaskAddPastMaxQueueDepthIsRefusedWithBackpressure) {
  ASSERT_OK(row_.Acquire(
      kA, "/srv/.tx", 100, "host-a", {{"max_queue_depth", 2}},
      [](const OrchestratorState&) { return false; }, true));
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
  // A bulk add that streams its drafts counts the room once they are in: the tasks it added
  // itself are not taken for the queue's.
  std::vector<Task> more(2, third);
  auto each = [&](std::size_t i, std::string& label) -> Result<Task*> {
    label = "line " + std::to_string(i + 1);
    return i < more.size() ? &more[i] : nullptr;
  };
  auto refused_as_full = [](const Result<std::size_t>& r) {
    if (r.ok()) return ::testing::AssertionFailure() << "added " << *r;
    if (r.error().code() != ErrorCode::kBackpressure ||
        r.error().message().find("queue full: 2 tasks ready of 2 allowed (max-queue-depth); 2 "
                                 "more refused") == std::string::npos) {
      return ::testing::AssertionFailure() << r.error().message();
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(refused_as_full(tasks_.AddEach(each)));
  // Told how many drafts come, it refuses them all before it asks for the first.
  int asked = 0;
  auto counted = [&](std::size_t i, std::string& label) -> Result<Task*> {
    ++asked;
    return each(i, label);
  };
  EXPECT_TRUE(refused_as_full(tasks_.AddEach(counted, more.size())));
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(tasks_.List({}).value().size(), 2u);
  // A claimed task leaves the ready queue and makes room.
  Worker w = Register();
  ClaimNextFor(w);
  EXPECT_TRUE(tasks_.Add(third).ok());
  // Once the orchestrator has stopped, its limit no longer applies.
  ASSERT_OK(row_.SetStatus(kA, 100, "stopped"));
  EXPECT_TRUE(tasks_.Add(third).ok());
}

// A config read again on SIGHUP: its new limit holds at once, set by the holder alone.
TEST_F(OrchestratorServiceTest, AReloadedConfigsQueueDepthHoldsAtOnce_Issue24) {
  ASSERT_OK(row_.Acquire(
      kA, "/srv/.tx", 100, "host-a", {{"max_queue_depth", 0}},
      [](const OrchestratorState&) { return false; }, true));
  AddTask("a");
  ASSERT_OK(row_.SetConfig(kA, 100, {{"max_queue_depth", 1}}));
  EXPECT_EQ(row_.Get(kA)->config.value("max_queue_depth", 0), 1);
  Task b;
  b.title = "b";
  EXPECT_ERROR_CODE(tasks_.Add(b), ErrorCode::kBackpressure);
  EXPECT_ERROR_CODE(row_.SetConfig(kA, 999, {{"max_queue_depth", 0}}), ErrorCode::kConflict);
  ASSERT_OK(row_.SetConfig(kA, 100, {{"max_queue_depth", 0}}));
  EXPECT_TRUE(tasks_.Add(b).ok());
}

// An orchestrator killed with kill -9 never marks its row stopped: its limit must still end.
TEST_F(OrchestratorServiceTest, BackpressureEndsWhenTheRowsHolderIsGone) {
  ASSERT_OK(row_.Acquire(
      kA, "/srv/.tx", 100, "host-a", {{"max_queue_depth", 1}},
      [](const OrchestratorState&) { return false; }, true));
  ASSERT_OK(row_.SetStatus(kA, 100, "running"));
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
  ASSERT_OK(row_.SetStatus(kA, 100, "running"));  // refreshed
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
  EXPECT_FALSE(reconciler_.NextDueAt(clock_.Now())->has_value());
  Millis t0 = clock_.NowMs();
  Worker w = Register();  // heartbeat interval 10 s: stale at t0 + 20 s
  EXPECT_EQ(**reconciler_.NextDueAt(clock_.Now()), t0 + 20'000);
  AddTask("t");
  auto claimed = claims_.ClaimNext(w.id, 5'000);  // a 5 s lease expires first
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  EXPECT_EQ(**reconciler_.NextDueAt(clock_.Now()), t0 + 5'000);
}

}  // namespace
}  // namespace tx::service
