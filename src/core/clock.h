#pragma once
// Clock: the one source of "now" for services. Times are integer milliseconds since the epoch,
// as stored. Tests use FakeClock and Advance() instead of sleeping.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tx {

using Millis = std::int64_t;  // milliseconds since the Unix epoch, or a duration in ms

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Millis NowMs() const = 0;
};

class RealClock final : public Clock {
 public:
  Millis NowMs() const override;
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Millis start = 1'700'000'000'000) : now_(start) {}
  Millis NowMs() const override { return now_.load(); }
  void Advance(std::chrono::milliseconds d) { now_ += d.count(); }
  void Set(Millis t) { now_ = t; }

 private:
  std::atomic<Millis> now_;
};

}  // namespace tx
