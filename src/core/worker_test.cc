#include "core/worker.h"

#include <gtest/gtest.h>

#include "core/ids.h"

namespace tx {
namespace {

Worker WithHeartbeat(Millis last, Millis interval = 1000) {
  Worker w;
  w.heartbeat_interval_ms = interval;
  w.last_heartbeat_at = last;
  return w;
}

TEST(WorkerFreshness, AMissingHeartbeatIsStaleNeverFresh) {
  EXPECT_TRUE(IsStale(WithHeartbeat(0), Moment{1}));
}

TEST(WorkerFreshness, StaleOnceTwoPromisedIntervalsPass) {
  Worker w = WithHeartbeat(10'000, 1000);
  EXPECT_FALSE(IsStale(w, Moment{10'000}));
  EXPECT_FALSE(IsStale(w, Moment{11'999}));
  EXPECT_TRUE(IsStale(w, Moment{12'000}));
}

TEST(WorkerFreshness, ABusyWorkerIsJudgedByTheIntervalItPromisesWhileBusy) {
  Worker w = WithHeartbeat(10'000, 1000);
  w.busy_heartbeat_interval_ms = 500;
  EXPECT_EQ(PromisedIntervalMs(w), 1000);  // idle
  EXPECT_FALSE(IsStale(w, Moment{11'999}));
  w.status = WorkerStatus::kBusy;
  EXPECT_EQ(PromisedIntervalMs(w), 500);
  EXPECT_EQ(StaleAfterMs(w), 1000);
  EXPECT_FALSE(IsStale(w, Moment{10'999}));
  EXPECT_TRUE(IsStale(w, Moment{11'000}));
  // Paused or stopping, its agent frozen or finishing: the heartbeat interval again.
  w.status = WorkerStatus::kPaused;
  EXPECT_FALSE(IsStale(w, Moment{11'000}));
  // No busy interval (a hand-run claimer, a worker of an older version): the heartbeat interval.
  w.status = WorkerStatus::kBusy;
  w.busy_heartbeat_interval_ms = 0;
  EXPECT_EQ(PromisedIntervalMs(w), 1000);
  EXPECT_FALSE(IsStale(w, Moment{11'999}));
}

TEST(WorkerFreshness, SilenceIsJudgedOnTheSteadyClockWhenBothSidesHaveIt) {
  Worker w = WithHeartbeat(0, 1000);
  RecordBeat(w, Moment{10'000, 500});
  // The wall clock stepped two minutes ahead; 300 ms passed.
  EXPECT_FALSE(IsStale(w, Moment{130'300, 800}));
  EXPECT_EQ(SilentFor(w, Moment{130'300, 800}), 300);
  EXPECT_TRUE(IsStale(w, Moment{130'300, 2'500}));
  // Stepped back: still judged by what really passed.
  EXPECT_TRUE(IsStale(w, Moment{1'000, 2'600}));
  // No steady reading on one side: the wall clock.
  EXPECT_TRUE(IsStale(w, Moment{12'000}));
  w.beat_steady.reset();
  EXPECT_FALSE(IsStale(w, Moment{11'000, 99'999}));
}

TEST(WorkerStatus, LiveStatesAreThoseThatMayHoldWork) {
  EXPECT_TRUE(IsLive(WorkerStatus::kIdle));
  EXPECT_TRUE(IsLive(WorkerStatus::kBusy));
  EXPECT_TRUE(IsLive(WorkerStatus::kPaused));
  EXPECT_TRUE(IsLive(WorkerStatus::kStopping));
  EXPECT_FALSE(IsLive(WorkerStatus::kStopped));
  EXPECT_FALSE(IsLive(WorkerStatus::kDead));
  EXPECT_FALSE(ParseWorkerStatus("zombie").ok());
}

TEST(Ids, HaveTheirPrefixAndEightBase32Chars) {
  std::string t = NewTaskId();
  std::string w = NewWorkerId();
  EXPECT_TRUE(LooksLikeTaskId(t)) << t;
  EXPECT_TRUE(LooksLikeWorkerId(w)) << w;
  EXPECT_FALSE(LooksLikeTaskId("task-ABCDEFGH"));
  EXPECT_FALSE(LooksLikeTaskId("task-abc"));
  EXPECT_NE(NewTaskId(), NewTaskId());
}

}  // namespace
}  // namespace tx
