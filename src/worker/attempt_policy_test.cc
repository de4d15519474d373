#include "worker/attempt_policy.h"

#include <gtest/gtest.h>

namespace tx::worker {
namespace {

// A fake clock's attempt: starts at t = 1,000 ms with a 60 s timeout, a 10 s stall timeout, a
// 30 s shutdown wait and a $2 budget.
class AttemptPolicyTest : public ::testing::Test {
 protected:
  AttemptPolicyTest() : policy_(Limits(), kStart) {}
  static AttemptLimits Limits() {
    AttemptLimits l;
    l.timeout_ms = 60'000;
    l.stall_ms = 10'000;
    l.shutdown_ms = 30'000;
    l.budget_left_usd = 2.0;
    return l;
  }
  // What the loop sees at `t`, output last at `output_at` (the start by default).
  AttemptObservation At(Millis t) {
    AttemptObservation o;
    o.now = t;
    o.last_output_at = output_at_;
    return o;
  }
  AttemptDecision Step(const AttemptObservation& o) { return policy_.Step(o); }
  static constexpr Millis kStart = 1'000;
  Millis output_at_ = kStart;
  AttemptPolicy policy_;
};

AttemptDecision Ends(AttemptAction a, EndReason r) { return {a, r, 0}; }
AttemptDecision WaitUntil(Millis t) { return {AttemptAction::kWait, EndReason::kNone, t}; }

TEST_F(AttemptPolicyTest, AHealthyRunWaitsAndLooksAgainWithinASecond) {
  EXPECT_EQ(Step(At(kStart)), WaitUntil(kStart + 1'000));
  output_at_ = 5'000;
  EXPECT_EQ(Step(At(5'500)), WaitUntil(6'500));
}

TEST_F(AttemptPolicyTest, TheTimeoutEndsARunThatKeepsTalking) {
  for (Millis t = kStart; t < kStart + 60'000; t += 5'000) {
    output_at_ = t;
    EXPECT_EQ(Step(At(t)).action, AttemptAction::kWait) << t;
  }
  output_at_ = kStart + 60'000;
  EXPECT_EQ(Step(At(kStart + 60'000)), Ends(AttemptAction::kTerminate, EndReason::kTimedOut));
}

TEST_F(AttemptPolicyTest, StallCountsFromTheLastOutputNotFromTheStart) {
  output_at_ = 8'000;
  EXPECT_EQ(Step(At(17'999)), WaitUntil(18'000));
  EXPECT_EQ(Step(At(18'000)), Ends(AttemptAction::kTerminate, EndReason::kStalled));
}

TEST_F(AttemptPolicyTest, PausedTimeCountsAgainstNeitherTheTimeoutNorTheStall) {
  AttemptObservation o = At(2'000);
  o.paused = true;
  EXPECT_EQ(Step(o).action, AttemptAction::kWait);
  o.now = 500'000;  // paused for far longer than the timeout
  EXPECT_EQ(Step(o).action, AttemptAction::kWait);
  o.paused = false;
  o.now = 500'001;
  EXPECT_EQ(Step(o).action, AttemptAction::kWait);  // the stall counts from the resume
  EXPECT_EQ(policy_.paused_total(), 498'001);
  EXPECT_EQ(Step(At(510'000)).action, AttemptAction::kWait);
  EXPECT_EQ(Step(At(510'001)), Ends(AttemptAction::kTerminate, EndReason::kStalled));
}

TEST_F(AttemptPolicyTest, AFirstStopLetsTheAgentFinishUntilTheShutdownTimeout) {
  AttemptObservation o = At(2'000);
  o.stop_signals = 1;
  output_at_ = 2'000;
  o.last_output_at = 2'000;
  EXPECT_EQ(Step(o), WaitUntil(3'000));
  o.now = o.last_output_at = 31'999;
  EXPECT_EQ(Step(o), WaitUntil(32'000));
  o.now = 32'000;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kShutdown));
}

TEST_F(AttemptPolicyTest, ASecondStopOrAStopWhilePausedStopsTheAgentNow) {
  AttemptObservation o = At(2'000);
  o.stop_signals = 2;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kShutdown));
  AttemptPolicy paused(Limits(), kStart);
  AttemptObservation p = At(2'000);
  p.paused = true;
  p.stop_signals = 1;
  EXPECT_EQ(paused.Step(p), Ends(AttemptAction::kTerminate, EndReason::kShutdown));
}

TEST_F(AttemptPolicyTest, ARevokeOrALostLeaseKillsAtOnceEvenWhilePaused) {
  AttemptObservation o = At(2'000);
  o.paused = true;
  o.revoked = true;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kKill, EndReason::kCancelled));
  o.revoked = false;
  o.lease_lost = true;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kKill, EndReason::kLeaseLost));
}

TEST_F(AttemptPolicyTest, AnAgentThatReportedItselfIsLeftToExitThenStopped) {
  AttemptObservation o = At(2'000);
  o.reported = true;
  o.cost_usd = 5;  // over its budget: it has reported, so that no longer matters
  EXPECT_EQ(Step(o), WaitUntil(3'000));
  o.now = 2'000 + AttemptPolicy::kReportGraceMs - 1;
  EXPECT_EQ(Step(o).action, AttemptAction::kWait);
  o.now = 2'000 + AttemptPolicy::kReportGraceMs;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kExited));
  AttemptObservation gone = At(3'000);
  gone.reported = gone.exited = true;
  AttemptPolicy p(Limits(), kStart);
  EXPECT_EQ(p.Step(gone).action, AttemptAction::kFinish);
}

TEST_F(AttemptPolicyTest, AnAgentThatReportedAFailureIsStoppedBeforeItsRetryCanStart) {
  AttemptObservation o = At(2'000);
  o.reported = o.reported_failure = true;
  EXPECT_EQ(Step(o), WaitUntil(2'000 + AttemptPolicy::kRetryGraceMs));
  o.now = 2'000 + AttemptPolicy::kRetryGraceMs;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kExited));
  // The first retry waits at least 800 ms (a 1 s backoff less its jitter).
  EXPECT_LT(AttemptPolicy::kRetryGraceMs, 800);
}

TEST_F(AttemptPolicyTest, AnExitIsReportedBeforeAnyTimerFires) {
  AttemptObservation o = At(kStart + 120'000);
  o.exited = true;
  o.limit_seen = true;  // the worker reads how it ended: a limit, among others
  EXPECT_EQ(Step(o).action, AttemptAction::kFinish);
}

TEST_F(AttemptPolicyTest, ALimitOrARefusedLoginStopsTheAgentAsNotTheTasksFault) {
  AttemptObservation o = At(2'000);
  o.limit_seen = true;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kRateLimited));
  o.limit_seen = false;
  o.auth_failed = true;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kAgentUnavailable));
}

TEST_F(AttemptPolicyTest, PassingTheBudgetStopsTheAgentAndUnderItRuns) {
  AttemptObservation o = At(2'000);
  o.cost_usd = 1.99;
  EXPECT_EQ(Step(o).action, AttemptAction::kWait);
  o.cost_usd = 2.0;
  EXPECT_EQ(Step(o), Ends(AttemptAction::kTerminate, EndReason::kOverBudget));
  AttemptLimits none = Limits();
  none.budget_left_usd = 0;
  AttemptPolicy unbounded(none, kStart);
  o.cost_usd = 1e6;
  EXPECT_EQ(unbounded.Step(o).action, AttemptAction::kWait);
}

TEST_F(AttemptPolicyTest, NoStallTimeoutMeansSilenceIsFine) {
  AttemptLimits l = Limits();
  l.stall_ms = 0;
  AttemptPolicy quiet(l, kStart);
  AttemptObservation o = At(kStart + 59'000);
  EXPECT_EQ(quiet.Step(o), WaitUntil(kStart + 60'000));
}

}  // namespace
}  // namespace tx::worker
