#include "service/orchestrator_service.h"

#include <algorithm>

#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;

Result<std::string> ChooseOrchestrator(const std::vector<OrchestratorState>& rows,
                                       const std::string& wanted, const std::string& local,
                                       const std::string& leader,
                                       const std::function<bool(const OrchestratorState&)>& alive,
                                       bool any) {
  if (!wanted.empty()) {
    for (const auto& o : rows) {
      if (o.id == wanted) return o.id;
    }
    return Error::NotFound("no orchestrator " + wanted + " on this store");
  }
  std::vector<const OrchestratorState*> running;
  const OrchestratorState* mine = nullptr;
  const OrchestratorState* last_seen = nullptr;
  for (const auto& o : rows) {
    bool up = o.status != "stopped" && alive(o);
    if (up) running.push_back(&o);
    if (o.id == local) mine = &o;
    if (last_seen == nullptr || o.seen_at > last_seen->seen_at) last_seen = &o;
  }
  if (mine != nullptr && std::find(running.begin(), running.end(), mine) != running.end()) {
    return mine->id;
  }
  if (running.size() == 1) return running[0]->id;
  if (running.size() > 1) {
    if (any) {
      for (const auto* o : running) {
        if (o->id == leader) return o->id;
      }
      return running[0]->id;
    }
    std::string ids;
    for (const auto* o : running) ids += (ids.empty() ? "" : ", ") + o->id;
    return Error::Conflict(std::to_string(running.size()) + " orchestrators run on this store (" +
                           ids +
                           "): run this in the directory of one of them, or name it with --id");
  }
  if (mine != nullptr) return mine->id;
  return last_seen != nullptr ? last_seen->id : std::string();
}

Status CheckNothingRuns(store::Store& store, const ServiceOptions& given, const Moment& now) {
  ServiceOptions options = WithDefaults(given);
  std::vector<OrchestratorState> rows;
  std::vector<Worker> live;
  TX_RETURN_IF_ERROR(store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(rows, txn.ListOrchestrators());
    TX_ASSIGN_OR_RETURN(live, txn.ListWorkers(LiveWorkerStatuses()));
    return Ok();
  }));
  for (const auto& o : rows) {
    if (o.status != "stopped" && options.orchestrator_alive(o, now)) {
      return Error::Conflict("an orchestrator runs on " + store.Describe() + " (pid " +
                             std::to_string(o.pid) + " on " + o.hostname +
                             "): stop it first (tx orchestrator stop)");
    }
  }
  std::string busy;
  int n = 0;
  for (const auto& w : live) {
    // Gone (options.worker_alive: its process has exited, or it went stale), or a name a hand
    // claim registered: no process that would go on writing to this store.
    if (w.metadata.value("manual", false) || !options.worker_alive(w, now)) continue;
    if (++n <= 3) busy += (busy.empty() ? "" : ", ") + w.id;
  }
  if (n > 0) {
    return Error::Conflict(std::to_string(n) + " workers still run on " + store.Describe() + " (" +
                           busy + (n > 3 ? ", …" : "") +
                           "): stop them first (tx worker stop --all)");
  }
  return Ok();
}

OrchestratorService::OrchestratorService(store::Store& store, const Clock& clock)
    : store_(store), clock_(clock) {}

namespace {

std::string Holder(const OrchestratorState& o) {
  return "pid " + std::to_string(o.pid) + " on " + (o.hostname.empty() ? "?" : o.hostname);
}

// Row `id` as the store has it, or a stopped one with that id.
Result<OrchestratorState> Row(store::Txn& txn, const std::string& id) {
  TX_ASSIGN_OR_RETURN(std::optional<OrchestratorState> o, txn.GetOrchestrator(id));
  if (o) return std::move(*o);
  OrchestratorState fresh;
  fresh.id = id;
  return fresh;
}

Status CheckHeldBy(const OrchestratorState& o, std::int64_t pid) {
  if (o.status == "stopped" || o.pid != pid) {
    return Error::Conflict("this process (pid " + std::to_string(pid) +
                           ") no longer holds the orchestrator row " + o.id + " (" + o.status +
                           ", " + Holder(o) + ")");
  }
  return Ok();
}

}  // namespace

Result<OrchestratorState> OrchestratorService::Acquire(const std::string& id,
                                                       const std::string& dir, std::int64_t pid,
                                                       const std::string& hostname,
                                                       const nlohmann::json& config,
                                                       const HolderAlive& alive, bool exclusive) {
  Millis now = clock_.NowMs();
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> all, txn.ListOrchestrators());
    for (const auto& other : all) {
      if (other.id == id || !exclusive) continue;
      if (other.status != "stopped" && alive(other)) {
        return Error::Conflict("an orchestrator is already running on this store (" +
                               Holder(other) + ", " + other.status + ")");
      }
    }
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    bool held = o.status != "stopped" && o.pid != 0 && !(o.pid == pid && o.hostname == hostname);
    if (held) {
      if (alive(o)) {
        return Error::Conflict("an orchestrator is already running on this store (" + Holder(o) +
                               ", " + o.status + ")");
      }
      TX_RETURN_IF_ERROR(
          Emit(txn, now, "orchestrator.stale_reclaimed", "", "",
               {{"id", id}, {"pid", o.pid}, {"hostname", o.hostname}, {"status", o.status}}));
    }
    o.dir = dir;
    o.status = "starting";
    o.pid = pid;
    o.hostname = hostname;
    o.started_at = now;
    o.seen_at = now;
    o.config = config;
    o.request = nlohmann::json::object();
    o.pool = nlohmann::json::object();
    TX_RETURN_IF_ERROR(txn.PutOrchestrator(o));
    TX_RETURN_IF_ERROR(Emit(txn, now, "orchestrator.starting", "", "",
                            {{"id", id}, {"pid", pid}, {"hostname", hostname}}));
    out = std::move(o);
    return Ok();
  }));
  return out;
}

Status OrchestratorService::SetStatus(const std::string& id, std::int64_t pid,
                                      const std::string& status) {
  Millis now = clock_.NowMs();
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    TX_RETURN_IF_ERROR(CheckHeldBy(o, pid));
    std::string from = o.status;
    o.status = status;
    o.seen_at = now;
    if (status == "stopped") o.request = nlohmann::json::object();
    TX_RETURN_IF_ERROR(txn.PutOrchestrator(o));
    return Emit(txn, now, "orchestrator." + status, "", "",
                {{"id", id}, {"pid", pid}, {"hostname", o.hostname}, {"from", from}});
  });
}

Result<nlohmann::json> OrchestratorService::Publish(const std::string& id, std::int64_t pid,
                                                    const nlohmann::json& pool) {
  Millis now = clock_.NowMs();
  nlohmann::json taken = nlohmann::json::object();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    TX_RETURN_IF_ERROR(CheckHeldBy(o, pid));
    taken = o.request;
    o.request = nlohmann::json::object();
    o.pool = pool;
    o.seen_at = now;
    return txn.PutOrchestrator(o);
  }));
  return taken;
}

Status OrchestratorService::SetConfig(const std::string& id, std::int64_t pid,
                                      const nlohmann::json& config) {
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    TX_RETURN_IF_ERROR(CheckHeldBy(o, pid));
    o.config = config;
    return txn.PutOrchestrator(o);
  });
}

Status OrchestratorService::RecordLeader(const std::string& id) {
  Millis now = clock_.NowMs();
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(ReconcilerRecord r, txn.GetReconcilerRecord());
    if (r.leader == id) return Ok();
    std::string previous = r.leader;
    r.leader = id;
    r.leader_since = now;
    TX_RETURN_IF_ERROR(txn.PutReconcilerRecord(r));
    return Emit(txn, now, "orchestrator.leader", "", "", {{"id", id}, {"previous", previous}});
  });
}

Status OrchestratorService::ClearLeader(const std::string& id) {
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(ReconcilerRecord r, txn.GetReconcilerRecord());
    if (r.leader != id) return Ok();
    r.leader.clear();
    return txn.PutReconcilerRecord(r);
  });
}

Result<ReconcilerRecord> OrchestratorService::Reconciler() {
  ReconcilerRecord out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.GetReconcilerRecord());
    return Ok();
  }));
  return out;
}

Status OrchestratorService::RecordEvent(const std::string& type, const nlohmann::json& data,
                                        const std::string& worker_id) {
  Millis now = clock_.NowMs();
  return store_.Write(
      [&](store::Txn& txn) -> Status { return Emit(txn, now, type, "", worker_id, data); });
}

Result<bool> OrchestratorService::HasRequest(const std::string& id) {
  bool has = false;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    has = !o.request.empty();
    return Ok();
  }));
  return has;
}

Result<OrchestratorState> OrchestratorService::Get(const std::string& id) {
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, Row(txn, id));
    return Ok();
  }));
  return out;
}

Result<std::vector<OrchestratorState>> OrchestratorService::List() {
  std::vector<OrchestratorState> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListOrchestrators());
    return Ok();
  }));
  return out;
}

namespace {

// Records a request on a running orchestrator's row and wakes it: each field of `fields` (a
// PoolRequest's JSON, or with `append` one CreateRequest or RetireRequest under its key) is set,
// or, with `append`, pushed onto the array of that name (so that queued requests do not overwrite
// one another). The event carries `fields` as they are.
Result<OrchestratorState> Ask(store::Store& store, Millis now, const std::string& id,
                              const std::string& what, const nlohmann::json& fields,
                              bool append = false) {
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, Row(txn, id));
    if (o.status == "stopped") {
      return Error::Conflict("no orchestrator is running on this store" +
                             (id.empty() ? std::string() : " as " + id));
    }
    if (o.status == "stopping" && what != "stop") {
      return Error::Conflict("the orchestrator is stopping");
    }
    for (const auto& [k, v] : fields.items()) {
      if (!append) {
        o.request[k] = v;
      } else {
        if (!o.request.contains(k) || !o.request[k].is_array())
          o.request[k] = nlohmann::json::array();
        o.request[k].push_back(v);
      }
    }
    TX_RETURN_IF_ERROR(txn.PutOrchestrator(o));
    txn.WakeWatchersOnCommit();
    nlohmann::json data = fields;
    data["id"] = id;
    TX_RETURN_IF_ERROR(Emit(txn, now, "orchestrator." + what + "_requested", "", "", data));
    out = std::move(o);
    return Ok();
  }));
  return out;
}

}  // namespace

Result<OrchestratorState> OrchestratorService::RequestScale(const std::string& id, int n,
                                                            const std::string& request_id) {
  if (n < 0)
    return Error::InvalidArgument("the number of workers must be >= 0, not " + std::to_string(n));
  PoolRequest scale;
  scale.workers = n;
  scale.scale_id = request_id;
  return Ask(store_, clock_.NowMs(), id, "scale", scale);
}

Result<OrchestratorState> OrchestratorService::RequestCreate(const std::string& id,
                                                             const CreateRequest& request) {
  return Ask(store_, clock_.NowMs(), id, "create", {{"create", request}}, true);
}

Result<OrchestratorState> OrchestratorService::RequestRetire(const std::string& id,
                                                             const std::string& request_id,
                                                             const std::string& slot, bool force) {
  return Ask(store_, clock_.NowMs(), id, "retire",
             {{"retire", RetireRequest{request_id, slot, force}}}, true);
}

Result<OrchestratorState> OrchestratorService::RequestStop(const std::string& id, bool force) {
  PoolRequest stop;
  stop.stop = force ? PoolStop::kForce : PoolStop::kGraceful;
  return Ask(store_, clock_.NowMs(), id, "stop", stop);
}

}  // namespace tx::service
