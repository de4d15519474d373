#include "worker/reset_time.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "exec/command.h"

namespace tx::worker {

namespace {

bool ValidZone(const std::string& zone) {
  if (zone.empty() || zone.size() > 64 || zone.find("..") != std::string::npos ||
      zone.front() == '/') {
    return false;
  }
  bool plain = std::all_of(zone.begin(), zone.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
           c == '+';
  });
  // A zone the system does not know ("PST") would silently be read as UTC: hours off.
  std::error_code ec;
  return plain && std::filesystem::is_regular_file("/usr/share/zoneinfo/" + zone, ec);
}

// date(1) in `zone` ("" = local): the output of `date -d SPEC +FORMAT`, or "" on failure.
std::string Date(const std::string& zone, const std::string& spec, const std::string& format) {
  std::vector<std::string> argv = {"date"};
  if (!spec.empty()) {
    argv.push_back("-d");
    argv.push_back(spec);
  }
  std::string plus = "+";
  plus += format;
  argv.push_back(plus);
  std::vector<std::string> env;
  if (!zone.empty()) {
    std::string tz = "TZ=";
    tz += zone;
    env.push_back(tz);
  }
  Result<exec::CommandResult> r = exec::RunCommand(argv, "", env, 4096, 5'000);
  if (!r.ok() || !r->ok()) return "";
  std::string out = r->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The epoch of YYYY-MM-DD HH:MM in `zone`, 0 on failure.
Millis EpochOf(const std::string& zone, int y, int m, int d, int hour, int minute) {
  char spec[64];
  std::snprintf(spec, sizeof spec, "%04d-%02d-%02d %02d:%02d", y, m, d, hour, minute);
  std::string secs = Date(zone, spec, "%s");
  if (secs.empty()) return 0;
  return std::atoll(secs.c_str()) * 1000;
}

}  // namespace

Millis ResolveReset(const agent::ResetHint& hint, Millis now) {
  if (hint.at > 0) return hint.at > now ? hint.at : 0;
  if (hint.after_ms > 0) return now + hint.after_ms;
  if (hint.hour < 0) return 0;
  std::string zone = hint.zone;
  if (zone == "UTC" || zone == "GMT") zone = "UTC";
  if (!zone.empty() && !ValidZone(zone)) return 0;
  // Today (or the date given) in that zone.
  std::string at_now = "@";
  at_now += std::to_string(now / 1000);
  std::string today = Date(zone, at_now, "%Y %m %d");
  int y = 0, m = 0, d = 0;
  if (std::sscanf(today.c_str(), "%d %d %d", &y, &m, &d) != 3) return 0;
  if (hint.month > 0) {
    m = hint.month;
    d = hint.day;
    if (hint.year > 0) y = hint.year;
  }
  Millis at = EpochOf(zone, y, m, d, hint.hour, hint.minute);
  if (at == 0) return 0;
  if (at <= now) {
    if (hint.month > 0 && hint.year == 0) {
      at = EpochOf(zone, y + 1, m, d, hint.hour, hint.minute);  // "Jan 30" seen in December
    } else if (hint.month == 0) {
      at += 86'400'000;  // a time of day already past: tomorrow's (near enough across DST)
    }
  }
  return at > now ? at : 0;
}

}  // namespace tx::worker
