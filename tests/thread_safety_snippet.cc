// What tests/thread_safety_test.sh compiles with the thread-safety check's flags: as it is, the
// locking of a tx::Mutex done right (it must pass); with one fault switched on, the locking done
// wrong (it must fail, naming the lock).
//   TX_READ_WITHOUT_LOCK: a member guarded by mu_ read without it;
//   TX_CALL_WITHOUT_LOCK: a function that requires mu_ called without it.

#include <chrono>
#include <cstdint>

#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace {

class Counter {
 public:
  void Add() {
#ifndef TX_CALL_WITHOUT_LOCK
    tx::MutexLock lock(mu_);
#endif
    AddLocked();
    changed_.NotifyAll();
  }

  std::int64_t count() const {
#ifndef TX_READ_WITHOUT_LOCK
    tx::MutexLock lock(mu_);
#endif
    return count_;
  }

  bool WaitPast(std::int64_t seen) {
    tx::MutexLock lock(mu_);
    return changed_.WaitFor(mu_, std::chrono::milliseconds(1),
                            [&]() TX_REQUIRES(mu_) { return count_ > seen; });
  }

 private:
  void AddLocked() TX_REQUIRES(mu_) { ++count_; }

  mutable tx::Mutex mu_;
  tx::CondVar changed_;
  std::int64_t count_ TX_GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter c;
  c.Add();
  return c.WaitPast(0) && c.count() == 1 ? 0 : 1;
}
