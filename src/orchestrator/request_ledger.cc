#include "orchestrator/request_ledger.h"

#include <utility>

namespace tx::orchestrator {

bool RequestLedger::Record(const std::string& id, nlohmann::json answer) {
  if (id.empty()) return false;
  if (!answers_.contains(id)) order_.push_back(id);
  answers_[id] = std::move(answer);
  while (order_.size() > kCapacity) {
    answers_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

const nlohmann::json* RequestLedger::Find(const std::string& id) const {
  auto it = answers_.find(id);
  return it == answers_.end() ? nullptr : &*it;
}

}  // namespace tx::orchestrator
