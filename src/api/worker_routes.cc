// The remote-worker protocol (docs/api.md, "Remote workers"): what `tx worker start --server`
// does over HTTP, one route per call of the local path, every outcome fenced by the claim's
// token exactly as there. Every reply carries "server_time", the clock leases are judged by.

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/http_util.h"
#include "api/requests.h"
#include "api/server.h"
#include "api/worker_protocol.h"
#include "core/json.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"
#include "worker/spawn_plan.h"

namespace tx::api {

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// How often a waiting claim looks again even without a wake-up: a retry's backoff ending makes a
// task eligible without any commit.
constexpr Millis kClaimRecheckMs = 1'000;
// The largest copy of an attempt's log the server keeps for a remote worker.
constexpr std::int64_t kMaxShippedLogBytes = 64 << 20;

json ClaimJson(const service::ClaimResult& c) {
  return {{"claim", ToJson(c.claim)}, {"task", ToJson(c.task, {})}};
}

Result<std::int64_t> IntegerParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) {
    return Error::InvalidArgument("parameter '" + std::string(name) + "' is required");
  }
  std::string v = req.get_param_value(name);
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0) {
    return Error::InvalidArgument("parameter '" + std::string(name) + "' must be a number");
  }
  return n;
}

// The claim a worker already holds, if any: a claim whose reply was lost (a dropped connection,
// a cut-short wait) is handed back instead of a second task being claimed.
Result<std::optional<service::ClaimResult>> HeldClaim(store::Store& store,
                                                      const std::string& worker_id) {
  std::optional<service::ClaimResult> out;
  TX_RETURN_IF_ERROR(store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(worker_id));
    if (!w || w->current_task_id.empty()) return Ok();
    TX_ASSIGN_OR_RETURN(std::optional<Claim> c, txn.GetActiveClaimForTask(w->current_task_id));
    if (!c || c->worker_id != worker_id) return Ok();
    TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(c->task_id));
    if (t) out = service::ClaimResult{std::move(*c), std::move(*t)};
    return Ok();
  }));
  return out;
}

}  // namespace

void ApiServer::WorkerRoutes() {
  httplib::Server& h = *http_;
  const service::ServiceOptions& opts = options_.service;

  // Runs `fn` with a store of its own and replies with its JSON plus the server's time, or with
  // its error. A null JSON is a 204.
  auto serve = [this](const httplib::Request& req, httplib::Response& res, int ok_status, auto fn) {
    Result<StorePool::Lease> s = stores_.Acquire();
    if (!s.ok()) return ReplyError(res, s.error());
    Result<json> body = ParseObject(req.body);
    if (!body.ok()) return ReplyError(res, body.error());
    Result<json> out = fn(**s, *body);
    if (!out.ok()) return ReplyError(res, out.error());
    if (out->is_null()) {
      res.status = 204;
      return;
    }
    (*out)["server_time"] = (*s)->clock().NowMs();
    Reply(res, ok_status, *out);
  };

  h.Post(
      "/api/worker/register", [serve, &opts](const httplib::Request& req, httplib::Response& res) {
        serve(req, res, 201, [&](store::Store& store, const json& body) -> Result<json> {
          TX_ASSIGN_OR_RETURN(service::Registration r, DecodeRegistration(body));
          std::vector<Worker> replaced;
          TX_ASSIGN_OR_RETURN(
              Worker w,
              service::WorkerService(store, store.clock(), opts).Register(std::move(r), &replaced));
          Millis now = store.clock().NowMs();
          json out = {{"worker", ToJson(w, now)}, {"replaced", json::array()}};
          for (const auto& old : replaced) out["replaced"].push_back(ToJson(old, now));
          return out;
        });
      });

  // Recorded with the other heartbeats that arrive within a few milliseconds, in one
  // transaction (HeartbeatBatcher), which has a store of its own: the request holds none while
  // it waits for its batch.
  h.Post("/api/worker/heartbeat", [this](const httplib::Request& req, httplib::Response& res) {
    Result<json> body = ParseObject(req.body);
    if (!body.ok()) return ReplyError(res, body.error());
    Result<HeartbeatBody> hb = DecodeHeartbeat(*body);
    if (!hb.ok()) return ReplyError(res, hb.error());
    Result<Worker> w = beats_->Beat(std::move(hb->worker_id), std::move(hb->update));
    if (!w.ok()) return ReplyError(res, w.error());
    Millis now = beats_->clock().NowMs();
    Reply(res, 200, json{{"worker", ToJson(*w, now)}, {"server_time", now}});
  });

  h.Post("/api/worker/deregister", [serve, &opts](const httplib::Request& req,
                                                  httplib::Response& res) {
    serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
      TX_ASSIGN_OR_RETURN(DeregisterBody d, DecodeDeregister(body));
      TX_ASSIGN_OR_RETURN(
          Worker w,
          service::WorkerService(store, store.clock(), opts).Deregister(d.worker_id, d.reason));
      return json{{"worker", ToJson(w, store.clock().NowMs())}};
    });
  });

  // The next task for this worker, waiting up to wait_ms for one (a long poll): 200 with the
  // claim and its task, or 204 when none came or an operator's request for the worker arrived.
  h.Post("/api/worker/claim", [this, serve, &opts](const httplib::Request& req,
                                                   httplib::Response& res) {
    serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
      TX_ASSIGN_OR_RETURN(ClaimBody c, DecodeClaim(body));
      TX_ASSIGN_OR_RETURN(std::optional<service::ClaimResult> held, HeldClaim(store, c.worker_id));
      if (held) return ClaimJson(*held);
      service::ClaimService claims(store, store.clock(), opts);
      service::WorkerService workers(store, store.clock(), opts);
      // Waiting claims hold server threads: past half of them, a claim does not wait, and its
      // worker is told when to come back instead.
      struct Waiting {
        std::atomic<int>& n;
        ~Waiting() { --n; }
      } waiting{waiting_claims_};
      if (++waiting_claims_ > options_.threads / 2 && c.wait_ms > 0) {
        c.wait_ms = 0;
        res.set_header("Retry-After", "1");
      }
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.wait_ms);
      for (;;) {
        std::uint64_t seen = hub_->ready_generation();
        const service::AgentGate* gate =
            c.gate.blocked_agents.empty() && c.gate.blocked_agent_queues.empty() ? nullptr
                                                                                 : &c.gate;
        TX_ASSIGN_OR_RETURN(std::optional<service::ClaimResult> got,
                            claims.ClaimNext(c.worker_id, c.lease_ms, gate));
        if (got) return ClaimJson(*got);
        TX_ASSIGN_OR_RETURN(Worker w, workers.Get(c.worker_id));
        if (w.request != WorkerRequest::kNone) return json();  // it has something else to do
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline || hub_->stopping()) return json();
        Millis wait = std::min<Millis>(
            kClaimRecheckMs,
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
        TX_ASSIGN_OR_RETURN(std::optional<Millis> next, claims.NextEligibleAt(c.worker_id, gate));
        if (next) wait = std::clamp<Millis>(*next - store.clock().NowMs(), 0, wait);
        hub_->WaitForReady(seen, std::chrono::milliseconds(wait));
      }
    });
  });

  h.Get(R"(/api/worker/claims/(\d+))", [this, &opts](const httplib::Request& req,
                                                     httplib::Response& res) {
    Result<StorePool::Lease> s = stores_.Acquire();
    if (!s.ok()) return ReplyError(res, s.error());
    store::Store& store = **s;
    Result<Claim> c =
        service::ClaimService(store, store.clock(), opts).Inspect(std::stoll(req.matches[1].str()));
    if (!c.ok()) return ReplyError(res, c.error());
    Reply(res, 200, {{"claim", ToJson(*c)}, {"server_time", store.clock().NowMs()}});
  });

  auto fenced = [serve, &opts](FencedCall call) {
    return [serve, &opts, call](const httplib::Request& req, httplib::Response& res) {
      serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
        TX_ASSIGN_OR_RETURN(FencedBody f, DecodeFenced(call, body));
        service::ClaimService claims(store, store.clock(), opts);
        switch (call) {
          case FencedCall::kRenew: {
            TX_ASSIGN_OR_RETURN(Claim c, claims.Renew(f.task_id, f.token));
            return json{{"claim", ToJson(c)}};
          }
          case FencedCall::kGiveUp: {
            TX_ASSIGN_OR_RETURN(Claim c, claims.GiveUp(f.task_id, f.token, f.reason));
            return json{{"claim", ToJson(c)}};
          }
          case FencedCall::kRelease: {
            TX_ASSIGN_OR_RETURN(Task t, claims.Release(f.task_id, f.token, f.reason));
            return json{{"task", ToJson(t, {})}};
          }
          case FencedCall::kReport: {
            TX_ASSIGN_OR_RETURN(Task t,
                                claims.Report(f.task_id, f.token, f.outcome, f.text, f.exit_code,
                                              f.branch ? &*f.branch : nullptr));
            return json{{"task", ToJson(t, {})}};
          }
          case FencedCall::kFail: {
            TX_ASSIGN_OR_RETURN(Task t,
                                claims.Fail(f.task_id, f.token, f.reason, f.text, f.exit_code));
            return json{{"task", ToJson(t, {})}};
          }
        }
        return Error::Internal("unhandled call");
      });
    };
  };
  h.Post("/api/worker/renew", fenced(FencedCall::kRenew));
  h.Post("/api/worker/release", fenced(FencedCall::kRelease));
  h.Post("/api/worker/report", fenced(FencedCall::kReport));
  h.Post("/api/worker/fail", fenced(FencedCall::kFail));
  h.Post("/api/worker/give-up", fenced(FencedCall::kGiveUp));

  // The outcome of an auto-merge that a worker made on its own machine (worker/review.h
  // MergeTask): {"task_id", "token", "merge": {..}} when it merged, {"task_id", "token", "why"}
  // when the merge was refused. Fenced by the token of the task's last attempt, the one that put
  // it in review; TaskService::Merged and MergeRefused check its state.
  h.Post("/api/worker/auto-merge", [serve, &opts](const httplib::Request& req,
                                                  httplib::Response& res) {
    serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
      TX_ASSIGN_OR_RETURN(AutoMergeBody b, DecodeAutoMerge(body));
      service::TaskService tasks(store, store.clock(), opts);
      TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(b.task_id));
      std::int64_t last = 0;
      for (const auto& a : d.attempts) last = std::max(last, a.token);
      if (last != b.token) {
        return Error::Conflict("token " + std::to_string(b.token) + " is not that of task " +
                               b.task_id + "'s last attempt: its auto-merge is not recorded");
      }
      TX_ASSIGN_OR_RETURN(Task t, b.merge ? tasks.Merged(b.task_id, *b.merge)
                                          : tasks.MergeRefused(b.task_id, b.why));
      return json{{"task", ToJson(t, {})}};
    });
  });

  // The agents (docs/agents.md): the attempt's row of the usage ledger, and the ends of an
  // attempt that are not the task's fault; AgentService checks the tokens.
  h.Post("/api/worker/usage", [serve, &opts](const httplib::Request& req, httplib::Response& res) {
    serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
      TX_ASSIGN_OR_RETURN(AttemptUsage u, DecodeUsage(body));
      TX_RETURN_IF_ERROR(service::AgentService(store, store.clock(), opts).RecordUsage(u));
      return json{{"ok", true}};
    });
  });
  h.Get("/api/worker/usage", [this, &opts](const httplib::Request& req, httplib::Response& res) {
    Result<StorePool::Lease> s = stores_.Acquire();
    if (!s.ok()) return ReplyError(res, s.error());
    store::Store& store = **s;
    Status only = OnlyParams(req, {"task_id"});
    if (!only.ok()) return ReplyError(res, only.error());
    Result<std::vector<AttemptUsage>> rows =
        service::AgentService(store, store.clock(), opts).TaskUsage(req.get_param_value("task_id"));
    if (!rows.ok()) return ReplyError(res, rows.error());
    json out = json::array();
    double cost = 0;
    for (const auto& u : *rows) {
      out.push_back(ToJson(u));
      cost += u.cost_usd;
    }
    Reply(res, 200, {{"usage", out}, {"cost_usd", cost}, {"server_time", store.clock().NowMs()}});
  });
  h.Post("/api/worker/limited",
         [serve, &opts](const httplib::Request& req, httplib::Response& res) {
           serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
             TX_ASSIGN_OR_RETURN(LimitedBody b, DecodeLimited(body));
             TX_ASSIGN_OR_RETURN(Task t, service::AgentService(store, store.clock(), opts)
                                             .EndLimited(b.task_id, b.token, b.limit));
             return json{{"task", ToJson(t, {})}};
           });
         });
  h.Post("/api/worker/unavailable",
         [serve, &opts](const httplib::Request& req, httplib::Response& res) {
           serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
             TX_ASSIGN_OR_RETURN(UnavailableBody b, DecodeUnavailable(body));
             TX_ASSIGN_OR_RETURN(Task t,
                                 service::AgentService(store, store.clock(), opts)
                                     .EndUnavailable(b.task_id, b.token, b.reason, b.agent, b.why));
             return json{{"task", ToJson(t, {})}};
           });
         });
  h.Post("/api/worker/over-budget",
         [serve, &opts](const httplib::Request& req, httplib::Response& res) {
           serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
             TX_ASSIGN_OR_RETURN(OverBudgetBody b, DecodeOverBudget(body));
             TX_ASSIGN_OR_RETURN(Task t, service::AgentService(store, store.clock(), opts)
                                             .EndOverBudget(b.task_id, b.token, b.why));
             return json{{"task", ToJson(t, {})}};
           });
         });
  // The fleet's limits (the ended ones announced first) and the day's spending against the
  // budgets the worker was configured with.
  h.Post("/api/worker/agent-state",
         [serve, &opts](const httplib::Request& req, httplib::Response& res) {
           serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
             TX_ASSIGN_OR_RETURN(service::Budgets budgets, DecodeAgentState(body));
             service::AgentService agents(store, store.clock(), opts);
             TX_RETURN_IF_ERROR(agents.ResumeExpired());
             TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, agents.Limits());
             json out = {{"limits", json::array()}};
             for (const auto& l : limits) out["limits"].push_back(ToJson(l));
             if (budgets.any()) {
               TX_ASSIGN_OR_RETURN(service::BudgetState b, agents.CheckBudgets(budgets));
               out["budget"] = ToJson(b);
             }
             return out;
           });
         });

  // Reports a batch of outcomes and claims up to `claim` more tasks in one transaction
  // (ClaimService::ReportAndClaimBatch), for clients that work through short tasks in batches;
  // it does not wait for tasks. All or nothing: one refused report refuses the batch (409).
  h.Post("/api/worker/batch", [serve, &opts](const httplib::Request& req, httplib::Response& res) {
    serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
      TX_ASSIGN_OR_RETURN(BatchBody b, DecodeBatch(body));
      TX_ASSIGN_OR_RETURN(service::ClaimService::BatchResult r,
                          service::ClaimService(store, store.clock(), opts)
                              .ReportAndClaimBatch(b.worker_id, b.finished, b.claim, b.lease_ms));
      json out = {{"reported", json::array()}, {"claims", json::array()}};
      for (const Task& t : r.reported) out["reported"].push_back(ToJson(t, {}));
      for (const auto& c : r.claimed) out["claims"].push_back(ClaimJson(c));
      return out;
    });
  });

  // An attempt's output from a remote worker, written at `offset` of the server's copy of its log
  // (where GET /api/tasks/ID/log reads it); offset 0 starts the copy afresh. Fenced by the token
  // of that attempt's claim (ended or not: the last output comes as the attempt ends).
  h.Post("/api/worker/log", [this, &opts](const httplib::Request& req, httplib::Response& res) {
    Result<StorePool::Lease> s = stores_.Acquire();
    if (!s.ok()) return ReplyError(res, s.error());
    store::Store& store = **s;
    Status written = [&]() -> Status {
      TX_RETURN_IF_ERROR(OnlyParams(req, {"task_id", "attempt", "token", "offset", "raw"}));
      bool raw = req.get_param_value("raw") == "1";
      std::string task_id = req.get_param_value("task_id");
      TX_ASSIGN_OR_RETURN(std::int64_t attempt, IntegerParam(req, "attempt"));
      TX_ASSIGN_OR_RETURN(std::int64_t token, IntegerParam(req, "token"));
      TX_ASSIGN_OR_RETURN(std::int64_t offset, IntegerParam(req, "offset"));
      TX_ASSIGN_OR_RETURN(Claim c,
                          service::ClaimService(store, store.clock(), opts).Inspect(token));
      if (c.task_id != task_id || c.attempt != attempt) {
        return Error::Conflict("token " + std::to_string(token) + " is not that of " + task_id +
                               " attempt " + std::to_string(attempt));
      }
      if (offset + static_cast<std::int64_t>(req.body.size()) > kMaxShippedLogBytes) {
        return Error::Backpressure("the log of " + task_id + " is over " +
                                   std::to_string(kMaxShippedLogBytes >> 20) + " MiB");
      }
      std::string logs =
          (std::filesystem::path(store::LocalDir(options_.db_path)) / "logs").string();
      std::filesystem::path path =
          raw ? worker::AttemptRawLogPath(logs, task_id, static_cast<int>(attempt))
              : worker::AttemptLogPath(logs, task_id, static_cast<int>(attempt));
      std::error_code ec;
      std::filesystem::create_directories(path.parent_path(), ec);
      if (offset == 0) std::ofstream(path, std::ios::binary | std::ios::trunc);
      if (static_cast<std::int64_t>(std::filesystem::file_size(path, ec)) < offset || ec) {
        return Error::Conflict("the server's copy of the log is shorter than offset " +
                               std::to_string(offset) + ": send it again from 0");
      }
      std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
      out.seekp(offset);
      out.write(req.body.data(), static_cast<std::streamsize>(req.body.size()));
      out.close();
      if (!out) return Error::Unavailable("cannot write " + path.string());
      std::filesystem::resize_file(path, static_cast<std::uintmax_t>(offset) + req.body.size(), ec);
      return Ok();
    }();
    if (!written.ok()) return ReplyError(res, written.error());
    Reply(res, 200, {{"ok", true}, {"server_time", store.clock().NowMs()}});
  });
}

}  // namespace tx::api
