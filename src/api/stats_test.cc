#include "api/stats.h"

#include <gtest/gtest.h>

namespace tx::api {
namespace {

constexpr Millis kNow = 1'800'000'000'000 + 30'000;  // 30 s into a minute

Event At(const std::string& type, Millis at) {
  Event e;
  e.type = type;
  e.at = at;
  return e;
}

TEST(StatsTest, ThroughputIsCountedPerMinuteOfTheLastHourByTheEventsTimes) {
  Stats s;
  s.Add(At("task.done", kNow - 2 * 60 * 60'000));  // two hours ago: never shown
  s.Add(At("task.done", kNow - 5 * 60'000));
  s.Add(At("task.done", kNow - 5 * 60'000 + 1));
  s.Add(At("task.failed", kNow - 1'000));
  s.Add(At("task.claimed", kNow - 1'000));  // not an outcome
  nlohmann::json j = s.Render(kNow);
  ASSERT_EQ(j["throughput"].size(), 60u);
  EXPECT_EQ(j["throughput"].back()["at"], kNow - 30'000);  // the current minute
  EXPECT_EQ(j["throughput"].back()["failed"], 1);
  EXPECT_EQ(j["throughput"][60 - 1 - 5]["done"], 2);
  std::int64_t done = 0;
  for (const auto& b : j["throughput"]) done += b["done"].get<std::int64_t>();
  EXPECT_EQ(done, 2);
  EXPECT_EQ(j["from"], kNow - 60 * 60'000);
  EXPECT_EQ(j["to"], kNow);
}

TEST(StatsTest, DepthSamplesGroupTheStatusesAndAgeOutAfterAnHour) {
  Stats s;
  s.Sample({{TaskStatus::kReady, "default", 3},
            {TaskStatus::kReady, "gpu", 2},
            {TaskStatus::kRunning, "default", 1},
            {TaskStatus::kApproved, "default", 1},
            {TaskStatus::kReview, "default", 1},
            {TaskStatus::kDone, "default", 9}},
           kNow - 61 * 60'000);
  s.Sample({{TaskStatus::kReady, "default", 4}, {TaskStatus::kBlocked, "default", 2}}, kNow);
  nlohmann::json depth = s.Render(kNow)["depth"];
  ASSERT_EQ(depth.size(), 1u);
  EXPECT_EQ(
      depth[0],
      nlohmann::json({{"at", kNow}, {"ready", 4}, {"running", 0}, {"blocked", 2}, {"review", 0}}));
  Stats t;
  t.Sample({{TaskStatus::kReady, "default", 3},
            {TaskStatus::kReady, "gpu", 2},
            {TaskStatus::kApproved, "default", 1},
            {TaskStatus::kReview, "default", 1}},
           kNow);
  nlohmann::json one = t.Render(kNow)["depth"][0];
  EXPECT_EQ(one["ready"], 5);
  EXPECT_EQ(one["review"], 2);
}

}  // namespace
}  // namespace tx::api
