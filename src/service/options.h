#pragma once
// Configuration shared by the services (design.md §6 defaults). Passed in, never read globally.

#include <functional>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/validation.h"

namespace tx::service {

struct ServiceOptions {
  Millis default_lease_ms = 30 * 60'000;
  int max_renewals = 10;
  BackoffPolicy backoff;
  Limits limits;
  Millis default_task_timeout_ms = 30 * 60'000;
  Millis default_heartbeat_interval_ms = 30'000;
  // A uniform random number in [0, 1) for backoff jitter; tests pin it.
  std::function<double()> unit_random;
};

// Fills unit_random with a thread-local generator when the caller left it empty.
ServiceOptions WithDefaults(ServiceOptions options);

}  // namespace tx::service
