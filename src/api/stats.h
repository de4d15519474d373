#pragma once
// GET /api/stats: the last hour of the fleet for the dashboard's chart. Pure: the event hub feeds
// it every event (throughput, by the events' own times, so the whole log read at start fills the
// past hour exactly) and a sample of the task counts every few seconds (the queue's depth, known
// only since the server started, as the store keeps no history of it).
//
// {"bucket_ms": 60000, "from", "to" (ms since the epoch), "throughput": [{"at", "done",
//  "failed"}] one per minute, oldest first, zeros included; "depth": [{"at", "ready", "running",
//  "blocked", "review"}] the samples of the hour, oldest first}

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/event.h"
#include "store/store.h"

namespace tx::api {

class Stats {
 public:
  static constexpr Millis kWindowMs = 60 * 60'000;
  static constexpr Millis kBucketMs = 60'000;

  void Add(const Event& e);
  void Sample(const std::vector<store::StatusCount>& counts, Millis now);
  nlohmann::json Render(Millis now) const;

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

  std::map<Millis, Finished> finished_;  // by bucket start
  std::deque<Depth> depth_;
  Millis newest_ = 0;
};

}  // namespace tx::api
