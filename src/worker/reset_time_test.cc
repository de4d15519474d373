#include "worker/reset_time.h"

#include <gtest/gtest.h>

namespace tx::worker {
namespace {

// 2026-11-26 18:00:00 UTC.
constexpr Millis kNow = 1'795'716'000'000;

agent::ResetHint At(int hour, int minute, const std::string& zone) {
  agent::ResetHint h;
  h.hour = hour;
  h.minute = minute;
  h.zone = zone;
  return h;
}

TEST(ResolveReset, AnEpochOrADelayIsTakenAsItIs) {
  agent::ResetHint epoch;
  epoch.at = kNow + 60'000;
  EXPECT_EQ(ResolveReset(epoch, kNow), kNow + 60'000);
  epoch.at = kNow - 1;
  EXPECT_EQ(ResolveReset(epoch, kNow), 0);  // past: no reset to wait for
  agent::ResetHint after;
  after.after_ms = 90'000;
  EXPECT_EQ(ResolveReset(after, kNow), kNow + 90'000);
  EXPECT_EQ(ResolveReset(agent::ResetHint{}, kNow), 0);
}

TEST(ResolveReset, ATimeOfDayIsItsNextOccurrenceInItsZone) {
  // 11pm in New York (UTC-5 in November) is 04:00 UTC the next day.
  EXPECT_EQ(ResolveReset(At(23, 0, "America/New_York"), kNow), kNow + 10 * 3'600'000);
  // 5am UTC has passed today: tomorrow's.
  EXPECT_EQ(ResolveReset(At(5, 0, "UTC"), kNow), kNow + 11 * 3'600'000);
  EXPECT_EQ(ResolveReset(At(18, 30, "Etc/UTC"), kNow), kNow + 30 * 60'000);
}

TEST(ResolveReset, AZoneTheSystemDoesNotKnowGivesNoResetRatherThanAWrongOne) {
  EXPECT_EQ(ResolveReset(At(23, 0, "PST"), kNow), 0);
  EXPECT_EQ(ResolveReset(At(23, 0, "Mars/Olympus_Mons"), kNow), 0);
  EXPECT_EQ(ResolveReset(At(23, 0, "../../etc/passwd"), kNow), 0);
}

}  // namespace
}  // namespace tx::worker
