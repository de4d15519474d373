#pragma once
// A few open stores shared by the HTTP server's threads: a connection is not shared by two
// threads at once, and opening one per request would cost more than most requests.

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "store/store.h"

namespace tx::api {

class StorePool {
 public:
  explicit StorePool(store::OpenOptions options) : options_(std::move(options)) {}

  // A store for the caller alone until the lease is destroyed; opened when none is idle.
  class Lease {
   public:
    Lease(StorePool& pool, std::unique_ptr<store::Store> s) : pool_(&pool), store_(std::move(s)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (store_) pool_->Return(std::move(store_));
    }
    store::Store& operator*() const { return *store_; }
    store::Store* operator->() const { return store_.get(); }

   private:
    StorePool* pool_;
    std::unique_ptr<store::Store> store_;
  };

  Result<Lease> Acquire();

 private:
  void Return(std::unique_ptr<store::Store> s);

  const store::OpenOptions options_;
  Mutex mu_;
  std::vector<std::unique_ptr<store::Store>> idle_ TX_GUARDED_BY(mu_);
};

}  // namespace tx::api
