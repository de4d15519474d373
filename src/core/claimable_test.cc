#include "core/claimable.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

const Moment kNow{100'000, 100'000};

Worker Running(const std::string& name, std::vector<std::string> queues,
               std::vector<std::string> caps, const std::string& slot = "") {
  Worker w;
  w.name = name;
  w.slot = slot;
  w.queues = std::move(queues);
  w.capabilities = std::move(caps);
  w.status = WorkerStatus::kIdle;
  w.heartbeat_interval_ms = 10'000;
  RecordBeat(w, kNow);
  return w;
}

Task Wanting(const std::string& queue, std::vector<std::string> caps,
             const std::string& owner = "") {
  Task t;
  t.queue = queue;
  t.requires_caps = std::move(caps);
  t.owner = owner;
  return t;
}

TEST(WhyNoWorkerCanClaim, NothingWhenSomeRunningWorkerCan) {
  std::vector<Worker> fleet = {Running("a", {"default"}, {}),
                               Running("b", {"default", "gpu-jobs"}, {"gpu", "linux"}, "slot-2")};
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {}), fleet, kNow), std::nullopt);
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("gpu-jobs", {"gpu"}), fleet, kNow), std::nullopt);
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {}, "slot-2"), fleet, kNow), std::nullopt);
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {}, "a"), fleet, kNow), std::nullopt);
}

TEST(WhyNoWorkerCanClaim, NamesTheFirstRequirementNobodyMeets) {
  std::vector<Worker> fleet = {Running("a", {"default"}, {"linux"}),
                               Running("b", {"default"}, {"gpu"})};
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {}), {}, kNow), "no worker is running");
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("nightly", {}), fleet, kNow),
            "no running worker takes queue 'nightly'");
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {"gpu", "tpu"}), fleet, kNow),
            "no running worker of queue 'default' has tpu");
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {"gpu", "linux"}), fleet, kNow),
            "no running worker of queue 'default' has all of gpu, linux");
  EXPECT_EQ(WhyNoWorkerCanClaim(Wanting("default", {"gpu"}, "a"), fleet, kNow),
            "no running worker that could take it is named 'a'");
}

TEST(WhyNoWorkerCanClaim, OnlyFreshWorkersThatMayStillClaimCount) {
  Worker stale = Running("a", {"default"}, {"gpu"});
  stale.beat_steady = kNow.steady.value() - 20'000;  // two intervals without a heartbeat
  Worker stopping = Running("b", {"default"}, {"gpu"});
  stopping.status = WorkerStatus::kStopping;
  Worker dead = Running("c", {"default"}, {"gpu"});
  dead.status = WorkerStatus::kDead;
  Worker paused = Running("d", {"default"}, {"gpu"});
  paused.status = WorkerStatus::kPaused;
  Task t = Wanting("default", {"gpu"});
  EXPECT_EQ(WhyNoWorkerCanClaim(t, {stale, stopping, dead}, kNow), "no worker is running");
  EXPECT_EQ(WhyNoWorkerCanClaim(t, {stale, paused}, kNow), std::nullopt);  // it claims once resumed
}

}  // namespace
}  // namespace tx
