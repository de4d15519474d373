#include "core/duration.h"

#include <charconv>
#include <cstdint>
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

std::string FormatTime(Millis epoch_ms) {
  std::time_t secs = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(epoch_ms % 1000));
  return buf;
}

}  // namespace tx
