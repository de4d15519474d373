#include "orchestrator/request_ledger.h"

#include <utility>

namespace tx::orchestrator {

bool RequestLedger::Record(const std::string& id, PoolAnswer answer) {
  if (id.empty()) return false;
  auto [it, added] = answers_.insert_or_assign(id, std::move(answer));
  if (added) order_.push_back(id);
  while (order_.size() > kCapacity) {
    answers_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

const PoolAnswer* RequestLedger::Find(const std::string& id) const {
  auto it = answers_.find(id);
  return it == answers_.end() ? nullptr : &it->second;
}

}  // namespace tx::orchestrator
