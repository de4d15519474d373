#include "core/clock.h"

#include <time.h>

namespace tx {

Millis RealClock::NowMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::optional<Millis> RealClock::SteadyMs() const {
  timespec ts{};
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return std::nullopt;
  return static_cast<Millis>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace tx
