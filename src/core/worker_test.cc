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
  EXPECT_TRUE(IsStale(WithHeartbeat(0), 1));
}

TEST(WorkerFreshness, StaleOnceTwoPromisedIntervalsPass) {
  Worker w = WithHeartbeat(10'000, 1000);
  EXPECT_FALSE(IsStale(w, 10'000));
  EXPECT_FALSE(IsStale(w, 11'999));
  EXPECT_TRUE(IsStale(w, 12'000));
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
