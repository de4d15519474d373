#pragma once
// Whether the orchestrator a row names still runs, as this machine can best tell: what the CLI,
// the API server and the orchestrator judge other orchestrators by
// (ServiceOptions::orchestrator_alive).

#include "core/clock.h"
#include "core/orchestrator.h"

namespace tx::orchestrator {

// On this host: its pid runs and is an orchestrator (a reused pid is not), so a kill -9 is seen
// at once. On another host: whether it refreshed the row lately (RecentlySeen).
bool OrchestratorAlive(const OrchestratorState& o, Millis now);

}  // namespace tx::orchestrator
