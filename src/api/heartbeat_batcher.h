#pragma once
// HeartbeatBatcher: records the heartbeats of remote workers that arrive within a few
// milliseconds of one another in one transaction (WorkerService::HeartbeatMany). A heartbeat
// alone is a transaction, and a transaction's commit (its flush to disk, its round trips on
// PostgreSQL) costs far more than the one row it writes: a thousand workers beating every second
// are a thousand commits a second one by one, a few dozen batched. Each caller still gets its own
// worker's result, as WorkerService::Heartbeat would have given it.
//
// One thread and one store connection of its own. Beat() blocks its caller (a request thread)
// until the batch it joined has been recorded: at most `window` more than the transaction.
// Thread-safe.

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "service/options.h"
#include "service/worker_service.h"
#include "store/store.h"

namespace tx::api {

class HeartbeatBatcher {
 public:
  // Opens its store and starts its thread. A batch is recorded `window` after its first beat
  // arrived, or once it holds `max_batch` beats.
  static Result<std::unique_ptr<HeartbeatBatcher>> Start(const store::OpenOptions& store,
                                                         const service::ServiceOptions& options,
                                                         std::chrono::milliseconds window,
                                                         std::size_t max_batch);
  ~HeartbeatBatcher();  // stops: beats still waiting get unavailable
  HeartbeatBatcher(const HeartbeatBatcher&) = delete;
  HeartbeatBatcher& operator=(const HeartbeatBatcher&) = delete;

  // Records a heartbeat of `worker_id` with the next batch; its result as Heartbeat's.
  Result<Worker> Beat(std::string worker_id, service::HeartbeatUpdate update);
  // Ends the thread; idempotent.
  void Stop();
  // The store's clock (the server's time on PostgreSQL).
  const Clock& clock() const { return store_->clock(); }

 private:
  struct Pending {
    service::WorkerService::Beat beat;
    std::promise<Result<Worker>> done;
  };
  HeartbeatBatcher(std::unique_ptr<store::Store> store, const service::ServiceOptions& options,
                   std::chrono::milliseconds window, std::size_t max_batch);
  void Run();

  std::unique_ptr<store::Store> store_;
  service::WorkerService workers_;
  std::chrono::milliseconds window_;
  std::size_t max_batch_;
  Mutex mu_;
  CondVar wake_;
  std::deque<Pending> queue_ TX_GUARDED_BY(mu_);
  bool stopping_ TX_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tx::api
