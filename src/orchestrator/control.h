#pragma once
// Asking the running orchestrator of a store to change its pool, and waiting for the answer: what
// `tx orchestrator scale` and the HTTP API's pool routes share. A request goes through the
// orchestrator's row (OrchestratorService), which wakes it; it answers in the pool it publishes
// (PoolSnapshot::results by request id, core/pool_wire.h). Each call polls the row every 50 ms,
// blocking its thread.
//
// Each call addresses one orchestrator by id (OrchestratorState::id): TargetOrchestrator finds the
// one a command means. Errors: conflict when it does not run (or it is stopping); backpressure
// "no capacity: …" when the pool gave up waiting for room under max_workers (after its capacity
// timeout); unavailable when the orchestrator died meanwhile or did not answer in time.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/orchestrator.h"
#include "core/pool_wire.h"
#include "core/worker.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::orchestrator {

// The orchestrator a command means: `wanted` (an id, from --id) if given, else this directory's
// (`local`, a PoolId) while it runs, else the only one running (service::ChooseOrchestrator).
// conflict when none runs, or when several do and none is named.
Result<std::string> TargetOrchestrator(store::Store& store, const service::ServiceOptions& options,
                                       const std::string& wanted, const std::string& local);

// Wants `n` workers; returns once every wanted slot runs: its answer (ok, workers = n).
Result<PoolAnswer> ScalePool(store::Store& store, const service::ServiceOptions& options,
                             const std::string& id, int n);

// What one created worker runs with (POST /api/workers).
struct WorkerSpec {
  std::vector<std::string> args;  // worker flags, e.g. {"--agent", "codex", "--queues", "fix"}
  std::string instructions;       // written as CLAUDE.md and AGENTS.md in its working directory
  std::string workdir;            // empty: <store dir>/workers/<slot>
};

// Adds a slot running `spec`; returns its worker once that has registered. unavailable when the
// worker's process started but did not register within 30 s (its log says why).
Result<Worker> AddWorker(store::Store& store, const service::ServiceOptions& options,
                         const std::string& id, const WorkerSpec& spec);

// Asks the running orchestrator to stop (with `force`: killing its workers now, their tasks
// released); with `wait`, returns once it has stopped. Returns its row as it was when asked. A
// stopping orchestrator may be asked again (to force it).
Result<OrchestratorState> StopOrchestrator(store::Store& store,
                                           const service::ServiceOptions& options,
                                           const std::string& id, bool force, bool wait);

// Takes `slot` out of the pool: its worker drains (or, with `force`, stops its agent now and
// releases its task without counting the attempt) and is not replaced. not_found when the pool
// has no such slot.
Status RetireSlot(store::Store& store, const service::ServiceOptions& options,
                  const std::string& id, const std::string& slot, bool force);

}  // namespace tx::orchestrator
