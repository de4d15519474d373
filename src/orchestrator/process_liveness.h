#pragma once
// Whether the orchestrator a row names still runs, as this machine can best tell: what the CLI,
// the API server and the orchestrator judge other orchestrators by
// (ServiceOptions::orchestrator_alive).

#include "core/clock.h"
#include "core/orchestrator.h"
#include "core/worker.h"

namespace tx::orchestrator {

// On this host: its pid runs and is an orchestrator (a reused pid is not), so a kill -9 is seen
// at once. On another host: whether it refreshed the row lately (RecentlySeen).
bool OrchestratorAlive(const OrchestratorState& o, Millis now);

// Whether a worker's process runs (ServiceOptions::worker_alive). On this host: its pid runs and
// is a `tx worker start` (a reused pid is not), so a kill -9 is seen at once. On another host
// (a remote worker, through tx serve): whether its heartbeat is fresh (not IsStale).
bool WorkerAlive(const Worker& w, const Moment& now);

}  // namespace tx::orchestrator
