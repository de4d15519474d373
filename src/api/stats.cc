#include "api/stats.h"

#include <algorithm>
#include <string>

namespace tx::api {

namespace {
constexpr Millis kHourMs = 60 * 60'000;
}  // namespace

Result<StatsRange> ParseStatsRange(std::string_view name) {
  for (const auto& r : kStatsRanges) {
    if (r.name == name) return r;
  }
  return Error::InvalidArgument("parameter 'range' must be 1h, 24h or 7d, not '" +
                                std::string(name) + "'");
}

void Stats::Add(const StoredEvent& e) {
  bool done = e.type == "task.done";
  bool failed = e.type == "task.failed";
  if (!done && !failed) return;
  newest_ = std::max(newest_, e.at);
  if (e.at <= newest_ - kKeepMs) return;  // older than the week: never shown
  Finished& f = finished_[e.at - e.at % kMinuteMs];
  ++(done ? f.done : f.failed);
  Trim(newest_);
}

void Stats::Sample(const std::vector<store::StatusCount>& counts, Millis now) {
  Depth d;
  d.at = now;
  for (const auto& c : counts) {
    switch (c.status) {
      case TaskStatus::kReady:
        d.ready += c.count;
        break;
      case TaskStatus::kRunning:
        d.running += c.count;
        break;
      case TaskStatus::kBlocked:
        d.blocked += c.count;
        break;
      case TaskStatus::kReview:
      case TaskStatus::kApproved:
        d.review += c.count;
        break;
      default:
        break;
    }
  }
  depth_.push_back(d);
  if (coarse_.empty() || now - coarse_.back().at >= kMinuteMs) coarse_.push_back(d);
  Trim(now);
}

void Stats::Trim(Millis now) {
  while (!finished_.empty() && finished_.begin()->first + kMinuteMs <= now - kKeepMs) {
    finished_.erase(finished_.begin());
  }
  while (!depth_.empty() && depth_.front().at <= now - kHourMs) depth_.pop_front();
  while (!coarse_.empty() && coarse_.front().at <= now - kKeepMs) coarse_.pop_front();
}

nlohmann::json Stats::Render(Millis now, const StatsRange& range) const {
  const Millis bucket = range.bucket_ms;
  const Millis last = now - now % bucket;
  const Millis first = last - range.window_ms + bucket;
  std::vector<Finished> sums(static_cast<std::size_t>((last - first) / bucket + 1));
  for (auto it = finished_.lower_bound(first); it != finished_.end(); ++it) {
    const auto i = static_cast<std::size_t>((it->first - first) / bucket);
    if (i >= sums.size()) break;  // after now (an event from a clock ahead)
    Finished& f = sums[i];
    f.done += it->second.done;
    f.failed += it->second.failed;
  }
  nlohmann::json throughput = nlohmann::json::array();
  for (std::size_t i = 0; i < sums.size(); ++i) {
    throughput.push_back({{"at", first + static_cast<Millis>(i) * bucket},
                          {"done", sums[i].done},
                          {"failed", sums[i].failed}});
  }
  // Every sample of the hour; over longer ranges, the last of each step, the newest sample last.
  const Millis step = range.depth_step_ms;
  std::vector<const Depth*> shown;
  auto show = [&](const Depth& d) {
    if (d.at <= now - range.window_ms) return;
    if (step > 0 && !shown.empty() && shown.back()->at / step == d.at / step) {
      shown.back() = &d;
    } else {
      shown.push_back(&d);
    }
  };
  for (const Depth& d : step == 0 ? depth_ : coarse_) show(d);
  if (step > 0 && !depth_.empty() && (coarse_.empty() || depth_.back().at > coarse_.back().at)) {
    show(depth_.back());
  }
  nlohmann::json depth = nlohmann::json::array();
  for (const Depth* d : shown) {
    depth.push_back({{"at", d->at},
                     {"ready", d->ready},
                     {"running", d->running},
                     {"blocked", d->blocked},
                     {"review", d->review}});
  }
  return {{"range", range.name}, {"bucket_ms", bucket},      {"from", now - range.window_ms},
          {"to", now},           {"throughput", throughput}, {"depth", depth}};
}

}  // namespace tx::api
