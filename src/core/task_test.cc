#include "core/task.h"

#include <gtest/gtest.h>

#include "core/backoff.h"
#include "core/claim.h"

namespace tx {
namespace {

using S = TaskStatus;
using E = TaskEvent;

TEST(TaskStatus, ParsesCanonicalNamesAndSourceAliases) {
  EXPECT_EQ(*ParseTaskStatus("ready"), S::kReady);
  EXPECT_EQ(*ParseTaskStatus("todo"), S::kReady);
  EXPECT_EQ(*ParseTaskStatus("in-progress"), S::kRunning);
  EXPECT_EQ(*ParseTaskStatus("active"), S::kRunning);
  EXPECT_EQ(*ParseTaskStatus("claimed"), S::kRunning);
  EXPECT_EQ(*ParseTaskStatus("in_review"), S::kReview);
  EXPECT_EQ(*ParseTaskStatus("completed"), S::kDone);
  EXPECT_EQ(*ParseTaskStatus("blocked"), S::kBlocked);
}

TEST(TaskStatus, UnknownNameIsAnInvalidArgumentListingTheValidOnes) {
  auto r = ParseTaskStatus("finished");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("'finished'"), std::string::npos);
  EXPECT_NE(r.error().message().find("cancelled"), std::string::npos);
}

TEST(TaskStatus, EveryCanonicalNameRoundTrips) {
  for (S s : {S::kBlocked, S::kReady, S::kRunning, S::kReview, S::kApproved, S::kDone, S::kFailed,
              S::kCancelled, S::kWaiting}) {
    EXPECT_EQ(*ParseTaskStatus(ToString(s)), s);
  }
  EXPECT_EQ(ToString(S::kWaiting), "waiting");
}

// Issue 22: an agent's question takes a running task to `waiting`; an answer sends it back to
// the queue (blocked while after[] is not done), a question timeout fails it; it may be
// cancelled or forced, and nothing else moves it.
TEST(TaskTransitions, AQuestionWaitsForAnAnswerOrItsTimeout) {
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kAsk, S::kWaiting));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kAnswer, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kAnswer, S::kBlocked));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kQuestionExpired, S::kFailed));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kCancel, S::kCancelled));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kForceDone, S::kDone));
  EXPECT_TRUE(IsAllowed(S::kWaiting, E::kForceFail, S::kFailed));
  EXPECT_FALSE(IsTerminal(S::kWaiting));
  for (S s : {S::kBlocked, S::kReady, S::kReview, S::kApproved, S::kDone, S::kFailed, S::kCancelled,
              S::kWaiting}) {
    EXPECT_FALSE(IsAllowed(s, E::kAsk, S::kWaiting)) << ToString(s);
  }
  for (S s : {S::kBlocked, S::kReady, S::kRunning, S::kReview, S::kDone, S::kFailed}) {
    EXPECT_FALSE(IsAllowed(s, E::kAnswer, S::kReady)) << ToString(s);
  }
  EXPECT_FALSE(IsAllowed(S::kWaiting, E::kClaim, S::kRunning));
  EXPECT_FALSE(IsAllowed(S::kWaiting, E::kRetry, S::kReady));
  EXPECT_FALSE(IsAllowed(S::kWaiting, E::kRequeue, S::kReady));
  Status s = CheckTransition("task-abcdefgh", S::kDone, E::kAnswer, S::kReady);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cannot answer task task-abcdefgh: it is done");
  EXPECT_EQ(ToString(E::kQuestionExpired), "fail for an unanswered question");
}

TEST(TaskTransitions, TheHappyPathIsAllowed) {
  EXPECT_TRUE(IsAllowed(S::kBlocked, E::kUnblock, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kReady, E::kClaim, S::kRunning));
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kSucceed, S::kDone));
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kSubmitReview, S::kReview));
  EXPECT_TRUE(IsAllowed(S::kReview, E::kApprove, S::kApproved));
  EXPECT_TRUE(IsAllowed(S::kApproved, E::kMerge, S::kDone));
  EXPECT_TRUE(IsAllowed(S::kReview, E::kRequestChanges, S::kReady));
}

TEST(TaskTransitions, FailedAttemptsRetryOrFail) {
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kAttemptFailed, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kAttemptFailed, S::kFailed));
  EXPECT_TRUE(IsAllowed(S::kRunning, E::kRequeue, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kFailed, E::kRetry, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kCancelled, E::kRetry, S::kReady));
  EXPECT_TRUE(IsAllowed(S::kFailed, E::kRetry, S::kBlocked));
}

TEST(TaskTransitions, CancelReachesEveryNonTerminalStateAndNoTerminalOne) {
  for (S s : {S::kBlocked, S::kReady, S::kRunning, S::kReview, S::kApproved, S::kWaiting}) {
    EXPECT_TRUE(IsAllowed(s, E::kCancel, S::kCancelled)) << ToString(s);
  }
  for (S s : {S::kDone, S::kFailed, S::kCancelled}) {
    EXPECT_FALSE(IsAllowed(s, E::kCancel, S::kCancelled)) << ToString(s);
  }
}

TEST(TaskTransitions, RefusalsNameTheTaskAndItsState) {
  EXPECT_FALSE(IsAllowed(S::kDone, E::kClaim, S::kRunning));
  EXPECT_FALSE(IsAllowed(S::kBlocked, E::kClaim, S::kRunning));
  EXPECT_FALSE(IsAllowed(S::kReady, E::kSucceed, S::kDone));
  EXPECT_FALSE(IsAllowed(S::kReview, E::kMerge, S::kDone));  // merge needs an approval
  EXPECT_FALSE(IsAllowed(S::kDone, E::kRetry, S::kReady));
  EXPECT_FALSE(IsAllowed(S::kDone, E::kForceDone, S::kDone));
  Status s = CheckTransition("task-abcdefgh", S::kDone, E::kCancel, S::kCancelled);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kConflict);
  EXPECT_EQ(s.error().message(), "cannot cancel task task-abcdefgh: it is done");
}

TEST(TaskTransitions, AReviewedBranchIsMergedOnlyOnceApprovedAndARefusedMergeGoesBackToReady) {
  // review -> approved -> done by merge; a merge refused (conflict, red check) -> ready.
  EXPECT_TRUE(IsAllowed(S::kApproved, E::kMergeRefused, S::kReady));
  for (S s :
       {S::kBlocked, S::kReady, S::kRunning, S::kReview, S::kDone, S::kFailed, S::kCancelled}) {
    EXPECT_FALSE(IsAllowed(s, E::kMerge, S::kDone)) << ToString(s);
    EXPECT_FALSE(IsAllowed(s, E::kMergeRefused, S::kReady)) << ToString(s);
  }
  EXPECT_FALSE(IsAllowed(S::kApproved, E::kMergeRefused, S::kFailed));
  EXPECT_FALSE(IsAllowed(S::kRunning, E::kApprove, S::kApproved));  // approve needs a review
  EXPECT_FALSE(IsAllowed(S::kApproved, E::kRequestChanges, S::kReady));
  Status s = CheckTransition("task-abcdefgh", S::kReview, E::kMerge, S::kDone);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cannot merge task task-abcdefgh: it is review");
  EXPECT_EQ(ToString(E::kMergeRefused), "send back from a refused merge");
  EXPECT_EQ(ToString(E::kForceReview), "force review");
}

TEST(TaskTransitions, OnlyTerminalStatesAreTerminal) {
  EXPECT_TRUE(IsTerminal(S::kDone));
  EXPECT_TRUE(IsTerminal(S::kFailed));
  EXPECT_TRUE(IsTerminal(S::kCancelled));
  EXPECT_FALSE(IsTerminal(S::kReview));
  EXPECT_FALSE(IsTerminal(S::kBlocked));
}

TEST(Backoff, DoublesFromOneSecondAndCapsAtFiveMinutes) {
  BackoffPolicy p;
  p.jitter = 0;
  EXPECT_EQ(RetryDelay(p, 1, 0.5), 1000);
  EXPECT_EQ(RetryDelay(p, 2, 0.5), 2000);
  EXPECT_EQ(RetryDelay(p, 3, 0.5), 4000);
  EXPECT_EQ(RetryDelay(p, 30, 0.5), 300'000);
}

TEST(Backoff, JitterStaysWithinTwentyPercent) {
  BackoffPolicy p;
  EXPECT_EQ(RetryDelay(p, 3, 0.0), 3200);
  EXPECT_EQ(RetryDelay(p, 3, 0.5), 4000);
  EXPECT_LT(RetryDelay(p, 3, 0.999), 4800);
}

TEST(Claim, EndReasonsAndStatusesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(EndReason::kAsked); ++i) {
    auto r = static_cast<EndReason>(i);
    EXPECT_EQ(*ParseEndReason(ToString(r)), r);
  }
  for (auto s : {ClaimStatus::kActive, ClaimStatus::kReleased, ClaimStatus::kExpired,
                 ClaimStatus::kCompleted}) {
    EXPECT_EQ(*ParseClaimStatus(ToString(s)), s);
  }
}

TEST(Claim, AQuestionIsNotAnAttemptUsedUp) {
  EXPECT_EQ(ToString(EndReason::kAsked), "asked");
  EXPECT_FALSE(CountsAsAttempt(EndReason::kAsked));
  EXPECT_FALSE(CountsAsAttempt(EndReason::kShutdown));
  EXPECT_TRUE(CountsAsAttempt(EndReason::kFailed));
}

TEST(Claim, IsExpiredAtTheLeaseDeadline) {
  Claim c;
  c.lease_expires_at = 1000;
  EXPECT_FALSE(IsExpired(c, Moment{999}));
  EXPECT_TRUE(IsExpired(c, Moment{1000}));
}

TEST(Claim, AStepOfTheWallClockDoesNotExpireALeaseThatHasASteadyReading) {
  Claim c;
  c.lease_ms = 1000;
  RenewLease(c, Moment{5'000, 70});
  EXPECT_EQ(c.lease_expires_at, 6'000);
  EXPECT_EQ(c.lease_expires_steady, 1'070);
  // The wall clock stepped two minutes ahead; the steady one moved 500 ms.
  EXPECT_FALSE(IsExpired(c, Moment{125'500, 570}));
  EXPECT_EQ(LeaseLeft(c, Moment{125'500, 570}), 500);
  EXPECT_TRUE(IsExpired(c, Moment{125'500, 1'070}));
  // A judge without a steady reading (PostgreSQL's server clock) goes by the wall clock.
  EXPECT_TRUE(IsExpired(c, Moment{6'000}));
}

}  // namespace
}  // namespace tx
