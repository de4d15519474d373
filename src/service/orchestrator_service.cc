#include "service/orchestrator_service.h"

#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;

OrchestratorService::OrchestratorService(store::Store& store, const Clock& clock)
    : store_(store), clock_(clock) {}

namespace {

std::string Holder(const OrchestratorState& o) {
  return "pid " + std::to_string(o.pid) + " on " + (o.hostname.empty() ? "?" : o.hostname);
}

Status CheckHeldBy(const OrchestratorState& o, std::int64_t pid) {
  if (o.status == "stopped" || o.pid != pid) {
    return Error::Conflict("this process (pid " + std::to_string(pid) +
                           ") no longer holds the orchestrator row (" + o.status + ", " +
                           Holder(o) + ")");
  }
  return Ok();
}

}  // namespace

Result<OrchestratorState> OrchestratorService::Acquire(std::int64_t pid,
                                                       const std::string& hostname,
                                                       const nlohmann::json& config,
                                                       const HolderAlive& alive) {
  Millis now = clock_.NowMs();
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, txn.GetOrchestrator());
    bool held = o.status != "stopped" && o.pid != 0 && !(o.pid == pid && o.hostname == hostname);
    if (held) {
      if (alive(o)) {
        return Error::Conflict("an orchestrator is already running on this store (" + Holder(o) +
                               ", " + o.status + ")");
      }
      TX_RETURN_IF_ERROR(Emit(txn, now, "orchestrator.stale_reclaimed", "", "",
                              {{"pid", o.pid}, {"hostname", o.hostname}, {"status", o.status}}));
    }
    o.status = "starting";
    o.pid = pid;
    o.hostname = hostname;
    o.started_at = now;
    o.seen_at = now;
    o.config = config;
    o.request = nlohmann::json::object();
    o.pool = nlohmann::json::object();
    TX_RETURN_IF_ERROR(txn.PutOrchestrator(o));
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "orchestrator.starting", "", "", {{"pid", pid}, {"hostname", hostname}}));
    out = std::move(o);
    return Ok();
  }));
  return out;
}

Status OrchestratorService::SetStatus(std::int64_t pid, const std::string& status) {
  Millis now = clock_.NowMs();
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, txn.GetOrchestrator());
    TX_RETURN_IF_ERROR(CheckHeldBy(o, pid));
    std::string from = o.status;
    o.status = status;
    o.seen_at = now;
    if (status == "stopped") o.request = nlohmann::json::object();
    TX_RETURN_IF_ERROR(txn.PutOrchestrator(o));
    return Emit(txn, now, "orchestrator." + status, "", "",
                {{"pid", pid}, {"hostname", o.hostname}, {"from", from}});
  });
}

Result<nlohmann::json> OrchestratorService::Publish(std::int64_t pid, const nlohmann::json& pool) {
  Millis now = clock_.NowMs();
  nlohmann::json taken = nlohmann::json::object();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, txn.GetOrchestrator());
    TX_RETURN_IF_ERROR(CheckHeldBy(o, pid));
    taken = o.request;
    o.request = nlohmann::json::object();
    o.pool = pool;
    o.seen_at = now;
    return txn.PutOrchestrator(o);
  }));
  return taken;
}

Status OrchestratorService::RecordEvent(const std::string& type, const nlohmann::json& data,
                                        const std::string& worker_id) {
  Millis now = clock_.NowMs();
  return store_.Write(
      [&](store::Txn& txn) -> Status { return Emit(txn, now, type, "", worker_id, data); });
}

Result<bool> OrchestratorService::HasRequest() {
  bool has = false;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, txn.GetOrchestrator());
    has = !o.request.empty();
    return Ok();
  }));
  return has;
}

Result<OrchestratorState> OrchestratorService::Get() {
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.GetOrchestrator());
    return Ok();
  }));
  return out;
}

namespace {

// Records a request on the running orchestrator's row and wakes it: each field of `fields` is set,
// or, with `append`, pushed onto the array of that name (so that queued requests do not overwrite
// one another).
Result<OrchestratorState> Ask(store::Store& store, Millis now, const std::string& what,
                              const nlohmann::json& fields, bool append = false) {
  OrchestratorState out;
  TX_RETURN_IF_ERROR(store.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, txn.GetOrchestrator());
    if (o.status == "stopped") return Error::Conflict("no orchestrator is running on this store");
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
    TX_RETURN_IF_ERROR(Emit(txn, now, "orchestrator." + what + "_requested", "", "", fields));
    out = std::move(o);
    return Ok();
  }));
  return out;
}

}  // namespace

Result<OrchestratorState> OrchestratorService::RequestScale(int n, const std::string& request_id) {
  if (n < 0)
    return Error::InvalidArgument("the number of workers must be >= 0, not " + std::to_string(n));
  return Ask(store_, clock_.NowMs(), "scale", {{"workers", n}, {"scale_id", request_id}});
}

Result<OrchestratorState> OrchestratorService::RequestCreate(const std::string& request_id,
                                                             const nlohmann::json& spec) {
  nlohmann::json item = spec;
  item["id"] = request_id;
  return Ask(store_, clock_.NowMs(), "create", {{"create", item}}, true);
}

Result<OrchestratorState> OrchestratorService::RequestRetire(const std::string& request_id,
                                                             const std::string& slot, bool force) {
  return Ask(store_, clock_.NowMs(), "retire",
             {{"retire", {{"id", request_id}, {"slot", slot}, {"force", force}}}}, true);
}

Result<OrchestratorState> OrchestratorService::RequestStop(bool force) {
  return Ask(store_, clock_.NowMs(), "stop", {{"stop", force ? "force" : "graceful"}});
}

}  // namespace tx::service
