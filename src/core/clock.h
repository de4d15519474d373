#pragma once
// Clock: the one source of "now" for services. Times are integer milliseconds since the epoch,
// as stored. Tests use FakeClock and Advance() instead of sleeping.
//
// A clock may also have a steady reading: milliseconds on a clock that a step of the wall clock
// (NTP, an operator's `date -s`, a VM resumed) does not move, and that every process of this
// machine reads alike (the kernel's CLOCK_BOOTTIME). Silence — a heartbeat's, a lease's — is
// judged on it where both the stamp and the judge have one (core/worker.h, core/claim.h), so a
// clock step never kills a healthy worker. A store shared by hosts has none: its clock is the
// database server's (store/postgres), which every host reads alike already.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace tx {

using Millis = std::int64_t;  // milliseconds since the Unix epoch, or a duration in ms

// Both readings of a clock at one instant. It reads as its wall time wherever a time is wanted
// (an event's, a row's); only the judges of silence look at `steady`.
struct Moment {
  Millis wall = 0;
  std::optional<Millis> steady;
  operator Millis() const { return wall; }  // NOLINT(google-explicit-constructor)
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Millis NowMs() const = 0;
  virtual std::optional<Millis> SteadyMs() const { return std::nullopt; }
  Moment Now() const { return {NowMs(), SteadyMs()}; }
};

class RealClock final : public Clock {
 public:
  Millis NowMs() const override;
  std::optional<Millis> SteadyMs() const override;  // CLOCK_BOOTTIME
};

// A clock that moves only when told to. Thread-safe. Its steady reading moves with Advance and
// Set; StepWall moves the wall clock alone, as a clock step does.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Millis start = 1'700'000'000'000) : now_(start) {}
  Millis NowMs() const override { return now_.load(); }
  std::optional<Millis> SteadyMs() const override { return steady_.load(); }
  void Advance(std::chrono::milliseconds d) {
    now_ += d.count();
    steady_ += d.count();
  }
  void Set(Millis t) {
    steady_ += t - now_.load();
    now_ = t;
  }
  void StepWall(std::chrono::milliseconds d) { now_ += d.count(); }

 private:
  std::atomic<Millis> now_;
  std::atomic<Millis> steady_{1'000'000};
};

}  // namespace tx
