// The routes that act on the fleet: the orchestrator (status, scale, stop), workers (create,
// stop, pause, resume) and sessions (the running agents). Changes to the pool go to the running
// orchestrator through its row and wait for its answer (orchestrator/control.h).

#include <httplib.h>

#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/http_util.h"
#include "api/requests.h"
#include "api/server.h"
#include "core/json.h"
#include "core/pool_wire.h"
#include "orchestrator/control.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/orchestrator_service.h"
#include "service/pool_status.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "worker/flags.h"

namespace tx::api {

namespace {

using nlohmann::json;

json SessionJson(const service::Session& s, Millis now) {
  const Claim& c = s.claim;
  json j = {{"id", std::to_string(c.token)},
            {"task_id", c.task_id},
            {"task_title", s.task_title},
            {"worker_id", c.worker_id},
            {"attempt", c.attempt},
            {"started_at", ToJson(c)["started_at"]},
            {"lease_expires_at", ToJson(c)["lease_expires_at"]},
            {"running_ms", now - c.claimed_at},
            {"worker_name", nullptr},
            {"slot", nullptr},
            {"hostname", nullptr},
            {"agent_pid", nullptr}};
  if (s.worker) {
    j["worker_name"] = s.worker->name;
    if (!s.worker->slot.empty()) j["slot"] = s.worker->slot;
    j["hostname"] = s.worker->hostname;
    auto pid = s.worker->metadata.find("agent_pid");
    if (pid != s.worker->metadata.end() && pid->is_number_integer() && pid->get<int>() > 0) {
      j["agent_pid"] = *pid;
    }
  }
  return j;
}

// Whether `w` is the process the running orchestrator supervises in w's slot.
bool Supervised(const Worker& w, const OrchestratorState& o) {
  if (w.slot.empty() || w.pool != o.id) return false;
  PoolSnapshot pool = o.pool.get<PoolSnapshot>();
  const SlotSnapshot* s = pool.FindSlot(w.slot);
  return s != nullptr && s->pid == w.pid;
}

// A session's id: its claim's token (GET /api/sessions), or the heartbeat document's sessionId,
// "tx:<worker>:<task>", which names the worker's active claim on that task.
Result<std::int64_t> SessionToken(store::Store& store, const std::string& text) {
  if (text.starts_with("tx:")) {
    std::size_t colon = text.find(':', 3);
    if (colon == std::string::npos) return Error::NotFound("no session " + text);
    std::string worker = text.substr(3, colon - 3), task = text.substr(colon + 1);
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, store.ReadReturning([&](store::Txn& txn) {
      return txn.GetActiveClaimForTask(task);
    }));
    if (!claim || claim->worker_id != worker) return Error::NotFound("no session " + text);
    return claim->token;
  }
  std::int64_t token = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), token);
  if (ec != std::errc() || end != text.data() + text.size() || token <= 0) {
    return Error::NotFound("no session " + text);
  }
  return token;
}

// The orchestrator a request means: ?id= if given, else this directory's, else the only one
// running (orchestrator::TargetOrchestrator).
Result<std::string> Target(const ServerOptions& options, store::Store& store,
                           const httplib::Request& req) {
  return orchestrator::TargetOrchestrator(store, options.service,
                                          req.has_param("id") ? req.get_param_value("id") : "",
                                          options.local_pool);
}

}  // namespace

void ApiServer::ShowOrchestrator(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"id"}));
    TX_ASSIGN_OR_RETURN(json st,
                        service::PoolStatus(store, opts, store.clock().NowMs(),
                                            req.has_param("id") ? req.get_param_value("id") : "",
                                            options_.local_pool));
    TX_ASSIGN_OR_RETURN(
        st["agents"], service::AgentService(store, store.clock(), opts).StatusOf(config_.budgets));
    return st;
  });
}

void ApiServer::ScalePool(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"id"}));
    TX_ASSIGN_OR_RETURN(json body, ParseObject(req.body));
    TX_ASSIGN_OR_RETURN(int n, DecodeScale(body));
    TX_ASSIGN_OR_RETURN(std::string id, Target(options_, store, req));
    TX_ASSIGN_OR_RETURN(PoolAnswer answer, orchestrator::ScalePool(store, opts, id, n));
    return json(answer);
  });
}

void ApiServer::StopPool(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 202, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"id"}));
    TX_ASSIGN_OR_RETURN(json body, ParseObject(req.body.empty() ? "{}" : req.body));
    TX_ASSIGN_OR_RETURN(bool force, DecodeStop(body));
    TX_ASSIGN_OR_RETURN(std::string id, Target(options_, store, req));
    TX_RETURN_IF_ERROR(orchestrator::StopOrchestrator(store, opts, id, force, false));
    return json{{"status", "stopping"}, {"force", force}, {"id", id}};
  });
}

// A supervised worker made to order. No capacity under max-workers within the capacity
// timeout is a 503, as the issue of capacity is the server's, not the request's.
void ApiServer::CreateWorker(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  Result<Worker> added = [&]() -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(json body, ParseObject(req.body));
    TX_ASSIGN_OR_RETURN(NewWorker spec, DecodeNewWorker(body));
    Result<std::string> id = Target(options_, store, req);
    if (!id.ok() && id.error().message() == "no orchestrator is running on this store") {
      return Error::Conflict(
          "no orchestrator is running on this store: a created worker is supervised by it");
    }
    TX_RETURN_IF_ERROR(id);
    TX_ASSIGN_OR_RETURN(OrchestratorState o,
                        service::OrchestratorService(store, store.clock()).Get(*id));
    if (!spec.workdir.empty() && !std::filesystem::path(spec.workdir).is_absolute()) {
      return Error::InvalidArgument("field 'workdir' must be an absolute path");
    }
    // Checked as the worker will check its flags: the pool's own, then this worker's.
    std::vector<std::string> all;
    if (o.config.contains("worker_args") && o.config["worker_args"].is_array()) {
      for (const auto& a : o.config["worker_args"]) {
        if (a.is_string()) all.push_back(a.get<std::string>());
      }
    }
    all.insert(all.end(), spec.args.begin(), spec.args.end());
    worker::WorkerFlags flags;
    TX_RETURN_IF_ERROR(worker::ApplyWorkerArgs(all, flags));
    TX_RETURN_IF_ERROR(worker::BuildWorkerConfig(options_.db_path, "", flags));
    return orchestrator::AddWorker(
        store, opts, *id,
        {std::move(spec.args), std::move(spec.instructions), std::move(spec.workdir)});
  }();
  if (!added.ok()) {
    if (added.error().code() == ErrorCode::kBackpressure) {
      return ReplyError(res, 503, "no_capacity", added.error().message());
    }
    return ReplyError(res, added.error());
  }
  res.set_header("Location", "/api/workers/" + added->id);
  Reply(res, 201, ToJson(*added, store.clock().Now()));
}

// Stops a worker: gracefully (it finishes its task), or with ?force=true now (its agent is
// stopped and its task released, the attempt not counted). A worker the running orchestrator
// supervises leaves the pool with its slot, instead of being replaced.
void ApiServer::StopWorker(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 202, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"force"}));
    bool force = false;
    if (req.has_param("force")) {
      std::string v = req.get_param_value("force");
      if (v != "true" && v != "false") {
        return Error::InvalidArgument("parameter 'force' must be true or false");
      }
      force = v == "true";
    }
    service::WorkerService workers(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(Worker w, workers.Get(req.matches[1].str()));
    if (!IsLive(w.status)) {
      return Error::Conflict("worker " + w.id + " is " + std::string(ToString(w.status)));
    }
    // The worker's own orchestrator, whichever it is.
    TX_ASSIGN_OR_RETURN(OrchestratorState o,
                        service::OrchestratorService(store, store.clock()).Get(w.pool));
    if (o.status != "stopped" && opts.orchestrator_alive(o, store.clock().NowMs()) &&
        Supervised(w, o)) {
      TX_RETURN_IF_ERROR(orchestrator::RetireSlot(store, opts, o.id, w.slot, force));
    } else {
      TX_RETURN_IF_ERROR(
          workers.Request(w.id, force ? WorkerRequest::kStopNow : WorkerRequest::kStop));
    }
    TX_ASSIGN_OR_RETURN(Worker now, workers.Get(w.id));
    return ToJson(now, store.clock().Now());
  });
}

void ApiServer::RequestOfWorker(const httplib::Request& req, httplib::Response& res,
                                WorkerRequest request) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {}));
    TX_ASSIGN_OR_RETURN(
        Worker w,
        service::WorkerService(store, store.clock(), opts).Request(req.matches[1].str(), request));
    return ToJson(w, store.clock().Now());
  });
}

void ApiServer::PauseWorker(const httplib::Request& req, httplib::Response& res) {
  RequestOfWorker(req, res, WorkerRequest::kPause);
}

void ApiServer::ResumeWorker(const httplib::Request& req, httplib::Response& res) {
  RequestOfWorker(req, res, WorkerRequest::kResume);
}

void ApiServer::ListSessions(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {}));
    TX_ASSIGN_OR_RETURN(std::vector<service::Session> sessions,
                        service::ClaimService(store, store.clock(), opts).ListSessions());
    Millis now = store.clock().NowMs();
    json out = {{"sessions", json::array()}};
    for (const auto& s : sessions) out["sessions"].push_back(SessionJson(s, now));
    return out;
  });
}

// Stops one running agent: its attempt ends `cancelled` and the task goes back to the queue.
void ApiServer::EndSession(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {}));
    TX_ASSIGN_OR_RETURN(std::int64_t token, SessionToken(store, req.matches[1].str()));
    TX_ASSIGN_OR_RETURN(Task t, service::ClaimService(store, store.clock(), opts)
                                    .EndSession(token, "ended over the HTTP API"));
    TX_ASSIGN_OR_RETURN(service::TaskDetail d,
                        service::TaskService(store, store.clock(), opts).Show(t.id));
    return ToJson(d.task, d.attempts, d.usage);
  });
}

}  // namespace tx::api
