#pragma once
// Killing the agents of workers that can no longer do it themselves. A worker's agent runs in its
// own process group; the parent-death signal reaches only the agent, not the agent's children, so
// when a worker dies (or is about to be declared dead) its agent's whole group is killed here,
// before its task is requeued and runs again elsewhere.

#include <functional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/worker.h"

namespace tx::orchestrator {

// Kills the process groups of `w`'s agents when `w` ran on `hostname` (this machine): every
// process carrying its TX_WORKER_ID, found by environment rather than by the agent pid its
// heartbeats record (written a moment after the agent starts, and only if it lives that long).
// True if it signalled a group. Logs nothing: the CLI's output is its caller's to shape.
bool KillAgentOf(const Worker& w, const std::string& hostname);

// Before a reconcile pass: kills the agents of the live workers of `hostname` that the pass is
// about to declare dead (`doomed`, the reconciler's WouldDeclareDead). Returns how many.
int KillAgentsOfStaleWorkers(const std::vector<Worker>& live, const std::string& hostname,
                             const std::function<bool(const Worker&)>& doomed);

}  // namespace tx::orchestrator
