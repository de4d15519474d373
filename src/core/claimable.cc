#include "core/claimable.h"

#include <algorithm>

namespace tx {
namespace {

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::optional<std::string> WhyNoWorkerCanClaim(const Task& t, const std::vector<Worker>& workers,
                                               const Moment& now) {
  std::vector<const Worker*> left;
  for (const auto& w : workers) {
    if (IsLive(w.status) && w.status != WorkerStatus::kStopping && !IsStale(w, now)) {
      left.push_back(&w);
    }
  }
  if (left.empty()) return "no worker is running";
  std::erase_if(left, [&](const Worker* w) { return !Has(w->queues, t.queue); });
  if (left.empty()) return "no running worker takes queue '" + t.queue + "'";
  std::vector<std::string> missing;
  for (const auto& cap : t.requires_caps) {
    bool someone = std::any_of(left.begin(), left.end(),
                               [&](const Worker* w) { return Has(w->capabilities, cap); });
    if (!someone) missing.push_back(cap);
  }
  if (!missing.empty()) {
    return "no running worker of queue '" + t.queue + "' has " + Joined(missing);
  }
  std::erase_if(left, [&](const Worker* w) {
    return !std::all_of(t.requires_caps.begin(), t.requires_caps.end(),
                        [&](const std::string& cap) { return Has(w->capabilities, cap); });
  });
  if (left.empty()) {
    return "no running worker of queue '" + t.queue + "' has all of " + Joined(t.requires_caps);
  }
  if (!t.owner.empty()) {
    std::erase_if(left, [&](const Worker* w) { return w->name != t.owner && w->slot != t.owner; });
    if (left.empty()) {
      return "no running worker that could take it is named '" + t.owner + "'";
    }
  }
  return std::nullopt;
}

}  // namespace tx
