#pragma once
// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with clang's
// thread-safety annotations, so that a member marked TX_GUARDED_BY(mu_) read or written without
// mu_ held fails scripts/thread_safety (clang -Wthread-safety -Werror). They behave exactly as
// the std types they wrap; every mutex of tx that guards data is one of these.
//
//   mutable Mutex mu_;
//   CondVar changed_;
//   bool stopping_ TX_GUARDED_BY(mu_) = false;
//
//   MutexLock lock(mu_);
//   changed_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return stopping_; });
//
// A lambda is checked as a function of its own, which holds nothing: one that reads guarded
// members under the lock (a wait's predicate) says so with TX_REQUIRES.

#include <condition_variable>
#include <mutex>
#include <utility>

#include "core/thread_annotations.h"

namespace tx {

class TX_CAPABILITY("mutex") Mutex {
 public:
  void Lock() TX_ACQUIRE() { mu_.lock(); }
  void Unlock() TX_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction (std::lock_guard).
class TX_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TX_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() TX_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// std::condition_variable for a Mutex the caller holds. Each wait releases `mu` while it sleeps
// and holds it again when it returns, as std::condition_variable's do with their unique_lock;
// `pred` is called with `mu` held.
class CondVar {
 public:
  template <class Pred>
  void Wait(Mutex& mu, Pred pred) TX_REQUIRES(mu) {
    Adopted held(mu);
    cv_.wait(held.lock, std::move(pred));
  }
  // pred()'s value at the end: false when the wait timed out with it false.
  template <class Duration, class Pred>
  bool WaitFor(Mutex& mu, const Duration& timeout, Pred pred) TX_REQUIRES(mu) {
    Adopted held(mu);
    return cv_.wait_for(held.lock, timeout, std::move(pred));
  }
  template <class TimePoint, class Pred>
  bool WaitUntil(Mutex& mu, const TimePoint& deadline, Pred pred) TX_REQUIRES(mu) {
    Adopted held(mu);
    return cv_.wait_until(held.lock, deadline, std::move(pred));
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  // The caller's hold of `mu` as the unique_lock std::condition_variable wants; given back still
  // held, even when `pred` throws (the caller's MutexLock unlocks it).
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace tx
