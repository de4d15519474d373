#include "api/heartbeat_batcher.h"

#include <exception>
#include <vector>

namespace tx::api {

Result<std::unique_ptr<HeartbeatBatcher>> HeartbeatBatcher::Start(
    const store::OpenOptions& options, const service::ServiceOptions& service,
    std::chrono::milliseconds window, std::size_t max_batch) {
  TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> s, store::Open(options));
  std::unique_ptr<HeartbeatBatcher> b(
      new HeartbeatBatcher(std::move(s), service, window, max_batch));
  b->thread_ = std::thread([raw = b.get()] { raw->Run(); });
  return b;
}

HeartbeatBatcher::HeartbeatBatcher(std::unique_ptr<store::Store> store,
                                   const service::ServiceOptions& options,
                                   std::chrono::milliseconds window, std::size_t max_batch)
    : store_(std::move(store)),
      workers_(*store_, store_->clock(), options),
      window_(window),
      max_batch_(max_batch) {}

HeartbeatBatcher::~HeartbeatBatcher() { Stop(); }

void HeartbeatBatcher::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

Result<Worker> HeartbeatBatcher::Beat(std::string worker_id, service::HeartbeatUpdate update) {
  std::future<Result<Worker>> result;
  {
    MutexLock lock(mu_);
    if (stopping_) return Error::Unavailable("the server is stopping");
    queue_.push_back(Pending{{std::move(worker_id), std::move(update)}, {}});
    result = queue_.back().done.get_future();
  }
  wake_.NotifyAll();
  return result.get();
}

void HeartbeatBatcher::Run() {
  for (;;) {
    std::vector<Pending> batch;
    {
      MutexLock lock(mu_);
      wake_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      // Let the batch fill for `window` after its first beat (or until it is full).
      auto deadline = std::chrono::steady_clock::now() + window_;
      wake_.WaitUntil(mu_, deadline,
                      [&]() TX_REQUIRES(mu_) { return stopping_ || queue_.size() >= max_batch_; });
      while (!queue_.empty() && batch.size() < max_batch_) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<service::WorkerService::Beat> beats;
    beats.reserve(batch.size());
    for (const auto& p : batch) beats.push_back(p.beat);
    // An exception here would end the process (this thread's): the batch fails instead.
    std::vector<Result<Worker>> results;
    try {
      results = workers_.HeartbeatMany(beats);
    } catch (const std::exception& e) {
      results.assign(batch.size(), Error::Internal(std::string("heartbeat batch: ") + e.what()));
    }
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i].done.set_value(std::move(results[i]));
  }
}

}  // namespace tx::api
