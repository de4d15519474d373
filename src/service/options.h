#pragma once
// Configuration shared by the services (design.md §6 defaults). Passed in, never read globally.

#include <functional>

#include "core/backoff.h"
#include "core/claim.h"
#include "core/clock.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/validation.h"
#include "core/worker.h"

namespace tx::service {

struct ServiceOptions {
  Millis default_lease_ms = kDefaultLeaseMs;
  int max_renewals = 10;
  BackoffPolicy backoff;
  Limits limits;
  Millis default_task_timeout_ms = kDefaultTaskTimeoutMs;
  Millis default_heartbeat_interval_ms = kDefaultHeartbeatIntervalMs;
  // A task waiting in review longer than this is marked overdue by the reconciler (an event and
  // metadata.review_overdue_at, which the dashboard shows). 0 = never.
  Millis review_timeout_ms = kDefaultReviewTimeoutMs;
  // A task waiting for an answer to its agent's question (status `waiting`) longer than this is
  // failed by the reconciler, its error saying so. 0 = never (the default).
  Millis question_timeout_ms = 0;
  // A uniform random number in [0, 1) for backoff jitter; tests pin it.
  std::function<double()> unit_random;
  // Whether the orchestrator the store's row names still runs: its backpressure and its refusal
  // of registrations while stopping apply only then. The CLI checks the holder's process on this
  // host; the default judges by the row's freshness (RecentlySeen), which lags a kill -9 by 30 s.
  std::function<bool(const OrchestratorState&, Millis now)> orchestrator_alive;
  // Whether the process of a worker's row still runs: tx restore and tx migrate refuse while one
  // does (CheckNothingRuns). The CLI checks the pid of a worker on this host; the default judges
  // by its heartbeat (a stale worker is gone), which lags a kill -9 by two intervals.
  std::function<bool(const Worker&, const Moment& now)> worker_alive;
};

// Fills unit_random, orchestrator_alive and worker_alive with their defaults when the caller left
// them empty.
ServiceOptions WithDefaults(ServiceOptions options);

}  // namespace tx::service
