#include "api/handler_pool.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

#include "exec/signals.h"

namespace tx::api {

namespace {

HandlerPool::Options Clamped(HandlerPool::Options o) {
  o.min_threads = std::max(1, o.min_threads);
  o.max_threads = std::max(o.min_threads, o.max_threads);
  return o;
}

}  // namespace

HandlerPool::HandlerPool(Options options) : options_(Clamped(options)) {
  try {
    for (int i = 0; i < options_.min_threads; ++i) {
      MutexLock lock(mu_);
      Spawn();
    }
  } catch (...) {
    Join();  // the threads that did start
    throw;
  }
}

HandlerPool::~HandlerPool() { Join(); }

void HandlerPool::Post(std::function<void()> job) {
  JoinEnded();
  MutexLock lock(mu_);
  if (joined_) return;
  jobs_.push_back(std::move(job));
  if (!waiting_.empty()) {
    Waiter* last = waiting_.back();
    waiting_.pop_back();
    last->woken = true;
    last->wake.NotifyOne();
    return;
  }
  // A job more than the threads without one (each between two jobs, about to look for the next)
  // needs a thread of its own.
  if (jobs_.size() > static_cast<std::size_t>(idle_) &&
      threads_.size() < static_cast<std::size_t>(options_.max_threads)) {
    try {
      Spawn();
    } catch (const std::exception&) {
      // No thread to be had (a process or memory limit): the job waits for a running one, and
      // at least one always runs.
    }
  }
}

void HandlerPool::Join() {
  {
    MutexLock lock(mu_);
    joining_ = true;
    for (Waiter* w : waiting_) {
      w->woken = true;
      w->wake.NotifyOne();
    }
    waiting_.clear();
    ended_one_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return threads_.empty(); });
    joined_ = true;
  }
  JoinEnded();
}

int HandlerPool::threads() const {
  MutexLock lock(mu_);
  return static_cast<int>(threads_.size());
}

void HandlerPool::Spawn() {
  threads_.emplace_back();
  Thread self = std::prev(threads_.end());
  try {
    exec::AsyncSignalsBlocked blocked;  // inherited by the thread
    // The thread waits for mu_, which the caller holds, before it reads `self`.
    *self = std::thread([this, self] { Run(self); });
  } catch (...) {
    threads_.erase(self);
    throw;
  }
  ++idle_;  // from its start: a job posted before it first waits is its to take
}

void HandlerPool::Run(Thread self) {
  bool after_job = false;
  while (std::function<void()> job = NextJob(self, after_job)) {
    try {
      job();
    } catch (const std::exception&) {
      // The job's own business (a handler reports its errors in its answer): the thread goes on.
    }
    after_job = true;
  }
}

std::function<void()> HandlerPool::NextJob(Thread self, bool after_job) {
  MutexLock lock(mu_);
  if (after_job) ++idle_;
  for (;;) {
    if (!jobs_.empty()) {
      --idle_;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      return job;
    }
    bool timed_out = false;
    if (!joining_) {
      Waiter me;
      waiting_.push_back(&me);
      timed_out =
          !me.wake.WaitFor(mu_, options_.idle_timeout, [&]() TX_REQUIRES(mu_) { return me.woken; });
      if (timed_out) std::erase(waiting_, &me);  // (woken: whoever woke it took it off)
    }
    if (!jobs_.empty()) continue;
    if (joining_ ||
        (timed_out && threads_.size() > static_cast<std::size_t>(options_.min_threads))) {
      --idle_;
      ended_.push_back(std::move(*self));
      threads_.erase(self);
      if (joining_) ended_one_.NotifyAll();
      return {};
    }
  }
}

void HandlerPool::JoinEnded() {
  std::vector<std::thread> ended;
  {
    MutexLock lock(mu_);
    ended.swap(ended_);
  }
  for (std::thread& t : ended) t.join();
}

}  // namespace tx::api
