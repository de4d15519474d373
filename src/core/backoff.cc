#include "core/backoff.h"

#include <algorithm>

namespace tx {

Millis RetryDelay(const BackoffPolicy& policy, int failed_attempts, double unit_random) {
  Millis delay = policy.base_ms;
  for (int i = 1; i < failed_attempts && delay < policy.cap_ms; ++i) delay *= 2;
  delay = std::min(delay, policy.cap_ms);
  double factor = 1.0 - policy.jitter + 2.0 * policy.jitter * unit_random;
  return std::max<Millis>(0, static_cast<Millis>(static_cast<double>(delay) * factor));
}

}  // namespace tx
