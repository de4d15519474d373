#include "core/duration.h"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>

namespace tx {

namespace {
Error BadDuration(std::string_view text) {
  return Error::InvalidArgument("invalid duration '" + std::string(text) +
                                "': expected a number and a unit, like 250ms, 30s, 5m or 1h");
}
}  // namespace

Result<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) return BadDuration(text);
  Millis total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start || i - start > 12) return BadDuration(text);
    Millis n = 0;
    std::from_chars(text.data() + start, text.data() + i, n);
    std::size_t unit_start = i;
    while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    Millis scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else if (unit == "d") {
      scale = 86'400'000;
    } else {
      return BadDuration(text);
    }
    // The whole duration, not each part alone, stays within a quarter of the range: parts that
    // each fitted could sum past it, or overflow.
    constexpr Millis kMax = std::numeric_limits<Millis>::max() / 4;
    if (n > (kMax - total) / scale) return BadDuration(text);
    total += n * scale;
  }
  return total;
}

std::string FormatDuration(Millis ms) {
  if (ms == 0) return "0s";
  std::string out;
  // The magnitude, unsigned: the most negative Millis has no positive counterpart.
  auto left = static_cast<std::uint64_t>(ms);
  if (ms < 0) {
    out = "-";
    left = 0 - left;
  }
  struct Unit {
    std::uint64_t scale;
    const char* name;
  };
  constexpr Unit kUnits[] = {{3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : kUnits) {
    if (left >= u.scale) {
      out += std::to_string(left / u.scale) + u.name;
      left %= u.scale;
    }
  }
  return out;
}

namespace {

// The digits of `v`, `width` of them, from the left of `p`.
void PutDigits(char* p, unsigned v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

}  // namespace

std::string FormatTime(Millis epoch_ms) {
  // Years 1970 to 9999 are written digit by digit (every time the API writes: snprintf and
  // gmtime_r took most of a task's JSON); the rest, as the C library writes them.
  constexpr Millis kYear10000 = 253'402'300'800'000;
  if (epoch_ms >= 0 && epoch_ms < kYear10000) {
    using namespace std::chrono;
    const sys_time<milliseconds> t{milliseconds(epoch_ms)};
    const sys_days day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<milliseconds> hms{t - day};
    std::string out = "0000-00-00T00:00:00.000Z";
    PutDigits(&out[0], static_cast<unsigned>(static_cast<int>(ymd.year())), 4);
    PutDigits(&out[5], static_cast<unsigned>(ymd.month()), 2);
    PutDigits(&out[8], static_cast<unsigned>(ymd.day()), 2);
    PutDigits(&out[11], static_cast<unsigned>(hms.hours().count()), 2);
    PutDigits(&out[14], static_cast<unsigned>(hms.minutes().count()), 2);
    PutDigits(&out[17], static_cast<unsigned>(hms.seconds().count()), 2);
    PutDigits(&out[20], static_cast<unsigned>(hms.subseconds().count()), 3);
    return out;
  }
  std::time_t secs = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(epoch_ms % 1000));
  return buf;
}

Result<Millis> ParseTime(std::string_view text) {
  auto bad = [&] {
    return Error::InvalidArgument("invalid time '" + std::string(text) +
                                  "': expected ISO-8601 UTC such as 2026-11-22T04:31:24.123Z");
  };
  // YYYY-MM-DDTHH:MM:SS.mmmZ
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (text.size() != kShape.size()) return bad();
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    bool digit = text[i] >= '0' && text[i] <= '9';
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return bad();
  }
  auto num = [&](std::size_t at, std::size_t len) {
    int n = 0;
    std::from_chars(text.data() + at, text.data() + at + len, n);
    return n;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return bad();
  }
  std::time_t secs = timegm(&tm);
  if (secs < 0) return bad();
  Millis t = static_cast<Millis>(secs) * 1000 + num(20, 3);
  // timegm normalises what does not exist (February 31st, second 60): only what FormatTime
  // writes back the same is a time.
  if (FormatTime(t) != text) return bad();
  return t;
}

}  // namespace tx
