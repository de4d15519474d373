// The ClaimService and WorkerService calls a running worker makes besides claiming and reporting
// (issue 3): failing with a named reason, giving up a lost lease, inspecting a claim, finding
// when to look again, and learning which incarnation of its slot it replaced.

#include "service/service_test_util.h"

namespace tx::service {
namespace {

class WorkerFacingTest : public ServiceTest {};

TEST_F(WorkerFacingTest, FailWithATimeoutRecordsTheReasonAndRetriesWithBackoff) {
  Task t = AddTask("slow");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task after, claims_.Fail(t.id, r.claim.token, EndReason::kTimedOut,
                                                "timed out after 30m", 143));
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.run_after, clock_.NowMs() + 1000);
  EXPECT_EQ(after.error, "timed out after 30m");
  auto attempts = Attempts(t.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].end_reason, EndReason::kTimedOut);
  EXPECT_EQ(attempts[0].exit_code, 143);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
}

TEST_F(WorkerFacingTest, FailWithAStaleTokenIsRefusedAndChangesNothing) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, r.claim.token, Outcome::kDone, ""));
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(claims_.Fail(t.id, r.claim.token, EndReason::kStalled, "x"),
                    ErrorCode::kConflict);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kDone);
  EXPECT_EQ(EventCount(), events);
}

TEST_F(WorkerFacingTest, GivingUpAnExpiredLeaseRequeuesTheTaskAndCountsTheAttempt) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  clock_.Advance(61s);  // past the 60 s lease; the reconciler has not run
  ASSERT_OK_AND_ASSIGN(Claim c, claims_.GiveUp(t.id, r.claim.token, EndReason::kLeaseLost));
  EXPECT_EQ(c.status, ClaimStatus::kExpired);
  EXPECT_EQ(c.end_reason, EndReason::kLeaseLost);
  Task after = Get(t.id);
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 1);
  auto types = EventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "lease.lost"), types.end());
}

TEST_F(WorkerFacingTest, GivingUpAClaimThatAlreadyEndedChangesNothing) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult first = ClaimNextFor(w);
  clock_.Advance(61s);
  ASSERT_OK(workers_.Heartbeat(w.id, {}));
  ASSERT_OK(reconciler_.RunOnce(clock_.Now()));  // expires the lease, requeues the task
  ClaimResult second = ClaimNextFor(w);
  std::int64_t events = EventCount();
  ASSERT_OK_AND_ASSIGN(Claim c, claims_.GiveUp(t.id, first.claim.token, EndReason::kLeaseLost));
  EXPECT_EQ(c.status, ClaimStatus::kExpired);
  EXPECT_EQ(EventCount(), events);
  ASSERT_OK_AND_ASSIGN(Claim still, claims_.Inspect(second.claim.token));
  EXPECT_EQ(still.status, ClaimStatus::kActive);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kRunning);
  EXPECT_ERROR_CODE(claims_.GiveUp("task-zzzzzzzz", second.claim.token, EndReason::kLeaseLost),
                    ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Inspect(999), ErrorCode::kNotFound);
}

TEST_F(WorkerFacingTest, NextEligibleAtIsNowForAReadyTaskTheEndOfABackoffOrNothing) {
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(auto none, claims_.NextEligibleAt(w.id));
  EXPECT_FALSE(none.has_value());
  Task t = AddTask("t");
  ASSERT_OK_AND_ASSIGN(auto now, claims_.NextEligibleAt(w.id));
  EXPECT_EQ(now, clock_.NowMs());
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, r.claim.token, Outcome::kFail, "boom"));
  ASSERT_OK_AND_ASSIGN(auto later, claims_.NextEligibleAt(w.id));
  EXPECT_EQ(later, clock_.NowMs() + 1000);
}

TEST_F(WorkerFacingTest, RegisteringASlotAgainHandsBackTheIncarnationItReplaced) {
  Registration r;
  r.slot = "slot-1";
  r.metadata = {{"agent_pid", 4242}};
  ASSERT_OK_AND_ASSIGN(Worker old, workers_.Register(r));
  std::vector<Worker> replaced;
  ASSERT_OK_AND_ASSIGN(Worker fresh, workers_.Register(r, &replaced));
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0].id, old.id);
  EXPECT_EQ(replaced[0].metadata["agent_pid"], 4242);
  EXPECT_EQ(GetWorker(old.id).status, WorkerStatus::kDead);
  EXPECT_NE(fresh.id, old.id);
}

TEST_F(WorkerFacingTest, AStoppingWorkerKeepsHeartbeatingButMayNotClaim) {
  Worker w = Register();
  AddTask("t");
  ASSERT_OK(workers_.Heartbeat(w.id, {WorkerStatus::kStopping, {}}));
  EXPECT_ERROR_CODE(claims_.ClaimNext(w.id), ErrorCode::kConflict);
  ASSERT_OK(workers_.Heartbeat(w.id, {}));
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kStopping);
}

TEST_F(WorkerFacingTest, RequestsAreRecordedUntilTheWorkerAcknowledgesThem) {
  Worker w = Register();
  ASSERT_OK_AND_ASSIGN(Worker asked, workers_.Request(w.name, WorkerRequest::kPause));
  EXPECT_EQ(asked.request, WorkerRequest::kPause);
  EXPECT_ERROR_CODE(workers_.Request(w.id, WorkerRequest::kPause), ErrorCode::kConflict);
  HeartbeatUpdate ack{WorkerStatus::kPaused, {}};
  ack.clear_request = true;
  ASSERT_OK(workers_.Heartbeat(w.id, ack));
  EXPECT_EQ(GetWorker(w.id).request, WorkerRequest::kNone);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kPaused);
  ASSERT_OK(workers_.Request(w.id, WorkerRequest::kStop));
  // A pending stop is not undone by a resume; a stop-now supersedes it.
  ASSERT_OK(workers_.Request(w.id, WorkerRequest::kResume));
  EXPECT_EQ(GetWorker(w.id).request, WorkerRequest::kStop);
  ASSERT_OK(workers_.Request(w.id, WorkerRequest::kStopNow));
  EXPECT_EQ(GetWorker(w.id).request, WorkerRequest::kStopNow);
  ASSERT_OK(workers_.Deregister(w.id, "done"));
  EXPECT_ERROR_CODE(workers_.Request(w.id, WorkerRequest::kStop), ErrorCode::kConflict);
  Worker idle = Register("w2");
  EXPECT_ERROR_CODE(workers_.Request(idle.id, WorkerRequest::kResume), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(workers_.Request("nobody", WorkerRequest::kPause), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tx::service
