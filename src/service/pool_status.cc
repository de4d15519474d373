#include "service/pool_status.h"

#include <map>
#include <string>

namespace tx::service {

Result<nlohmann::json> PoolStatus(store::Store& store, const ServiceOptions& given, Millis now) {
  ServiceOptions options = WithDefaults(given);
  OrchestratorState o;
  std::vector<Worker> all;
  std::vector<store::StatusCount> counts;
  TX_RETURN_IF_ERROR(store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(o, txn.GetOrchestrator());
    TX_ASSIGN_OR_RETURN(all, txn.ListWorkers({}));
    TX_ASSIGN_OR_RETURN(counts, txn.CountTasks());
    return Ok();
  }));
  bool alive = options.orchestrator_alive(o, now);
  std::map<std::string, std::int64_t> by_status;
  for (const auto& c : counts) by_status[std::string(ToString(c.status))] += c.count;

  // The newest registration of each slot is what the slot runs (or last ran).
  std::map<std::string, const Worker*> by_slot;
  for (const auto& w : all) {
    if (!w.slot.empty() && !by_slot.count(w.slot)) by_slot[w.slot] = &w;
  }
  nlohmann::json slots = nlohmann::json::array();
  if (o.pool.contains("slots")) {
    for (const auto& s : o.pool["slots"]) {
      nlohmann::json j = s;
      j["worker_id"] = j["worker_status"] = j["task_id"] = j["heartbeat_age_ms"] = nullptr;
      if (auto it = by_slot.find(s.value("slot", "")); it != by_slot.end()) {
        const Worker& w = *it->second;
        j["worker_id"] = w.id;
        j["worker_status"] = ToString(w.status);
        if (!w.current_task_id.empty()) j["task_id"] = w.current_task_id;
        if (w.last_heartbeat_at > 0) j["heartbeat_age_ms"] = now - w.last_heartbeat_at;
      }
      slots.push_back(std::move(j));
    }
  }
  return nlohmann::json{{"status", o.status != "stopped" && !alive ? "dead" : o.status},
                        {"pid", o.pid},
                        {"hostname", o.hostname},
                        {"started_at", o.started_at},
                        {"uptime_ms", o.started_at > 0 && alive ? now - o.started_at : 0},
                        {"desired", o.pool.value("desired", 0)},
                        {"max_workers", o.pool.value("max_workers", 0)},
                        {"live", o.pool.value("live", 0)},
                        {"slots", slots},
                        {"queue", by_status},
                        {"last_reconcile_at", o.last_reconcile_at},
                        {"last_report", o.last_report},
                        {"config", o.config}};
}

}  // namespace tx::service
