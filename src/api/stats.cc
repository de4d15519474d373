#include "api/stats.h"

#include <algorithm>

namespace tx::api {

void Stats::Add(const Event& e) {
  bool done = e.type == "task.done";
  bool failed = e.type == "task.failed";
  if (!done && !failed) return;
  newest_ = std::max(newest_, e.at);
  if (e.at <= newest_ - kWindowMs) return;  // older than the hour: never shown
  Finished& f = finished_[e.at - e.at % kBucketMs];
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
  Trim(now);
}

void Stats::Trim(Millis now) {
  while (!finished_.empty() && finished_.begin()->first + kBucketMs <= now - kWindowMs) {
    finished_.erase(finished_.begin());
  }
  while (!depth_.empty() && depth_.front().at <= now - kWindowMs) depth_.pop_front();
}

nlohmann::json Stats::Render(Millis now) const {
  Millis last = now - now % kBucketMs;
  Millis first = last - kWindowMs + kBucketMs;
  nlohmann::json throughput = nlohmann::json::array();
  for (Millis at = first; at <= last; at += kBucketMs) {
    auto it = finished_.find(at);
    Finished f = it == finished_.end() ? Finished{} : it->second;
    throughput.push_back({{"at", at}, {"done", f.done}, {"failed", f.failed}});
  }
  nlohmann::json depth = nlohmann::json::array();
  for (const Depth& d : depth_) {
    if (d.at <= now - kWindowMs) continue;
    depth.push_back({{"at", d.at},
                     {"ready", d.ready},
                     {"running", d.running},
                     {"blocked", d.blocked},
                     {"review", d.review}});
  }
  return {{"bucket_ms", kBucketMs},
          {"from", now - kWindowMs},
          {"to", now},
          {"throughput", throughput},
          {"depth", depth}};
}

}  // namespace tx::api
