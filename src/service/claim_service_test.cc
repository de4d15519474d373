#include "service/claim_service.h"

#include <algorithm>

#include "service/service_test_util.h"

namespace tx::service {
namespace {

class ClaimServiceTest : public ServiceTest {};

// The answer to a claim lost (a connection dropped during its commit): the worker, which thinks
// it got nothing, claims again and gets the same claim back — not a second task — with its lease
// running from now. A name registered by hand claims may hold several.
TEST_F(ClaimServiceTest, AWorkerClaimingWhileItHoldsAClaimGetsThatClaimBack) {
  Task first = AddTask("first");
  Task second = AddTask("second");
  Worker w = Register();
  ClaimResult lost = ClaimNextFor(w);
  ASSERT_EQ(lost.task.id, first.id);
  clock_.Advance(10s);
  ClaimResult again = ClaimNextFor(w);
  EXPECT_EQ(again.task.id, first.id);
  EXPECT_EQ(again.claim.token, lost.claim.token);
  EXPECT_EQ(again.claim.lease_expires_at, clock_.NowMs() + lost.claim.lease_ms);
  EXPECT_EQ(Get(second.id).status, TaskStatus::kReady);
  EXPECT_EQ(Attempts(first.id).size(), 1u);
  EXPECT_EQ(GetWorker(w.id).last_heartbeat_at, clock_.NowMs());  // adopting is proof of life
  auto types = EventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "claim.adopted"), types.end());
  // Once reported, the next claim is the next task.
  ASSERT_OK(claims_.Report(first.id, again.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(ClaimNextFor(w).task.id, second.id);
}

TEST_F(ClaimServiceTest, ClaimNextTakesHighestPriorityThenOldest) {
  AddTask("low", 0);
  Task high1 = AddTask("high 1", 5);
  Task high2 = AddTask("high 2", 5);
  Worker w = Register();
  EXPECT_EQ(ClaimNextFor(w).task.id, high1.id);
  Worker w2 = Register("w2");
  EXPECT_EQ(ClaimNextFor(w2).task.id, high2.id);
}

TEST_F(ClaimServiceTest, ClaimNextReturnsNothingWhenNothingIsEligible) {
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto none, claims_.ClaimNext(w.id));
  EXPECT_FALSE(none.has_value());
}

TEST_F(ClaimServiceTest, ClaimMovesTheTaskToRunningCountsAnAttemptAndRecordsTheLease) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  EXPECT_EQ(r.task.status, TaskStatus::kRunning);
  EXPECT_EQ(r.task.attempt, 1);
  EXPECT_EQ(r.claim.attempt, 1);
  EXPECT_EQ(r.claim.lease_expires_at, clock_.NowMs() + 60'000);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kRunning);
  Worker after = GetWorker(w.id);
  EXPECT_EQ(after.status, WorkerStatus::kBusy);
  EXPECT_EQ(after.current_task_id, t.id);
  EXPECT_EQ(EventTypes().back(), "task.claimed");
}

// The claim path writes these events' data as text; readers must see the same objects.
TEST_F(ClaimServiceTest, ClaimAndDoneEventsCarryTheirData) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(r.task.id, r.claim.token, Outcome::kDone, "ok"));
  std::vector<Event> events = events_.Since(0).value();
  ASSERT_GE(events.size(), 2u);
  const Event& claimed = events[events.size() - 2];
  const Event& done = events.back();
  EXPECT_EQ(claimed.type, "task.claimed");
  EXPECT_EQ(claimed.task_id, r.task.id);
  EXPECT_EQ(claimed.worker_id, w.id);
  EXPECT_EQ(claimed.data,
            nlohmann::json({{"token", r.claim.token}, {"attempt", 1}, {"lease", "1m"}}));
  EXPECT_EQ(done.type, "task.done");
  EXPECT_EQ(done.worker_id, w.id);
  EXPECT_EQ(done.data, nlohmann::json({{"attempt", 1}}));
}

TEST_F(ClaimServiceTest, ClaimNextSkipsTasksNeedingCapabilitiesTheWorkerLacks) {
  Task t;
  t.title = "gpu work";
  t.requires_caps = {"gpu"};
  ASSERT_OK_AND_ASSIGN(Task gpu, tasks_.Add(t));
  Worker plain = Register("plain");
  ASSERT_OK_AND_ASSIGN(auto none, claims_.ClaimNext(plain.id));
  EXPECT_FALSE(none.has_value());
  Worker gpu_worker = Register("gpu", {"gpu", "linux"});
  EXPECT_EQ(ClaimNextFor(gpu_worker).task.id, gpu.id);
}

TEST_F(ClaimServiceTest, ClaimNextHonoursAnOwnerPinByNameOrSlot) {
  Task t;
  t.title = "pinned";
  t.owner = "slot-2";
  ASSERT_OK_AND_ASSIGN(Task pinned, tasks_.Add(t));
  Worker other = Register("other", {}, "slot-1");
  ASSERT_OK_AND_ASSIGN(auto none, claims_.ClaimNext(other.id));
  EXPECT_FALSE(none.has_value());
  Worker owner = Register("owner", {}, "slot-2");
  EXPECT_EQ(ClaimNextFor(owner).task.id, pinned.id);
}

TEST_F(ClaimServiceTest, ClaimNextOnlyTakesTheWorkersQueues) {
  Task t;
  t.title = "elsewhere";
  t.queue = "builds";
  ASSERT_OK(tasks_.Add(t));
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto none, claims_.ClaimNext(w.id));
  EXPECT_FALSE(none.has_value());
}

TEST_F(ClaimServiceTest, AStaleWorkerMayNotClaimAndChangesNothing) {
  AddTask("t");
  Worker w = Register();
  clock_.Advance(20s);  // two heartbeat intervals of 10 s
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.ClaimNext(w.id), ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
}

TEST_F(ClaimServiceTest, DeadOrUnknownWorkersMayNotClaim) {
  AddTask("t");
  Worker w = Register();
  ASSERT_OK(workers_.MarkDead(w.id, "test"));
  EXPECT_ERROR_CODE(claims_.ClaimNext(w.id), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.ClaimNext("worker-zzzzzzzz"), ErrorCode::kNotFound);
}

TEST_F(ClaimServiceTest, ClaimTaskRefusesRunningBlockedPinnedAndMissingCapabilities) {
  Task dep = AddTask("dep");
  Task blocked = AddTask("blocked", 0, {dep.id});
  Worker w = Register();
  ASSERT_OK(claims_.ClaimTask(dep.id, w.id));
  Worker w2 = Register("w2");
  EXPECT_ERROR_CODE(claims_.ClaimTask(dep.id, w2.id), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.ClaimTask(blocked.id, w2.id), ErrorCode::kConflict);
  Task t;
  t.title = "needs gpu";
  t.requires_caps = {"gpu"};
  ASSERT_OK_AND_ASSIGN(Task gpu, tasks_.Add(t));
  EXPECT_ERROR_CODE(claims_.ClaimTask(gpu.id, w2.id), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.ClaimTask("task-zzzzzzzz", w2.id), ErrorCode::kNotFound);
}

TEST_F(ClaimServiceTest, RenewExtendsTheLeaseFromNow) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  clock_.Advance(50s);
  ASSERT_OK_AND_ASSIGN(Claim c, claims_.Renew(r.task.id, r.claim.token));
  EXPECT_EQ(c.lease_expires_at, clock_.NowMs() + 60'000);
  EXPECT_EQ(c.renewed_count, 1);
  EXPECT_EQ(EventTypes().back(), "lease.renewed");
}

TEST_F(ClaimServiceTest, RenewIsRefusedPastTheRenewalCap) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  for (int i = 0; i < 10; ++i) ASSERT_OK(claims_.Renew(r.task.id, r.claim.token));
  EXPECT_ERROR_CODE(claims_.Renew(r.task.id, r.claim.token), ErrorCode::kConflict);
}

TEST_F(ClaimServiceTest, RenewAfterTheLeaseExpiredIsRefusedAndChangesNothing) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  clock_.Advance(60s);
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.Renew(r.task.id, r.claim.token), ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
  EXPECT_EQ(Attempts(r.task.id)[0].renewed_count, 0);
}

TEST_F(ClaimServiceTest, RenewWithStaleTokenIsRefusedAndChangesNothing) {
  AddTask("t");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_OK(claims_.Release(first.task.id, first.claim.token));
  ClaimResult second = ClaimNextFor(w);
  ASSERT_EQ(first.task.id, second.task.id);
  EXPECT_GT(second.claim.token, first.claim.token);
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.Renew(first.task.id, first.claim.token), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Report(first.task.id, first.claim.token, Outcome::kDone, ""),
                    ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Release(first.task.id, first.claim.token), ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
  EXPECT_EQ(Get(first.task.id).status, TaskStatus::kRunning);
}

TEST_F(ClaimServiceTest, ATokenOfAnotherTaskOrNoClaimAtAllIsRefused) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  std::string other = r.task.id == a.id ? b.id : a.id;
  EXPECT_ERROR_CODE(claims_.Report(other, r.claim.token, Outcome::kDone, ""), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Report(r.task.id, 999, Outcome::kDone, ""), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Report("task-zzzzzzzz", r.claim.token, Outcome::kDone, ""),
                    ErrorCode::kNotFound);
}

TEST_F(ClaimServiceTest, ReleaseReturnsTheTaskWithoutCountingTheAttempt) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task t, claims_.Release(r.task.id, r.claim.token));
  EXPECT_EQ(t.status, TaskStatus::kReady);
  EXPECT_EQ(t.attempt, 0);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kReleased);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
}

TEST_F(ClaimServiceTest, DoneCompletesTheTaskExactlyOnce) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task t, claims_.Report(r.task.id, r.claim.token, Outcome::kDone, "ok"));
  EXPECT_EQ(t.status, TaskStatus::kDone);
  EXPECT_EQ(t.result, "ok");
  EXPECT_ERROR_CODE(claims_.Report(r.task.id, r.claim.token, Outcome::kDone, "again"),
                    ErrorCode::kConflict);
  auto attempts = Attempts(t.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].status, ClaimStatus::kCompleted);
  EXPECT_EQ(attempts[0].end_reason, EndReason::kExited);
  auto types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "task.done"), 1);
  EXPECT_EQ(GetWorker(w.id).metadata["tasks_completed"], 1);
}

TEST_F(ClaimServiceTest, SuccessOfATaskThatAsksForReviewGoesToReview) {
  Task t;
  t.title = "reviewed";
  t.review = true;
  ASSERT_OK(tasks_.Add(t));
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task done, claims_.Report(r.task.id, r.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(done.status, TaskStatus::kReview);
}

TEST_F(ClaimServiceTest, AReportedReviewGoesToReview) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task t, claims_.Report(r.task.id, r.claim.token, Outcome::kReview, ""));
  EXPECT_EQ(t.status, TaskStatus::kReview);
}

// The worker hands the branch's summary with the outcome; it is stored as the task goes to review,
// in the same write, and ignored by an outcome that does not.
TEST_F(ClaimServiceTest, AReviewStoresTheBranchSummaryHandedWithIt) {
  Task t;
  t.title = "reviewed";
  t.review = true;
  t.metadata = {{"mine", 1}};
  ASSERT_OK(tasks_.Add(t));
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  nlohmann::json branch = {{"branch", "tx/x"}, {"files_changed", 2}, {"insertions", 5}};
  ASSERT_OK_AND_ASSIGN(Task got,
                       claims_.Report(r.task.id, r.claim.token, Outcome::kDone, "", 0, &branch));
  EXPECT_EQ(got.status, TaskStatus::kReview);
  Task stored = Get(got.id);
  EXPECT_EQ(stored.metadata["branch"], branch);
  EXPECT_EQ(stored.metadata["mine"], 1);

  Task plain = AddTask("no review");
  ClaimResult p = ClaimNextFor(w);
  ASSERT_EQ(p.task.id, plain.id);
  ASSERT_OK(claims_.Report(plain.id, p.claim.token, Outcome::kDone, "", 0, &branch));
  EXPECT_FALSE(Get(plain.id).metadata.contains("branch"));
}

TEST_F(ClaimServiceTest, AFailedAttemptRetriesWithExponentialBackoffThenFails) {
  Task t = AddTask("flaky");  // max_attempts 3
  Worker w = Register();
  Millis expected_delay[] = {1000, 2000};
  for (int attempt = 1; attempt <= 2; ++attempt) {
    ClaimResult r = ClaimNextFor(w);
    ASSERT_OK_AND_ASSIGN(Task after, claims_.Report(t.id, r.claim.token, Outcome::kFail, "boom"));
    EXPECT_EQ(after.status, TaskStatus::kReady);
    EXPECT_EQ(after.run_after, clock_.NowMs() + expected_delay[attempt - 1]);
    ASSERT_OK_AND_ASSIGN(auto too_early, claims_.ClaimNext(w.id));
    EXPECT_FALSE(too_early.has_value()) << "claimable before its backoff";
    clock_.Advance(std::chrono::milliseconds(expected_delay[attempt - 1]));
  }
  ClaimResult last = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task failed, claims_.Report(t.id, last.claim.token, Outcome::kFail, "x"));
  EXPECT_EQ(failed.status, TaskStatus::kFailed);
  EXPECT_EQ(failed.error, "x");
  auto attempts = Attempts(t.id);
  ASSERT_EQ(attempts.size(), 3u);
  for (const auto& a : attempts) EXPECT_EQ(a.end_reason, EndReason::kFailed);
}

TEST_F(ClaimServiceTest, DoneUnblocksDependentsWhoseDependenciesAreAllDone) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  Task c = AddTask("c", 0, {a.id, b.id});
  EXPECT_EQ(c.status, TaskStatus::kBlocked);
  Worker w = Register();
  ClaimResult ra = claims_.ClaimTask(a.id, w.id).value();
  ASSERT_OK(claims_.Report(a.id, ra.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(Get(c.id).status, TaskStatus::kBlocked);
  ClaimResult rb = claims_.ClaimTask(b.id, w.id).value();
  ASSERT_OK(claims_.Report(b.id, rb.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(Get(c.id).status, TaskStatus::kReady);
  EXPECT_EQ(EventTypes().back(), "task.unblocked");
}

}  // namespace
}  // namespace tx::service

namespace tx::service {
namespace {

class ManualClaimTest : public ServiceTest {};

TEST_F(ManualClaimTest, AHandRunClaimRegistersItsWorkerInTheSameTransaction) {
  Task t = AddTask("t");
  ASSERT_OK_AND_ASSIGN(ClaimResult r, claims_.ClaimNextAs({"alice", 60'000, "host", 1}));
  EXPECT_EQ(r.task.id, t.id);
  EXPECT_EQ(GetWorker(r.claim.worker_id).name, "alice");
}

TEST_F(ManualClaimTest, ARefusedHandRunClaimRegistersNothing) {
  Task t = AddTask("t");
  ASSERT_OK(claims_.ClaimTaskAs(t.id, {"alice", 60'000, "host", 1}));
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.ClaimTaskAs(t.id, {"bob", 60'000, "host", 1}), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.ClaimNextAs({"carol", 60'000, "host", 1}), ErrorCode::kNotFound);
  EXPECT_EQ(EventCount(), events);
  EXPECT_ERROR_CODE(workers_.Get("bob"), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(workers_.Get("carol"), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tx::service

namespace tx::service {
namespace {

class ReportAndClaimNextTest : public ServiceTest {};

TEST_F(ReportAndClaimNextTest, CompletesTheTaskAndClaimsTheNextInOneTransaction) {
  Task a = AddTask("a", 2);
  Task b = AddTask("b", 1);
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_EQ(first.task.id, a.id);
  ASSERT_OK_AND_ASSIGN(auto r,
                       claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kDone, "ok"));
  EXPECT_EQ(r.task.status, TaskStatus::kDone);
  ASSERT_TRUE(r.next.has_value());
  EXPECT_EQ(r.next->task.id, b.id);
  EXPECT_GT(r.next->claim.token, first.claim.token);
  EXPECT_EQ(Get(a.id).status, TaskStatus::kDone);
  EXPECT_EQ(Get(b.id).status, TaskStatus::kRunning);
  Worker after = GetWorker(w.id);
  EXPECT_EQ(after.status, WorkerStatus::kBusy);
  EXPECT_EQ(after.current_task_id, b.id);
  EXPECT_EQ(after.metadata["tasks_completed"], 1);
}

TEST_F(ReportAndClaimNextTest, WithNothingLeftTheReportStandsAndTheWorkerIsIdle) {
  Task a = AddTask("a");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(auto r,
                       claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kFail, "boom"));
  EXPECT_EQ(r.task.status, TaskStatus::kReady);  // retried after its backoff, not claimed now
  EXPECT_FALSE(r.next.has_value());
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
}

TEST_F(ReportAndClaimNextTest, AWorkerThatMayNotClaimGetsNoNextTask) {
  Task a = AddTask("a");
  AddTask("b");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  HeartbeatUpdate stopping;
  stopping.status = WorkerStatus::kStopping;
  ASSERT_OK(workers_.Heartbeat(w.id, stopping));
  ASSERT_OK_AND_ASSIGN(auto r,
                       claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(r.task.status, TaskStatus::kDone);
  EXPECT_FALSE(r.next.has_value());
}

TEST_F(ReportAndClaimNextTest, AWorkerWithAnOperatorsRequestToReadGetsNoNextTask) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_OK(workers_.Request(w.id, WorkerRequest::kPause));
  ASSERT_OK_AND_ASSIGN(auto r,
                       claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(r.task.status, TaskStatus::kDone);
  EXPECT_FALSE(r.next.has_value());
  EXPECT_EQ(Get(b.id).status, TaskStatus::kReady);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
}

TEST_F(ReportAndClaimNextTest, TheNextClaimPassesOverTheTasksTheGateHolds) {
  Task a = AddTask("a", 3);
  Task limited;
  limited.title = "limited";
  limited.agent = "claude";
  limited.priority = 2;
  ASSERT_OK(tasks_.Add(limited));
  Task c = AddTask("c", 1);
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_EQ(first.task.id, a.id);
  AgentGate gate{{"claude"}, {}};
  ASSERT_OK_AND_ASSIGN(auto r, claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kDone,
                                                          "", std::nullopt, 0, &gate));
  ASSERT_TRUE(r.next.has_value());
  EXPECT_EQ(r.next->task.id, c.id);
}

TEST_F(ReportAndClaimNextTest, TheAgentPidTheWorkerRecordedEndsWithItsClaim) {
  Task a = AddTask("a");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  HeartbeatUpdate beat;
  beat.metadata = {{"agent_pid", 4242}};
  ASSERT_OK(workers_.Heartbeat(w.id, beat));
  ASSERT_OK(claims_.Report(a.id, first.claim.token, Outcome::kDone, ""));
  EXPECT_EQ(GetWorker(w.id).metadata["agent_pid"], 0);
}

TEST_F(ReportAndClaimNextTest, AStaleTokenIsRefusedAndNothingIsClaimed) {
  Task a = AddTask("a");
  AddTask("b");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  ASSERT_OK(claims_.Release(a.id, first.claim.token));
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.ReportAndClaimNext(a.id, first.claim.token, Outcome::kDone, ""),
                    ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
}

class ReportAndClaimBatchTest : public ServiceTest {
 protected:
  static std::vector<ClaimService::Finished> AllDone(const std::vector<ClaimResult>& held) {
    std::vector<ClaimService::Finished> out;
    for (const auto& c : held) out.push_back({c.task.id, c.claim.token, Outcome::kDone, "ok", 0});
    return out;
  }
};

TEST_F(ReportAndClaimBatchTest, ClaimsUpToTheBatchInPickOrderEachWithItsOwnToken) {
  Task low = AddTask("low", 0);
  Task high1 = AddTask("high 1", 5);
  Task high2 = AddTask("high 2", 5);
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto r, claims_.ReportAndClaimBatch(w.id, {}, 2));
  EXPECT_TRUE(r.reported.empty());
  ASSERT_EQ(r.claimed.size(), 2u);
  EXPECT_EQ(r.claimed[0].task.id, high1.id);
  EXPECT_EQ(r.claimed[1].task.id, high2.id);
  EXPECT_LT(r.claimed[0].claim.token, r.claimed[1].claim.token);
  for (const auto& c : r.claimed) {
    EXPECT_EQ(c.task.status, TaskStatus::kRunning);
    EXPECT_EQ(c.claim.attempt, 1);
    EXPECT_EQ(c.claim.worker_id, w.id);
    EXPECT_EQ(c.claim.lease_expires_at, clock_.NowMs() + 60'000);
    EXPECT_EQ(Get(c.task.id).status, TaskStatus::kRunning);
  }
  EXPECT_EQ(Get(low.id).status, TaskStatus::kReady);
  Worker after = GetWorker(w.id);
  EXPECT_EQ(after.status, WorkerStatus::kBusy);
  EXPECT_EQ(after.current_task_id, high2.id);  // the last one claimed
}

TEST_F(ReportAndClaimBatchTest, ReportsTheBatchAndClaimsTheNextInOneCall) {
  std::vector<Task> added;
  for (int i = 0; i < 5; ++i)
    added.push_back(AddTask("task " + std::string(1, static_cast<char>('a' + i))));
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto first, claims_.ReportAndClaimBatch(w.id, {}, 3));
  ASSERT_EQ(first.claimed.size(), 3u);
  clock_.Advance(5s);
  ASSERT_OK_AND_ASSIGN(auto second, claims_.ReportAndClaimBatch(w.id, AllDone(first.claimed), 3));
  ASSERT_EQ(second.reported.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(second.reported[i].id, first.claimed[i].task.id);
    EXPECT_EQ(second.reported[i].status, TaskStatus::kDone);
    EXPECT_EQ(second.reported[i].result, "ok");
    EXPECT_EQ(Attempts(added[i].id)[0].status, ClaimStatus::kCompleted);
    EXPECT_EQ(Attempts(added[i].id)[0].exit_code, 0);
  }
  ASSERT_EQ(second.claimed.size(), 2u);  // all that was left
  EXPECT_EQ(second.claimed[0].task.id, added[3].id);
  EXPECT_EQ(second.claimed[1].task.id, added[4].id);
  EXPECT_EQ(GetWorker(w.id).metadata["tasks_completed"], 3);
  EXPECT_EQ(GetWorker(w.id).last_heartbeat_at, clock_.NowMs());

  ASSERT_OK_AND_ASSIGN(auto last, claims_.ReportAndClaimBatch(w.id, AllDone(second.claimed), 3));
  EXPECT_EQ(last.reported.size(), 2u);
  EXPECT_TRUE(last.claimed.empty());
  Worker idle = GetWorker(w.id);
  EXPECT_EQ(idle.status, WorkerStatus::kIdle);
  EXPECT_TRUE(idle.current_task_id.empty());
  EXPECT_EQ(idle.metadata["tasks_completed"], 5);
  for (const Task& t : added) EXPECT_EQ(Get(t.id).status, TaskStatus::kDone);
}

TEST_F(ReportAndClaimBatchTest, AFailureInTheBatchRetriesThatTaskAlone) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto held, claims_.ReportAndClaimBatch(w.id, {}, 2));
  auto finished = AllDone(held.claimed);
  finished[1].outcome = Outcome::kFail;
  finished[1].text = "boom";
  ASSERT_OK_AND_ASSIGN(auto r, claims_.ReportAndClaimBatch(w.id, finished, 0));
  EXPECT_EQ(Get(a.id).status, TaskStatus::kDone);
  EXPECT_EQ(Get(b.id).status, TaskStatus::kReady);  // after its backoff
  EXPECT_EQ(Get(b.id).error, "boom");
  EXPECT_TRUE(r.claimed.empty());
}

TEST_F(ReportAndClaimBatchTest, OneRefusedReportRefusesTheWholeBatchAndWritesNothing) {
  for (int i = 0; i < 3; ++i) AddTask("task " + std::string(1, static_cast<char>('a' + i)));
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto held, claims_.ReportAndClaimBatch(w.id, {}, 2));
  ASSERT_OK(claims_.Release(held.claimed[1].task.id, held.claimed[1].claim.token));
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, AllDone(held.claimed), 1),
                    ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
  EXPECT_EQ(Get(held.claimed[0].task.id).status, TaskStatus::kRunning);  // not reported
  EXPECT_EQ(Attempts(held.claimed[0].task.id)[0].status, ClaimStatus::kActive);

  // An expired lease is refused the same way.
  clock_.Advance(61s);
  ASSERT_OK(workers_.Heartbeat(w.id, {}));
  events = EventCount();
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, AllDone({held.claimed[0]}), 0),
                    ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
}

TEST_F(ReportAndClaimBatchTest, AnotherWorkersTokenIsRefused) {
  AddTask("a");
  Worker w1 = Register("w1");
  Worker w2 = Register("w2");
  ASSERT_OK_AND_ASSIGN(auto held, claims_.ReportAndClaimBatch(w1.id, {}, 1));
  std::int64_t events = EventCount();
  auto r = claims_.ReportAndClaimBatch(w2.id, AllDone(held.claimed), 0);
  EXPECT_ERROR_CODE(r, ErrorCode::kConflict);
  EXPECT_NE(r.error().message().find("held by worker " + w1.id), std::string::npos)
      << r.error().message();
  EXPECT_EQ(EventCount(), events);
}

TEST_F(ReportAndClaimBatchTest, BadArgumentsAreRefusedBeforeAnyWrite) {
  AddTask("a");
  Worker w = Register();
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, {}, -1), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, {}, ClaimService::kMaxBatch + 1),
                    ErrorCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(auto held, claims_.ReportAndClaimBatch(w.id, {}, 1));
  auto twice = AllDone(held.claimed);
  twice.push_back(twice[0]);
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, twice, 0), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch("worker-nobody00", {}, 1), ErrorCode::kNotFound);
  EXPECT_EQ(Get(held.claimed[0].task.id).status, TaskStatus::kRunning);
}

TEST_F(ReportAndClaimBatchTest, AWorkerThatMayNotClaimHasItsReportsRecordedAndNoClaims) {
  for (int i = 0; i < 3; ++i) AddTask("task " + std::string(1, static_cast<char>('a' + i)));
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto held, claims_.ReportAndClaimBatch(w.id, {}, 1));
  HeartbeatUpdate stopping;
  stopping.status = WorkerStatus::kStopping;
  ASSERT_OK(workers_.Heartbeat(w.id, stopping));
  ASSERT_OK_AND_ASSIGN(auto r, claims_.ReportAndClaimBatch(w.id, AllDone(held.claimed), 2));
  EXPECT_EQ(r.reported[0].status, TaskStatus::kDone);
  EXPECT_TRUE(r.claimed.empty());
  // With nothing to report, it is told why.
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(w.id, {}, 2), ErrorCode::kConflict);
  // A stale worker too, as ClaimNext tells it.
  Worker stale = Register("w2");
  clock_.Advance(10min);
  EXPECT_ERROR_CODE(claims_.ReportAndClaimBatch(stale.id, {}, 1), ErrorCode::kConflict);
}

TEST_F(ReportAndClaimBatchTest, WithNothingEligibleNothingIsWritten) {
  Worker w = Register();
  std::int64_t events = EventCount();
  ASSERT_OK_AND_ASSIGN(auto r, claims_.ReportAndClaimBatch(w.id, {}, 5));
  EXPECT_TRUE(r.claimed.empty());
  EXPECT_EQ(EventCount(), events);
}

TEST_F(ClaimServiceTest, EndingASessionCancelsTheAttemptAndRequeuesTheTaskCountingIt) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(std::vector<Session> sessions, claims_.ListSessions());
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].claim.token, r.claim.token);
  EXPECT_EQ(sessions[0].task_title, "t");
  ASSERT_TRUE(sessions[0].worker.has_value());
  EXPECT_EQ(sessions[0].worker->id, w.id);

  ASSERT_OK_AND_ASSIGN(Task back, claims_.EndSession(r.claim.token, "stuck"));
  EXPECT_EQ(back.status, TaskStatus::kReady);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kCancelled);
  EXPECT_ERROR_CODE(claims_.Renew(t.id, r.claim.token), ErrorCode::kConflict);  // fenced off
  EXPECT_TRUE(claims_.ListSessions().value().empty());
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.EndSession(r.claim.token, ""), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.EndSession(12345, ""), ErrorCode::kNotFound);
  EXPECT_EQ(EventCount(), events);
  // The attempt counted: the next claim is attempt 2.
  EXPECT_EQ(ClaimNextFor(w).claim.attempt, 2);
}

}  // namespace
}  // namespace tx::service
