#pragma once
// The orchestrators' records (one per pool), the store's reconciler record, and the reconciler's
// report.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"

namespace tx {

struct ReconcileReport {
  int dead_workers = 0;           // live workers whose heartbeats stopped, declared dead
  int expired_leases = 0;         // active claims past their lease, released
  int orphaned_tasks = 0;         // running tasks without an active claim, requeued
  int inconsistencies_fixed = 0;  // busy without task, held by a dead worker, claim on terminal
  // Tasks found waiting in review past the review timeout, marked overdue. Not a repair: not in
  // Total().
  int overdue_reviews = 0;
  // Tasks whose question waited for an answer past the question timeout, failed. Not a repair.
  int expired_questions = 0;
  // Agent limits found past their reset and announced resumed (agent.resumed). Not a repair.
  int agents_resumed = 0;
  Millis at = 0;

  int Total() const {
    return dead_workers + expired_leases + orphaned_tasks + inconsistencies_fixed;
  }
};

// A pool: one orchestrator's workers on one host, started from one .tx directory. Its id is
// "<hostname>:<directory>", the same for every start of it, so that a restarted orchestrator takes
// its own row back and its workers' slots are told apart from another pool's.
inline std::string PoolId(const std::string& hostname, const std::string& dir) {
  return hostname + ":" + dir;
}

// One orchestrator's row. A SQLite store has one running at a time; a PostgreSQL store any number
// (one per host is usual), of which one leads the reconciler (ReconcilerRecord).
struct OrchestratorState {
  std::string id;                  // PoolId
  std::string dir;                 // the .tx directory it was started from, on its host
  std::string status = "stopped";  // stopped, starting, running, stopping
  std::int64_t pid = 0;
  std::string hostname;
  Millis started_at = 0;
  nlohmann::json config = nlohmann::json::object();
  // What an operator asked (tx orchestrator scale|stop): {"workers": N, "scale_id": "…"} and/or
  // {"stop": "graceful"|"force"}. The orchestrator consumes it.
  nlohmann::json request = nlohmann::json::object();
  // The pool as the orchestrator last published it (slots, desired, scale outcomes).
  nlohmann::json pool = nlohmann::json::object();
  Millis seen_at = 0;  // the holder's last refresh of this row
};

// The store's reconciler: which orchestrator leads it now, and its last pass (whoever ran it: the
// leader, or `tx orchestrator reconcile` by hand).
struct ReconcilerRecord {
  std::string leader;  // an orchestrator's id; empty when none has led yet
  Millis leader_since = 0;
  Millis last_reconcile_at = 0;
  nlohmann::json last_report = nlohmann::json::object();  // ReconcileReport, plus "runs"
};

// A running orchestrator refreshes its row every few seconds; a row left unrefreshed this long
// belongs to one that is gone (killed, or its machine lost), whatever its status still says.
inline constexpr Millis kOrchestratorRowStaleMs = 30'000;

// Whether the row's holder runs, judged by the row alone: where its process cannot be checked
// (another host, or code that does no process I/O).
inline bool RecentlySeen(const OrchestratorState& o, Millis now) {
  return o.status != "stopped" && now - o.seen_at < kOrchestratorRowStaleMs;
}

}  // namespace tx
