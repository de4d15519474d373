#include "api/store_pool.h"

namespace tx::api {

Result<StorePool::Lease> StorePool::Acquire() {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<store::Store> s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(s));
    }
  }
  TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> s, store::Open(options_));
  return Lease(*this, std::move(s));
}

void StorePool::Return(std::unique_ptr<store::Store> s) {
  MutexLock lock(mu_);
  idle_.push_back(std::move(s));
}

}  // namespace tx::api
