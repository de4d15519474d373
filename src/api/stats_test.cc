#include "api/stats.h"

#include <gtest/gtest.h>

namespace tx::api {
namespace {

constexpr Millis kNow = 1'800'000'000'000 + 30'000;  // 30 s into a minute

StoredEvent At(const std::string& type, Millis at) {
  StoredEvent e;
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

// Issue 24: the chart over a day and a week: wider bars from the same minutes, kept a week, and
// the queue's depth thinned to a point per step.
TEST(StatsTest, ADayAndAWeekSumTheMinutesIntoWiderBarsAndThinTheDepth) {
  auto day = ParseStatsRange("24h");
  auto week = ParseStatsRange("7d");
  ASSERT_TRUE(day.ok() && week.ok());
  EXPECT_FALSE(ParseStatsRange("2h").ok());
  EXPECT_EQ(ParseStatsRange("2h").error().message(),
            "parameter 'range' must be 1h, 24h or 7d, not '2h'");
  Stats s;
  constexpr Millis kHour = 60 * 60'000;
  s.Add(At("task.done", kNow - 8 * 24 * kHour));  // past the week: never shown
  s.Add(At("task.done", kNow - 3 * 24 * kHour));  // in the week, not the day
  s.Add(At("task.done", kNow - 5 * kHour));
  s.Add(At("task.failed", kNow - 5 * kHour + 60'000));  // the same quarter hour
  s.Add(At("task.done", kNow - 1'000));
  auto total = [](const nlohmann::json& j, const char* key) {
    std::int64_t n = 0;
    for (const auto& b : j["throughput"]) n += b[key].get<std::int64_t>();
    return n;
  };
  nlohmann::json d = s.Render(kNow, *day);
  EXPECT_EQ(d["range"], "24h");
  EXPECT_EQ(d["bucket_ms"], 15 * 60'000);
  ASSERT_EQ(d["throughput"].size(), 96u);
  EXPECT_EQ(total(d, "done"), 2);
  EXPECT_EQ(total(d, "failed"), 1);
  EXPECT_EQ(d["from"], kNow - 24 * kHour);
  int together = 0;
  for (const auto& b : d["throughput"]) together += b["done"] == 1 && b["failed"] == 1;
  EXPECT_EQ(together, 1);
  nlohmann::json w = s.Render(kNow, *week);
  EXPECT_EQ(w["bucket_ms"], 2 * kHour);
  ASSERT_EQ(w["throughput"].size(), 84u);
  EXPECT_EQ(total(w, "done"), 3);
  EXPECT_EQ(total(s.Render(kNow), "done"), 1);  // the hour

  // A sample every 10 s for two hours: every one of the last hour; a point per 5 minutes of the
  // day (the last of each).
  Stats t;
  for (Millis at = kNow - 2 * kHour + 10'000; at <= kNow; at += 10'000) {
    t.Sample({{TaskStatus::kReady, "default", at / 10'000 % 100}}, at);
  }
  EXPECT_EQ(t.Render(kNow)["depth"].size(), 360u);
  nlohmann::json thin = t.Render(kNow, *day)["depth"];
  EXPECT_GE(thin.size(), 24u);
  EXPECT_LE(thin.size(), 25u);
  EXPECT_EQ(thin.back()["at"], kNow);
}

}  // namespace
}  // namespace tx::api
