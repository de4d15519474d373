#include "api/handler_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <system_error>
#include <utility>

namespace tx::api {

namespace {

HandlerPool::Options Clamped(HandlerPool::Options o) {
  o.min_threads = std::max(1, o.min_threads);
  o.max_threads = std::max(o.min_threads, o.max_threads);
  return o;
}

}  // namespace

HandlerPool::HandlerPool(Options options) : options_(Clamped(options)) {
  MutexLock lock(mu_);
  for (int i = 0; i < options_.min_threads; ++i) Spawn();
}

HandlerPool::~HandlerPool() { Join(); }

void HandlerPool::Post(std::function<void()> job) {
  JoinEnded();
  MutexLock lock(mu_);
  if (joined_) return;
  jobs_.push_back(std::move(job));
  // A job more than the threads without one needs a thread of its own: each of those may be
  // taking a job posted before this one.
  if (jobs_.size() > static_cast<std::size_t>(idle_) &&
      threads_.size() < static_cast<std::size_t>(options_.max_threads)) {
    try {
      Spawn();
      return;
    } catch (const std::system_error&) {
      // No thread to be had (a process or memory limit): the job waits for a running one, and
      // at least one always runs.
    }
  }
  changed_.NotifyOne();
}

void HandlerPool::Join() {
  {
    MutexLock lock(mu_);
    joining_ = true;
    changed_.NotifyAll();
    changed_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return threads_.empty(); });
    joined_ = true;
  }
  JoinEnded();
}

int HandlerPool::threads() const {
  MutexLock lock(mu_);
  return static_cast<int>(threads_.size());
}

void HandlerPool::Spawn() {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  threads_.emplace_back();
  Thread self = std::prev(threads_.end());
  ++idle_;  // from its start: a job posted before it first waits is its to take
  try {
    // The thread waits for mu_, which the caller holds, before it reads `self`.
    *self = std::thread([this, self] { Run(self); });
  } catch (...) {
    --idle_;
    threads_.erase(self);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void HandlerPool::Run(Thread self) {
  bool after_job = false;
  while (std::function<void()> job = NextJob(self, after_job)) {
    try {
      job();
    } catch (...) {
      // The job's own business (a handler reports its errors in its answer): the thread goes on.
    }
    after_job = true;
  }
}

std::function<void()> HandlerPool::NextJob(Thread self, bool after_job) {
  MutexLock lock(mu_);
  if (after_job) ++idle_;
  for (;;) {
    bool woken = changed_.WaitFor(mu_, options_.idle_timeout,
                                  [&]() TX_REQUIRES(mu_) { return !jobs_.empty() || joining_; });
    if (!jobs_.empty()) {
      --idle_;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      return job;
    }
    if (joining_ || (!woken && threads_.size() > static_cast<std::size_t>(options_.min_threads))) {
      --idle_;
      ended_.push_back(std::move(*self));
      threads_.erase(self);
      changed_.NotifyAll();  // Join waits for the last
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
