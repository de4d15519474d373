#pragma once
// GET /api/stats: the fleet over the last hour, day or week for the dashboard's chart. Pure: the
// event hub feeds it every event (throughput, by the events' own times, so the whole log read at
// start fills the past week exactly) and a sample of the task counts every few seconds (the
// queue's depth, known only since the server started, as the store keeps no history of it).
//
// {"range": "1h" | "24h" | "7d", "bucket_ms", "from", "to" (ms since the epoch), "throughput":
//  [{"at", "done", "failed"}] one per bucket (a minute, 15 minutes or 2 hours), oldest first,
//  zeros included; "depth": [{"at", "ready", "running", "blocked", "review"}] oldest first: every
//  sample of the hour, or over a day or a week the last sample of each 5 or 30 minutes}

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/event.h"
#include "store/store.h"

namespace tx::api {

// A span the chart shows: its length, its bars' width and how far apart its depth points are
// (0: every sample).
struct StatsRange {
  std::string_view name;
  Millis window_ms;
  Millis bucket_ms;
  Millis depth_step_ms;
};
inline constexpr StatsRange kStatsRanges[] = {
    {"1h", 60 * 60'000, 60'000, 0},
    {"24h", 24 * 60 * 60'000, 15 * 60'000, 5 * 60'000},
    {"7d", 7 * 24 * 60 * 60'000, 2 * 60 * 60'000, 30 * 60'000},
};
// "1h", "24h" or "7d"; anything else is an invalid argument naming them.
Result<StatsRange> ParseStatsRange(std::string_view name);

class Stats {
 public:
  static constexpr Millis kKeepMs = 7 * 24 * 60 * 60'000;  // the longest range
  static constexpr Millis kMinuteMs = 60'000;

  void Add(const StoredEvent& e);
  void Sample(const std::vector<store::StatusCount>& counts, Millis now);
  nlohmann::json Render(Millis now, const StatsRange& range = kStatsRanges[0]) const;

 private:
  struct Finished {
    std::int64_t done = 0;
    std::int64_t failed = 0;
  };
  struct Depth {
    Millis at = 0;
    std::int64_t ready = 0, running = 0, blocked = 0, review = 0;
  };
  void Trim(Millis now);

  std::map<Millis, Finished> finished_;  // by minute, at most a week of them
  std::deque<Depth> depth_;              // every sample of the last hour
  std::deque<Depth> coarse_;             // one sample a minute (or less often), for a week
  Millis newest_ = 0;
};

}  // namespace tx::api
