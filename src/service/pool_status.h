#pragma once
// The orchestrator's status as one JSON document: `tx orchestrator status --json` and
// GET /api/orchestrator print it, and the CLI's table is drawn from it.
//
// {"status": running|starting|stopping|stopped|dead (its row says it runs but its process does
//  not), "pid", "hostname", "started_at", "uptime_ms", "desired", "max_workers",
//  "live", "slots": [{"slot", "state", "pid", "started_at", "restarts", "next_start_at",
//  "last_exit", "failure", "worker_id", "worker_status", "task_id", "heartbeat_age_ms"}],
//  "queue": {status: count}, "last_reconcile_at", "last_report", "config"}
// The slots are those the orchestrator last published (a dead one's, as it left them). Every slot
// has every key; null where no worker registered in it (or it runs no task, or has not
// heartbeated). Times are milliseconds since the epoch, as the orchestrator row keeps them.

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

// One read transaction. `options.orchestrator_alive` judges whether the row's holder runs.
Result<nlohmann::json> PoolStatus(store::Store& store, const ServiceOptions& options, Millis now);

}  // namespace tx::service
