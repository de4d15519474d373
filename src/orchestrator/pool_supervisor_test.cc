#include "orchestrator/pool_supervisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <ostream>
#include <random>

namespace tx::orchestrator {

// So that a failing comparison of actions shows them.
void PrintTo(const Action& a, std::ostream* os) {
  const char* kinds[] = {"start", "drain", "failed", "no-capacity"};
  *os << "{" << kinds[static_cast<int>(a.kind)] << " " << a.slot;
  if (a.pid != 0) *os << " pid " << a.pid;
  if (!a.reason.empty()) *os << " '" << a.reason << "'";
  *os << "}";
}

namespace {

using Actions = std::vector<Action>;

constexpr Millis kT0 = 1'700'000'000'000;

Action Start(const std::string& slot) { return {Action::Kind::kStart, slot}; }
Action Drain(const std::string& slot, pid_t pid) { return {Action::Kind::kDrain, slot, pid}; }
Action Failed(const std::string& slot, const std::string& reason) {
  return {Action::Kind::kFailed, slot, 0, reason};
}
Action NoCapacity(const std::string& reason) { return {Action::Kind::kNoCapacity, "", 0, reason}; }

PoolPolicy MaxWorkers(int n) {
  PoolPolicy p;
  p.max_workers = n;
  return p;
}

// Plays the orchestrator's loop with made-up times and pids: no process is ever started.
class PoolSupervisorTest : public ::testing::Test {
 protected:
  void Make(int desired, PoolPolicy policy = {}) { pool_.emplace(policy, desired, now_); }
  PoolSupervisor& pool() { return *pool_; }

  Actions Step() { return pool_->Step(now_); }
  // Steps, and reports every start it asks for as done, with a fresh pid.
  Actions StepAndStart() {
    Actions actions = Step();
    for (const auto& a : actions) {
      if (a.kind == Action::Kind::kStart) pool_->Started(a.slot, next_pid_++, now_);
    }
    return actions;
  }
  void Advance(Millis ms) { now_ += ms; }
  // The slot's worker exits before it registered (a failure to start) ...
  void Exit(const std::string& slot, const std::string& how = "exited 2") {
    pool_->Exited(slot, how, PoolSupervisor::Reached::kNothing, now_);
  }
  // ... or after (a crash).
  void Crash(const std::string& slot, const std::string& how = "killed by SIGKILL") {
    pool_->Exited(slot, how, PoolSupervisor::Reached::kRegistered, now_);
  }
  // The slot's worker crashes after running `ran_ms`, then its restart is started when due.
  void CrashAndRestart(const std::string& slot, Millis ran_ms = 0) {
    Advance(ran_ms);
    Exit(slot);
    ASSERT_EQ(S(slot).state, SlotState::kBackoff);
    now_ = S(slot).next_start_at;
    ASSERT_EQ(StepAndStart(), Actions{Start(slot)});
  }

  const Slot& S(const std::string& slot) {
    const Slot* s = pool_->Find(slot);
    EXPECT_NE(s, nullptr) << slot;
    static const Slot kNone;
    return s != nullptr ? *s : kNone;
  }
  std::vector<std::string> Names() {
    std::vector<std::string> names;
    for (const auto& s : pool_->slots()) names.push_back(s.name);
    return names;
  }

  Millis now_ = kT0;
  pid_t next_pid_ = 1000;
  std::optional<PoolSupervisor> pool_;
};

// A config read again (SIGHUP): a lowered cap stops nothing that runs, only what would start.
TEST_F(PoolSupervisorTest, ANewPolicyDecidesFromNowOnAndStopsNothing_Issue24) {
  Make(3);
  ASSERT_EQ(StepAndStart().size(), 3u);
  pool().SetPolicy(MaxWorkers(2));
  EXPECT_TRUE(Step().empty()) << "the three running are left alone";
  EXPECT_EQ(pool().live(), 3);
  pool().Scale(4, now_);
  EXPECT_TRUE(Step().empty()) << "over the cap: slot-4 waits";
  EXPECT_EQ(S("slot-4").state, SlotState::kPending);
  pool().SetPolicy(MaxWorkers(4));
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-4")});
}

TEST_F(PoolSupervisorTest, StartsTheInitialSlotsLowestFirstAndRunsThemOnceStarted) {
  Make(3);
  EXPECT_EQ(Names(), (std::vector<std::string>{"slot-1", "slot-2", "slot-3"}));
  EXPECT_EQ(Step(), (Actions{Start("slot-1"), Start("slot-2"), Start("slot-3")}));
  EXPECT_EQ(S("slot-2").state, SlotState::kStarting);
  EXPECT_EQ(pool().live(), 3);  // starts in flight hold capacity

  pool().Started("slot-2", 42, now_ + 5);
  EXPECT_EQ(S("slot-2").state, SlotState::kRunning);
  EXPECT_EQ(S("slot-2").pid, 42);
  EXPECT_EQ(S("slot-2").started_at, now_ + 5);
  EXPECT_EQ(pool().FindByPid(42), &S("slot-2"));
  EXPECT_EQ(pool().FindByPid(43), nullptr);
}

TEST_F(PoolSupervisorTest, StepTwiceAtTheSameTimeReturnsNothingNew) {
  Make(2);
  EXPECT_EQ(Step().size(), 2u);
  EXPECT_TRUE(Step().empty());
  pool().Started("slot-1", 7, now_);
  pool().Scale(0, now_);
  EXPECT_EQ(Step(), Actions{Drain("slot-1", 7)});
  EXPECT_TRUE(Step().empty());
}

TEST_F(PoolSupervisorTest, StartsNoMoreThanMaxWorkersAndGivesUpOnTheRestAtTheCapacityDeadline) {
  Make(12, MaxWorkers(10));
  EXPECT_EQ(StepAndStart().size(), 10u);
  EXPECT_EQ(S("slot-11").state, SlotState::kPending);
  EXPECT_EQ(S("slot-12").state, SlotState::kPending);
  EXPECT_EQ(pool().NextDeadline(), kT0 + 30'000);

  Advance(29'999);
  EXPECT_TRUE(Step().empty());
  Advance(1);
  EXPECT_EQ(Step(), Actions{NoCapacity("no capacity: 10 of 12 workers running (max-workers 10)")});
  EXPECT_EQ(pool().desired(), 10);
  EXPECT_EQ(pool().slots().size(), 10u);
  EXPECT_EQ(pool().Find("slot-11"), nullptr);
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);
}

TEST_F(PoolSupervisorTest, APendingSlotStartsWhenCapacityFreesBeforeItsDeadline) {
  Make(3, MaxWorkers(2));
  StepAndStart();
  pool().Scale(3, now_);  // nothing changes: slot-3 is still waiting
  Advance(10'000);
  pool().Scale(1, now_);
  EXPECT_EQ(Step(), Actions{Drain("slot-2", 1001)});
  pool().Scale(3, now_);
  Exit("slot-2", "terminated");
  // slot-2 is wanted again and its own exit freed capacity; slot-3 waits behind it.
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-2")});
  Exit("slot-1");
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-3")});  // slot-1 is in backoff, not yet due
  EXPECT_EQ(pool().desired(), 3);
}

TEST_F(PoolSupervisorTest, ARestartWaitsForCapacityAndNeverGivesUpForIt) {
  Make(3, MaxWorkers(2));
  StepAndStart();
  Exit("slot-1");
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-3")});  // the pending slot takes the capacity
  Advance(60'000);
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(S("slot-1").state, SlotState::kBackoff);
  EXPECT_EQ(pool().desired(), 3);
  Exit("slot-3");
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")});
}

TEST_F(PoolSupervisorTest, RestartsAfterAnExitWithABackoffThatDoublesUpToTheCap) {
  PoolPolicy policy;
  policy.max_restarts = 1000;  // only the backoff is looked at here
  Make(1, policy);
  StepAndStart();
  const Millis expected[] = {100,   200,    400,    800,    1'600, 3'200,
                             6'400, 12'800, 25'600, 30'000, 30'000};
  int restarts = 0;
  for (Millis delay : expected) {
    Exit("slot-1");
    EXPECT_EQ(S("slot-1").state, SlotState::kBackoff);
    EXPECT_EQ(S("slot-1").next_start_at, now_ + delay);
    EXPECT_EQ(S("slot-1").restarts, ++restarts);
    EXPECT_EQ(S("slot-1").last_exit, "exited 2");
    Advance(delay - 1);
    EXPECT_TRUE(Step().empty()) << delay;
    Advance(1);
    EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")}) << delay;
  }
}

TEST_F(PoolSupervisorTest, AWorkerThatRanStableAfterMsResetsTheBackoff) {
  PoolPolicy policy;
  policy.max_restarts = 1000;
  Make(1, policy);
  StepAndStart();
  CrashAndRestart("slot-1");  // 100
  CrashAndRestart("slot-1");  // 200
  CrashAndRestart("slot-1");  // 400

  Advance(59'999);  // just short of stable: the backoff keeps doubling
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 800);
  now_ = S("slot-1").next_start_at;
  StepAndStart();

  Advance(60'000);
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 100);
  now_ = S("slot-1").next_start_at;
  StepAndStart();
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 200);
}

TEST_F(PoolSupervisorTest, AStartThatFailsCountsAsAnExit) {
  Make(1);
  EXPECT_EQ(Step(), Actions{Start("slot-1")});
  Exit("slot-1", "spawn 'tx': No such file or directory");  // never Started: pid 0
  EXPECT_EQ(S("slot-1").state, SlotState::kBackoff);
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 100);
  EXPECT_EQ(S("slot-1").recent_exits.size(), 1u);
  EXPECT_EQ(pool().live(), 0);
}

TEST_F(PoolSupervisorTest, ACrashLoopFailsTheSlotAfterMaxRestartsWithinTheWindowAndIsReportedOnce) {
  Make(2);
  StepAndStart();
  for (int i = 0; i < 5; ++i) CrashAndRestart("slot-1", 1'000);
  Advance(1'000);
  Exit("slot-1", "exited 2");  // the 6th exit within a minute
  const std::string why = "6 exits within 1m before registering; last: exited 2";
  EXPECT_EQ(S("slot-1").state, SlotState::kFailed);
  EXPECT_EQ(S("slot-1").failure, why);
  EXPECT_EQ(S("slot-1").restarts, 5);

  EXPECT_EQ(Step(), Actions{Failed("slot-1", why)});
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(S("slot-2").state, SlotState::kRunning);
  EXPECT_EQ(S("slot-2").restarts, 0);
  EXPECT_EQ(pool().live(), 1);
}

TEST_F(PoolSupervisorTest, AFailedSlotIsTriedAgainAfterACoolDownThatDoublesToFifteenMinutes) {
  Make(1);
  StepAndStart();
  Millis expected = 60'000;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 5; ++i) CrashAndRestart("slot-1", 1'000);
    Advance(1'000);
    Exit("slot-1");
    ASSERT_EQ(S("slot-1").state, SlotState::kFailed) << round;
    EXPECT_EQ(S("slot-1").next_start_at, now_ + expected) << round;
    EXPECT_EQ(pool().NextDeadline(), now_ + expected);
    EXPECT_EQ(Step(), Actions{Failed("slot-1", S("slot-1").failure)});
    Advance(expected - 1);
    EXPECT_TRUE(Step().empty()) << "still cooling down";
    Advance(1);
    EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")}) << round;
    EXPECT_EQ(S("slot-1").state, SlotState::kRunning);
    EXPECT_TRUE(S("slot-1").failure.empty());
    expected = std::min<Millis>(expected * 2, 15 * 60'000);  // 1m 2m 4m 8m 15m 15m
  }
  // A worker that then runs for a while resets the cool-down.
  CrashAndRestart("slot-1", 60'000);
  for (int i = 0; i < 4; ++i) CrashAndRestart("slot-1", 1'000);
  Advance(1'000);
  Exit("slot-1");
  ASSERT_EQ(S("slot-1").state, SlotState::kFailed);
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 60'000);
}

TEST_F(PoolSupervisorTest, AWorkerKilledAfterItRegisteredIsACrashWithBackoffNeverAFailure) {
  Make(1);
  StepAndStart();
  // Killed every 300 ms (chaos): it backs off, doubling to the cap, and is never given up on.
  for (int i = 0; i < 40; ++i) {
    Advance(300);
    Crash("slot-1");
    ASSERT_EQ(S("slot-1").state, SlotState::kBackoff) << i;
    EXPECT_LE(S("slot-1").next_start_at - now_, 30'000);
    now_ = S("slot-1").next_start_at;
    ASSERT_EQ(StepAndStart(), Actions{Start("slot-1")});
  }
  EXPECT_EQ(S("slot-1").restarts, 40);
  EXPECT_TRUE(S("slot-1").recent_exits.empty());
  // Once it has run for a while, the next crash restarts it quickly again.
  Advance(60'000);
  Crash("slot-1");
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 100);
}

TEST_F(PoolSupervisorTest, ExitsSpreadBeyondTheWindowNeverFailTheSlot) {
  PoolPolicy policy;
  policy.max_restarts = 2;
  policy.restart_window_ms = 10'000;
  policy.backoff_max_ms = 100;
  Make(1, policy);
  StepAndStart();
  // One exit every ~6 s: never more than two inside any 10 s.
  for (int i = 0; i < 20; ++i) CrashAndRestart("slot-1", 6'000);
  EXPECT_EQ(S("slot-1").state, SlotState::kRunning);
  EXPECT_EQ(S("slot-1").restarts, 20);
  EXPECT_LE(S("slot-1").recent_exits.size(), 2u);

  // The same policy with exits every 3 s does fail, on the third exit.
  CrashAndRestart("slot-1", 20'000);
  CrashAndRestart("slot-1", 3'000);
  Advance(3'000);
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").state, SlotState::kFailed);
  EXPECT_EQ(S("slot-1").failure, "3 exits within 10s before registering; last: exited 2");
}

TEST_F(PoolSupervisorTest, ScalingUpAddsPendingSlotsThatStart) {
  Make(2);
  StepAndStart();
  Advance(1'000);
  pool().Scale(4, now_);
  EXPECT_EQ(pool().desired(), 4);
  EXPECT_EQ(S("slot-3").state, SlotState::kPending);
  EXPECT_EQ(S("slot-4").pending_deadline, now_ + 30'000);
  EXPECT_EQ(StepAndStart(), (Actions{Start("slot-3"), Start("slot-4")}));
  EXPECT_EQ(pool().live(), 4);
}

TEST_F(PoolSupervisorTest, ScalingDownDrainsTheSurplusHighestFirstAndRemovesItOnExit) {
  Make(4);
  StepAndStart();  // pids 1000..1003
  pool().Scale(2, now_);
  EXPECT_EQ(Step(), (Actions{Drain("slot-4", 1003), Drain("slot-3", 1002)}));
  EXPECT_EQ(S("slot-3").state, SlotState::kDraining);
  EXPECT_EQ(pool().live(), 4);  // draining workers still hold capacity
  EXPECT_EQ(pool().FindByPid(1003), &S("slot-4"));

  Exit("slot-4", "terminated");
  EXPECT_EQ(pool().Find("slot-4"), nullptr);
  Advance(60'000);
  EXPECT_TRUE(Step().empty());  // not restarted
  Exit("slot-3", "terminated");
  EXPECT_EQ(Names(), (std::vector<std::string>{"slot-1", "slot-2"}));
  EXPECT_EQ(pool().live(), 2);
  EXPECT_EQ(pool().desired(), 2);
}

TEST_F(PoolSupervisorTest, ScalingDownRemovesSurplusSlotsWithoutAProcessAtOnce) {
  PoolPolicy policy = MaxWorkers(2);
  policy.max_restarts = 0;
  Make(4, policy);
  StepAndStart();
  Exit("slot-1");  // failed at once (max_restarts 0)
  Exit("slot-2");
  EXPECT_EQ(Step(),
            (Actions{Failed("slot-1", "1 exits within 1m before registering; last: exited 2"),
                     Failed("slot-2", "1 exits within 1m before registering; last: exited 2"),
                     Start("slot-3"), Start("slot-4")}));
  pool().Started("slot-3", 77, now_);
  Exit("slot-4");  // slot-4 failed, not yet reported
  pool().Scale(0, now_);
  EXPECT_EQ(Names(), std::vector<std::string>{"slot-3"});
  EXPECT_EQ(Step(), Actions{Drain("slot-3", 77)});  // no report for the removed slot-4
}

TEST_F(PoolSupervisorTest, AStartInFlightWhenScaledAwayIsDrainedOnceStarted) {
  Make(3);
  Step();
  pool().Started("slot-1", 11, now_);
  pool().Scale(1, now_);
  EXPECT_TRUE(Step().empty());  // slot-2 and slot-3 have no pid yet
  EXPECT_EQ(S("slot-2").state, SlotState::kStarting);
  pool().Started("slot-2", 12, now_);
  EXPECT_EQ(Step(), Actions{Drain("slot-2", 12)});
  Exit("slot-3", "spawn failed");  // its start failed: gone, not restarted
  EXPECT_EQ(pool().Find("slot-3"), nullptr);
  EXPECT_TRUE(Step().empty());
}

TEST_F(PoolSupervisorTest, NeverTwoProcessesForOneSlotWhenScalingDownThenUpQuickly) {
  Make(3);
  StepAndStart();  // slot-3 is pid 1002
  pool().Scale(2, now_);
  EXPECT_EQ(Step(), Actions{Drain("slot-3", 1002)});
  pool().Scale(3, now_);
  EXPECT_TRUE(Step().empty());  // slot-3 still has its draining process
  EXPECT_EQ(S("slot-3").state, SlotState::kDraining);
  EXPECT_EQ(S("slot-3").pid, 1002);
  EXPECT_EQ(pool().slots().size(), 3u);

  Exit("slot-3", "terminated");
  // Started again at once: no backoff, and nothing counted against the slot (we stopped it).
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-3")});
  EXPECT_EQ(S("slot-3").recent_exits.size(), 0u);
  EXPECT_EQ(S("slot-3").restarts, 0);

  // Down and up again before any Step: the worker is simply kept.
  pool().Scale(2, now_);
  pool().Scale(3, now_);
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(S("slot-3").state, SlotState::kRunning);
}

TEST_F(PoolSupervisorTest, ScaleRetriesAFailedSlotWithAFreshHistory) {
  Make(2);
  StepAndStart();
  for (int i = 0; i < 5; ++i) CrashAndRestart("slot-1");
  Exit("slot-1");
  ASSERT_EQ(S("slot-1").state, SlotState::kFailed);
  pool().Scale(2, now_);  // same size: only the retry
  EXPECT_EQ(S("slot-1").state, SlotState::kPending);
  EXPECT_TRUE(S("slot-1").recent_exits.empty());
  EXPECT_TRUE(S("slot-1").failure.empty());
  EXPECT_EQ(S("slot-1").restarts, 0);
  EXPECT_EQ(S("slot-1").backoff_ms, 100);
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")});  // the unreported failure is moot
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").next_start_at, now_ + 100);
}

TEST_F(PoolSupervisorTest, RetryFailedRestartsEveryFailedSlot) {
  PoolPolicy policy;
  policy.max_restarts = 0;
  Make(3, policy);
  StepAndStart();
  Exit("slot-1");
  Exit("slot-3");
  EXPECT_EQ(Step().size(), 2u);  // two failures
  pool().RetryFailed(now_);
  EXPECT_EQ(StepAndStart(), (Actions{Start("slot-1"), Start("slot-3")}));
  Exit("slot-3");  // a fresh history: this exit fails it again, and it is told again
  EXPECT_EQ(Step(),
            Actions{Failed("slot-3", "1 exits within 1m before registering; last: exited 2")});
}

TEST_F(PoolSupervisorTest, AnAdoptedOrphanHoldsItsSlotUntilItExitsThenStartsWithoutBackoff) {
  Make(2, MaxWorkers(2));
  pool().Adopt(1, 500, now_);
  pool().Adopt(3, 501, now_);  // beyond desired: ignored
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-2")});
  EXPECT_EQ(S("slot-1").state, SlotState::kOrphan);
  EXPECT_EQ(pool().FindByPid(500), &S("slot-1"));
  EXPECT_EQ(pool().FindByPid(501), nullptr);
  EXPECT_EQ(pool().live(), 2);

  Advance(5'000);
  EXPECT_TRUE(Step().empty());
  Exit("slot-1", "exited (adopted worker)");
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")});
  EXPECT_TRUE(S("slot-1").recent_exits.empty());
  EXPECT_EQ(S("slot-1").restarts, 0);
}

TEST_F(PoolSupervisorTest, AnOrphanCountsAgainstMaxWorkers) {
  Make(2, MaxWorkers(1));
  pool().Adopt(2, 500, now_);
  EXPECT_TRUE(Step().empty());
  Exit("slot-2", "exited (adopted worker)");
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-1")});  // lowest index first
}

TEST_F(PoolSupervisorTest, StopAllDrainsEveryRunningSlotAndStartsNothing) {
  Make(4);
  pool().Adopt(4, 900, now_);
  EXPECT_EQ(Step(), (Actions{Start("slot-1"), Start("slot-2"), Start("slot-3")}));
  pool().Started("slot-1", 101, now_);
  pool().Started("slot-2", 102, now_);
  Exit("slot-2");  // in backoff

  pool().StopAll();
  EXPECT_TRUE(pool().stopping());
  EXPECT_EQ(pool().Find("slot-2"), nullptr);
  EXPECT_EQ(Step(), Actions{Drain("slot-1", 101)});  // the orphan drains on its own
  pool().Started("slot-3", 103, now_);
  EXPECT_EQ(Step(), Actions{Drain("slot-3", 103)});
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);

  Exit("slot-1", "terminated");
  Exit("slot-3", "terminated");
  Exit("slot-4", "exited (adopted worker)");
  EXPECT_TRUE(pool().slots().empty());
  EXPECT_EQ(pool().live(), 0);
  pool().Scale(5, now_);
  pool().RetryFailed(now_);
  Advance(60'000);
  EXPECT_TRUE(Step().empty());
}

TEST_F(PoolSupervisorTest, NextDeadlineIsNoneWhenEverySlotRuns) {
  Make(2);
  StepAndStart();
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);
}

TEST_F(PoolSupervisorTest, NextDeadlineIsTheEarliestBackoffEndOrCapacityDeadline) {
  Make(3, MaxWorkers(3));
  StepAndStart();
  Advance(1'000);
  pool().Scale(4, now_);  // slot-4 waits for capacity until now + 30 s
  EXPECT_EQ(pool().NextDeadline(), kT0 + 31'000);
  Step();
  Exit("slot-1");  // restarts at now + 100 ...
  Advance(50);
  Exit("slot-2");  // ... and this one at now + 100 as well, later
  EXPECT_EQ(Step(), Actions{Start("slot-4")});
  EXPECT_EQ(pool().NextDeadline(), kT0 + 1'100);
}

TEST_F(PoolSupervisorTest, NextDeadlineLeavesOutADueRestartThatWaitsForCapacity) {
  Make(3, MaxWorkers(2));
  StepAndStart();
  Exit("slot-1");
  StepAndStart();  // slot-3 takes the capacity
  Advance(1'000);
  EXPECT_TRUE(Step().empty());
  // slot-1 is due but cannot start until a worker exits: an event, not a time to wake up at.
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);
}

TEST_F(PoolSupervisorTest, NextDeadlineIsNoneWhileStopping) {
  Make(1);
  StepAndStart();
  Exit("slot-1");
  pool().StopAll();
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);
}

TEST_F(PoolSupervisorTest, OverlappingScaleRequestsGiveUpTogetherWithOneNoCapacity) {
  Make(10, MaxWorkers(10));
  StepAndStart();
  pool().Scale(12, now_);
  Advance(10'000);
  pool().Scale(13, now_);  // the latest request's deadline applies to every waiting slot
  Advance(20'000);
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(pool().NextDeadline(), now_ + 10'000);
  Advance(10'000);
  EXPECT_EQ(Step(), Actions{NoCapacity("no capacity: 10 of 13 workers running (max-workers 10)")});
  EXPECT_EQ(pool().desired(), 10);
  EXPECT_EQ(pool().slots().size(), 10u);
}

TEST_F(PoolSupervisorTest, ASlotThatFindsNoCapacityIsDroppedEvenBelowOneThatStays) {
  PoolPolicy policy = MaxWorkers(2);
  policy.max_restarts = 0;
  Make(3, policy);
  StepAndStart();
  Exit("slot-2");  // failed; slot-3 takes its capacity
  EXPECT_EQ(StepAndStart(),
            (Actions{Failed("slot-2", "1 exits within 1m before registering; last: exited 2"),
                     Start("slot-3")}));
  pool().RetryFailed(now_);
  Advance(30'000);
  EXPECT_EQ(Step(), Actions{NoCapacity("no capacity: 2 of 3 workers running (max-workers 2)")});
  EXPECT_EQ(pool().desired(), 2);
  EXPECT_EQ(Names(), (std::vector<std::string>{"slot-1", "slot-3"}));
  EXPECT_EQ(pool().NextDeadline(), std::nullopt);
  // Growing again takes the lowest free index.
  pool().Scale(3, now_);
  EXPECT_EQ(Names(), (std::vector<std::string>{"slot-1", "slot-2", "slot-3"}));
  Step();                        // no capacity yet
  Exit("slot-3", "terminated");  // with max_restarts 0 it fails, and frees its capacity
  EXPECT_EQ(StepAndStart(),
            (Actions{Failed("slot-3", "1 exits within 1m before registering; last: terminated"),
                     Start("slot-2")}));
}

TEST_F(PoolSupervisorTest, GrowTakesTheLowestFreeIndexAndRetireDrainsOneSlotForGood) {
  Make(3);
  StepAndStart();
  EXPECT_TRUE(pool().Retire(2));
  EXPECT_FALSE(pool().Retire(2));  // no longer wanted
  EXPECT_FALSE(pool().Retire(9));
  EXPECT_EQ(pool().desired(), 2);
  pid_t pid = S("slot-2").pid;
  EXPECT_EQ(Step(), Actions{Drain("slot-2", pid)});
  EXPECT_TRUE(Step().empty());
  Exit("slot-2", "exited 0");
  EXPECT_EQ(Names(), (std::vector<std::string>{"slot-1", "slot-3"}));  // not restarted
  EXPECT_TRUE(Step().empty());
  EXPECT_EQ(pool().Grow(now_), 2);
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-2")});
  EXPECT_EQ(pool().Grow(now_), 4);
  EXPECT_EQ(StepAndStart(), Actions{Start("slot-4")});
  // Scaling down drains the highest wanted slots first.
  pool().Scale(2, now_);
  EXPECT_EQ(Step(), (Actions{Drain("slot-4", S("slot-4").pid), Drain("slot-3", S("slot-3").pid)}));
  // A retired slot without a process goes at once.
  Exit("slot-1");
  EXPECT_EQ(S("slot-1").state, SlotState::kBackoff);
  EXPECT_TRUE(pool().Retire(1));
  EXPECT_EQ(pool().Find("slot-1"), nullptr);
  pool().StopAll();
  EXPECT_EQ(pool().Grow(now_), -1);
}

// Plays random events against the supervisor as the loop would, holding the two promises that
// matter most: one process per slot, and never more than max_workers at once.
TEST_F(PoolSupervisorTest, RandomEventsNeverGiveASlotTwoProcessesNorExceedMaxWorkers) {
  PoolPolicy policy = MaxWorkers(4);
  policy.max_restarts = 3;
  policy.restart_window_ms = 5'000;
  policy.capacity_timeout_ms = 2'000;
  Make(3, policy);
  std::mt19937 rng(12345);
  std::map<std::string, pid_t> processes;  // what "runs", per slot
  std::vector<std::string> starting;
  std::map<Action::Kind, int> seen;
  auto pick = [&](const auto& from) {
    auto it = from.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng));
    return *it;
  };
  for (int i = 0; i < 20'000; ++i) {
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:
        pool().Scale(std::uniform_int_distribution<int>(0, 7)(rng), now_);
        break;
      case 1:
        if (!processes.empty()) {
          std::string slot = pick(processes).first;
          processes.erase(slot);
          Exit(slot);
        }
        break;
      case 2:
        if (!starting.empty()) {
          std::string slot = pick(starting);
          std::erase(starting, slot);
          if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
            Exit(slot, "spawn failed");
          } else {
            ASSERT_EQ(processes.count(slot), 0u) << slot << " would have two processes";
            processes[slot] = next_pid_;
            pool().Started(slot, next_pid_++, now_);
          }
        }
        break;
      case 3:
        pool().RetryFailed(now_);
        break;
      default:
        Advance(std::uniform_int_distribution<int>(0, 400)(rng));
        for (const Action& a : Step()) {
          ++seen[a.kind];
          if (a.kind == Action::Kind::kStart) {
            ASSERT_EQ(processes.count(a.slot), 0u) << a.slot << " started while it runs";
            ASSERT_EQ(std::count(starting.begin(), starting.end(), a.slot), 0) << a.slot;
            starting.push_back(a.slot);
          }
          if (a.kind == Action::Kind::kDrain) {
            ASSERT_EQ(processes.at(a.slot), a.pid);
          }
        }
    }
    ASSERT_LE(static_cast<int>(processes.size() + starting.size()), policy.max_workers);
    ASSERT_EQ(pool().live(), static_cast<int>(processes.size() + starting.size()));
    for (const auto& [slot, pid] : processes) ASSERT_EQ(pool().FindByPid(pid), &S(slot));
  }
  // The walk reached every kind of decision.
  for (auto kind : {Action::Kind::kStart, Action::Kind::kDrain, Action::Kind::kFailed,
                    Action::Kind::kNoCapacity}) {
    EXPECT_GT(seen[kind], 0) << static_cast<int>(kind);
  }
}

}  // namespace
}  // namespace tx::orchestrator
