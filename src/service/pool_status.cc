#include "service/pool_status.h"

#include <map>
#include <string>

#include "core/pool_wire.h"
#include "service/orchestrator_service.h"

namespace tx::service {

namespace {

// The status a row shows: its own, or dead when it says it runs and its holder does not.
std::string Judged(const OrchestratorState& o, bool alive) {
  return o.status != "stopped" && !alive ? "dead" : o.status;
}

}  // namespace

Result<nlohmann::json> PoolStatus(store::Store& store, const ServiceOptions& given, Millis now,
                                  const std::string& wanted, const std::string& local) {
  ServiceOptions options = WithDefaults(given);
  std::vector<OrchestratorState> rows;
  ReconcilerRecord record;
  std::vector<Worker> all;
  std::vector<store::StatusCount> counts;
  TX_RETURN_IF_ERROR(store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(rows, txn.ListOrchestrators());
    TX_ASSIGN_OR_RETURN(record, txn.GetReconcilerRecord());
    TX_ASSIGN_OR_RETURN(all, txn.ListWorkers({}));
    TX_ASSIGN_OR_RETURN(counts, txn.CountTasks());
    return Ok();
  }));
  auto alive = [&](const OrchestratorState& o) { return options.orchestrator_alive(o, now); };
  TX_ASSIGN_OR_RETURN(std::string id,
                      ChooseOrchestrator(rows, wanted, local, record.leader, alive, true));
  OrchestratorState o;
  o.id = id;
  nlohmann::json list = nlohmann::json::array();
  bool leader_up = false;
  for (const auto& row : rows) {
    bool up = alive(row);
    if (row.id == id) o = row;
    leader_up = leader_up || (row.id == record.leader && up && row.status != "stopped");
    list.push_back({{"id", row.id},
                    {"hostname", row.hostname},
                    {"pid", row.pid},
                    {"dir", row.dir},
                    {"status", Judged(row, up)},
                    {"leads", row.id == record.leader},
                    {"seen_at", row.seen_at}});
  }
  bool is_alive = alive(o);
  std::map<std::string, std::int64_t> by_status;
  for (const auto& c : counts) by_status[std::string(ToString(c.status))] += c.count;

  // The newest registration of each of the pool's slots is what the slot runs (or last ran).
  std::map<std::string, const Worker*> by_slot;
  for (const auto& w : all) {
    if (!w.slot.empty() && w.pool == o.id && !by_slot.count(w.slot)) by_slot[w.slot] = &w;
  }
  PoolSnapshot pool = o.pool.get<PoolSnapshot>();
  nlohmann::json slots = nlohmann::json::array();
  for (const auto& s : pool.slots) {
    nlohmann::json j = s;
    j["worker_id"] = j["worker_status"] = j["task_id"] = j["heartbeat_age_ms"] = nullptr;
    if (auto it = by_slot.find(s.slot); it != by_slot.end()) {
      const Worker& w = *it->second;
      j["worker_id"] = w.id;
      j["worker_status"] = ToString(w.status);
      if (!w.current_task_id.empty()) j["task_id"] = w.current_task_id;
      if (w.last_heartbeat_at > 0) j["heartbeat_age_ms"] = now - w.last_heartbeat_at;
    }
    slots.push_back(std::move(j));
  }
  return nlohmann::json{{"id", o.id},
                        {"status", Judged(o, is_alive)},
                        {"pid", o.pid},
                        {"hostname", o.hostname},
                        {"dir", o.dir},
                        {"started_at", o.started_at},
                        {"uptime_ms", o.started_at > 0 && is_alive ? now - o.started_at : 0},
                        {"desired", pool.desired},
                        {"max_workers", pool.max_workers},
                        {"live", pool.live},
                        {"slots", slots},
                        {"queue", by_status},
                        {"last_reconcile_at", record.last_reconcile_at},
                        {"last_report", record.last_report},
                        {"config", o.config},
                        {"leader", leader_up ? record.leader : std::string()},
                        {"leads", leader_up && record.leader == o.id},
                        {"leader_since", leader_up ? record.leader_since : 0},
                        {"orchestrators", list}};
}

}  // namespace tx::service
