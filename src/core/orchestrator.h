#pragma once
// The orchestrator's singleton record and the reconciler's report.

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
  Millis at = 0;

  int Total() const {
    return dead_workers + expired_leases + orphaned_tasks + inconsistencies_fixed;
  }
};

struct OrchestratorState {
  std::string status = "stopped";  // stopped, starting, running, stopping
  std::int64_t pid = 0;
  std::string hostname;
  Millis started_at = 0;
  Millis last_reconcile_at = 0;
  nlohmann::json last_report = nlohmann::json::object();
  nlohmann::json config = nlohmann::json::object();
  // What an operator asked (tx orchestrator scale|stop): {"workers": N, "scale_id": "…"} and/or
  // {"stop": "graceful"|"force"}. The orchestrator consumes it.
  nlohmann::json request = nlohmann::json::object();
  // The pool as the orchestrator last published it (slots, desired, scale outcomes).
  nlohmann::json pool = nlohmann::json::object();
  Millis seen_at = 0;  // the holder's last refresh of this row
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
