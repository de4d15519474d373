#pragma once
// An orchestrator's status as one JSON document: `tx orchestrator status --json` and
// GET /api/orchestrator print it, and the CLI's table is drawn from it.
//
// {"id", "status": running|starting|stopping|stopped|dead (its row says it runs but its process
//  does not), "pid", "hostname", "dir", "started_at", "uptime_ms", "desired", "max_workers",
//  "live", "slots": [{"slot", "state", "pid", "started_at", "restarts", "next_start_at",
//  "last_exit", "failure", "worker_id", "worker_status", "task_id", "heartbeat_age_ms"}],
//  "queue": {status: count}, "last_reconcile_at", "last_report", "config",
//  "leader": the id of the orchestrator that leads the reconciler ("" when none has), "leads":
//  whether this one does, "leader_since",
//  "orchestrators": [{"id", "hostname", "pid", "dir", "status", "leads", "seen_at"}] — every row
//  of the store, each with its judged status}
// The slots are those the orchestrator last published (a dead one's, as it left them), joined with
// the newest worker of its pool in each. Every slot has every key; null where no worker
// registered in it (or it runs no task, or has not heartbeated). Times are milliseconds since the
// epoch, as the rows keep them.

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

// Which orchestrator: `wanted` (an id) if given, else as ChooseOrchestrator decides for a status
// (`local` is this directory's pool). One read transaction. `options.orchestrator_alive` judges
// whether each row's holder runs.
Result<nlohmann::json> PoolStatus(store::Store& store, const ServiceOptions& options, Millis now,
                                  const std::string& wanted, const std::string& local);

}  // namespace tx::service
