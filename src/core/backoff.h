#pragma once
// Retry backoff after a failed attempt: 1 s, 2 s, 4 s ... capped at 5 min, with jitter.

#include "core/clock.h"

namespace tx {

struct BackoffPolicy {
  Millis base_ms = 1000;
  Millis cap_ms = 5 * 60'000;
  double jitter = 0.2;  // the delay is scaled by a factor in [1 - jitter, 1 + jitter)
};

// The delay before attempt `failed_attempts + 1`, given the number of attempts that failed so far
// (>= 1) and a uniform random number in [0, 1) supplied by the caller (core draws none itself).
Millis RetryDelay(const BackoffPolicy& policy, int failed_attempts, double unit_random);

}  // namespace tx
