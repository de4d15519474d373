#include "core/json.h"

#include "core/duration.h"

namespace tx {

namespace {
nlohmann::json Time(Millis t) { return t > 0 ? nlohmann::json(FormatTime(t)) : nlohmann::json(); }
}  // namespace

nlohmann::json ToJson(const Claim& c) {
  nlohmann::json j = {
      {"n", c.attempt},
      {"token", c.token},
      {"task_id", c.task_id},
      {"worker_id", c.worker_id},
      {"status", ToString(c.status)},
      {"started_at", Time(c.claimed_at)},
      {"lease_expires_at", Time(c.lease_expires_at)},
      {"renewed_count", c.renewed_count},
      {"ended_at", Time(c.ended_at)},
      {"end_reason", c.end_reason == EndReason::kNone ? nlohmann::json()
                                                      : nlohmann::json(ToString(c.end_reason))},
      {"exit_code", c.exit_code ? nlohmann::json(*c.exit_code) : nlohmann::json()},
  };
  return j;
}

nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : attempts) a.push_back(ToJson(c));
  return {
      {"id", t.id},
      {"status", ToString(t.status)},
      {"title", t.title},
      {"description", t.description},
      {"instructions", t.instructions},
      {"deliverables", t.deliverables},
      {"steps", t.steps},
      {"priority", t.priority},
      {"queue", t.queue},
      {"requires", t.requires_caps},
      {"after", t.after},
      {"owner", t.owner},
      {"workdir", t.workdir},
      {"command", t.command},
      {"agent", t.agent},
      {"timeout", FormatDuration(t.timeout_ms)},
      {"attempt", t.attempt},
      {"max_attempts", t.max_attempts},
      {"review", t.review},
      {"repo", t.repo},
      {"base", t.base_branch},
      {"metadata", t.metadata},
      {"result", t.result},
      {"error", t.error},
      {"run_after", Time(t.run_after)},
      {"created_at", Time(t.created_at)},
      {"updated_at", Time(t.updated_at)},
      {"started_at", Time(t.started_at)},
      {"finished_at", Time(t.finished_at)},
      {"attempts", a},
  };
}

nlohmann::json ToJson(const Worker& w, Millis now) {
  return {
      {"id", w.id},
      {"name", w.name},
      {"slot", w.slot},
      {"hostname", w.hostname},
      {"pid", w.pid},
      {"status", ToString(w.status)},
      {"stale", IsLive(w.status) && IsStale(w, now)},
      {"capabilities", w.capabilities},
      {"queues", w.queues},
      {"heartbeat_interval", FormatDuration(w.heartbeat_interval_ms)},
      {"registered_at", Time(w.registered_at)},
      {"last_heartbeat_at", Time(w.last_heartbeat_at)},
      {"current_task_id",
       w.current_task_id.empty() ? nlohmann::json() : nlohmann::json(w.current_task_id)},
      {"reason", w.reason},
      {"request",
       w.request == WorkerRequest::kNone ? nlohmann::json() : nlohmann::json(ToString(w.request))},
      {"metadata", w.metadata},
  };
}

nlohmann::json HeartbeatDocument(const std::vector<Worker>& workers,
                                 const std::map<std::string, std::string>& titles) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& w : workers) {
    std::string key = w.slot.empty() ? w.name : w.slot;
    if (out.contains(key)) continue;  // an older registration of the same slot
    bool live = IsLive(w.status);
    bool working = live && !w.current_task_id.empty();
    auto meta_int = [&](const char* field) -> nlohmann::json {
      auto it = w.metadata.find(field);
      return it != w.metadata.end() && it->is_number_integer() ? *it : nlohmann::json(0);
    };
    nlohmann::json meta = {{"workerPid", live ? nlohmann::json(w.pid) : nlohmann::json()},
                           {"workerVersion", "0.1.0"},
                           {"restartCount", meta_int("restart_count")},
                           {"workerId", w.id}};
    if (working) meta["agentPid"] = meta_int("agent_pid");
    if (!live) meta["offlineReason"] = w.reason;
    auto title = titles.find(w.current_task_id);
    out[key] = {
        {"slot", key},
        {"status", !live     ? "offline"
                   : working ? "working"
                             : "idle"},
        {"task", working ? nlohmann::json(w.current_task_id) : nlohmann::json()},
        {"taskTitle",
         working && title != titles.end() ? nlohmann::json(title->second) : nlohmann::json()},
        {"sessionId",
         working ? nlohmann::json("tx:" + w.id + ":" + w.current_task_id) : nlohmann::json()},
        {"lastUpdate", w.last_heartbeat_at},
        {"startedAt", w.registered_at},
        {"metadata", meta},
    };
  }
  return {{"workers", out}};
}

nlohmann::json ToJson(const Event& e) {
  return {
      {"id", e.id},
      {"type", e.type},
      {"at", Time(e.at)},
      {"task_id", e.task_id.empty() ? nlohmann::json() : nlohmann::json(e.task_id)},
      {"worker_id", e.worker_id.empty() ? nlohmann::json() : nlohmann::json(e.worker_id)},
      {"data", e.data},
  };
}

nlohmann::json ToJson(const ReconcileReport& r) {
  return {
      {"dead_workers", r.dead_workers},
      {"expired_leases", r.expired_leases},
      {"orphaned_tasks", r.orphaned_tasks},
      {"inconsistencies_fixed", r.inconsistencies_fixed},
      {"at", Time(r.at)},
  };
}

}  // namespace tx
