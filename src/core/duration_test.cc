#include "core/duration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <limits>
#include <random>
#include <string>

namespace tx {
namespace {

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(*ParseDuration("250ms"), 250);
  EXPECT_EQ(*ParseDuration("30s"), 30'000);
  EXPECT_EQ(*ParseDuration("5m"), 300'000);
  EXPECT_EQ(*ParseDuration("1h"), 3'600'000);
  EXPECT_EQ(*ParseDuration("2d"), 172'800'000);
  EXPECT_EQ(*ParseDuration("0s"), 0);
}

TEST(Duration, ParsesCompoundDurations) { EXPECT_EQ(*ParseDuration("1h30m15s"), 5'415'000); }

TEST(Duration, RejectsGarbageQuotingIt) {
  for (const char* bad :
       {"", "5", "abc", "5q", "m5", "1.5s", "-3s", "5 s", "30S", "1h 2m", "99999999999999999h"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    std::string quoted = std::string("'").append(bad).append("'");
    EXPECT_NE(r.error().message().find(quoted), std::string::npos) << r.error().message();
  }
}

TEST(Duration, FormatsLargestUnitFirstAndRoundTrips) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(250), "250ms");
  EXPECT_EQ(FormatDuration(90'000), "1m30s");
  EXPECT_EQ(FormatDuration(3'600'000), "1h");
  for (Millis ms : {1, 999, 1000, 61'001, 7'200'000}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(ms)), ms);
  }
}

// Found by fuzz/fuzz_duration (fuzz/regressions/duration/): each part was bounded but not their
// sum, which could overflow or exceed what FormatDuration's output parses back to.
TEST(Duration, RefusesPartsSummingBeyondTheRange) {
  EXPECT_FALSE(ParseDuration("26000000000d26000000000d26000000000d26000000000d26000000000d").ok());
  Millis largest = std::numeric_limits<Millis>::max() / 4;
  EXPECT_EQ(*ParseDuration(FormatDuration(largest)), largest);
  EXPECT_FALSE(ParseDuration(FormatDuration(largest) + "1ms").ok());
}

// Found by fuzz/fuzz_duration: negating the most negative value overflowed.
TEST(Duration, FormatsNegativeValuesDownToTheMostNegative) {
  EXPECT_EQ(FormatDuration(-1500), "-1s500ms");
  EXPECT_EQ(FormatDuration(std::numeric_limits<Millis>::min()), "-2562047788015h12m55s808ms");
}

TEST(Time, FormatsIso8601UtcWithMillis) {
  EXPECT_EQ(FormatTime(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatTime(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatTime(951'782'400'999), "2000-02-29T00:00:00.999Z");
  EXPECT_EQ(FormatTime(253'402'300'799'999), "9999-12-31T23:59:59.999Z");
}

// Written digit by digit up to the year 9999: the same text as the C library's, which writes
// the times beyond.
TEST(Time, WritesWhatGmtimeAndPrintfWrite) {
  auto by_libc = [](Millis ms) {
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms % 1000));
    return std::string(buf);
  };
  std::mt19937_64 rng(27);
  std::uniform_int_distribution<Millis> any(0, 253'402'300'800'000 + 86'400'000);
  for (int i = 0; i < 100'000; ++i) {
    Millis ms = any(rng);
    ASSERT_EQ(FormatTime(ms), by_libc(ms)) << ms;
  }
  for (Millis ms : {Millis{86'399'999}, Millis{86'400'000}, Millis{253'402'300'800'000}}) {
    EXPECT_EQ(FormatTime(ms), by_libc(ms)) << ms;
  }
}

}  // namespace
TEST(Time, ParsesWhatItFormatsAndNothingElse) {
  for (Millis t : {Millis{0} + 1, Millis{1'795'567'504'981}, Millis{951'782'400'999}}) {
    auto back = ParseTime(FormatTime(t));
    ASSERT_TRUE(back.ok()) << FormatTime(t);
    EXPECT_EQ(*back, t);
  }
  for (const char* bad :
       {"", "2026-11-22", "2026-11-22T04:31:24Z", "2026-11-22T04:31:24.123",
        "2026-13-22T04:31:24.123Z", "2026-11-22 04:31:24.123Z", "2026-11-22T04:31:24.12xZ"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

}  // namespace tx
