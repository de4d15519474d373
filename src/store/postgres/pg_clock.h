#pragma once
// The clock a PostgreSQL store gives its services (Store::clock()). Conn measures the offset to
// the server's clock (pg_conn.h: clock_offset_ms, MeasureClock); the store hands it to the clock
// at each (re)connect and every kClockRemeasureMs. NowMs may be read on any thread while the
// store's thread sets the offset.

#include <atomic>

#include "core/clock.h"
#include "store/postgres/pg_conn.h"

namespace tx::store::postgres {

// The database server's clock, read without asking it: this machine's monotonic clock plus the
// offset to the server's, measured at each (re)connect and every few minutes. Every host that
// shares the store then agrees on "now" to within a round trip, whatever its own wall clock
// says, and a step of the local wall clock (NTP, a VM resumed) changes nothing.
class ServerClock final : public Clock {
 public:
  Millis NowMs() const override { return MonotonicEpochMs() + offset_.load(); }
  void set_offset(Millis offset) { offset_ = offset; }

 private:
  std::atomic<Millis> offset_{0};
};

// How often the offset to the server's clock is measured again (the two clocks drift apart by
// parts per million).
inline constexpr Millis kClockRemeasureMs = 5 * 60'000;

}  // namespace tx::store::postgres
