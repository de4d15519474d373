#pragma once
// Whether the orchestrator named by the store's row still runs, as the CLI can best tell.

#include "core/clock.h"
#include "core/orchestrator.h"

namespace tx::cli {

// On this host: its pid runs and is an orchestrator (a reused pid is not), so a kill -9 is seen
// at once. On another host: whether it refreshed the row lately (RecentlySeen).
bool OrchestratorAlive(const OrchestratorState& o, Millis now);

}  // namespace tx::cli
