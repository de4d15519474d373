// The remote-worker protocol (docs/api.md, "Remote workers"): what `tx worker start --server`
// does over HTTP, one route per call of the local path, every outcome fenced by the claim's
// token exactly as there. Every reply carries "server_time", the clock leases are judged by.

#include <fcntl.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "api/http_util.h"
#include "api/requests.h"
#include "api/server.h"
#include "core/ids.h"
#include "core/json.h"
#include "exec/unique_fd.h"
#include "git/git.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "service/worker_wire.h"
#include "store/location.h"

namespace tx::api {

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// How often a waiting claim looks again even without a wake-up: a retry's backoff ending makes a
// task eligible without any commit.
constexpr Millis kClaimRecheckMs = 1'000;
// The largest copy of an attempt's log the server keeps for a remote worker.
constexpr std::int64_t kMaxShippedLogBytes = 64 << 20;

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
  using Held = std::optional<service::ClaimResult>;
  return store.ReadReturning([&](store::Txn& txn) -> Result<Held> {
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(worker_id));
    if (!w || w->current_task_id.empty()) return Held();
    TX_ASSIGN_OR_RETURN(std::optional<Claim> c, txn.GetActiveClaimForTask(w->current_task_id));
    if (!c || c->worker_id != worker_id) return Held();
    TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(c->task_id));
    if (!t) return Held();
    return Held(service::ClaimResult{std::move(*c), std::move(*t)});
  });
}

std::string Sha256Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

// Who a call of the worker protocol acts for, checked against the credential it carries. A
// refusal is kept (and answered 403 by `serve`); the Status only stops the route.
struct Caller {
  std::function<std::optional<std::string>(const std::string&)> refuse;
  store::Store& store;
  std::optional<std::string> refused;

  Status ActsFor(const std::string& worker_id) {
    refused = refuse(worker_id);
    return refused ? Error::Conflict(*refused) : Ok();
  }
  // For the worker whose claim has `token`.
  Status ActsForClaim(std::int64_t token) {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> c,
                        store.ReadReturning([&](store::Txn& txn) { return txn.GetClaim(token); }));
    if (!c) return Ok();  // nothing to act on: the call itself says what is wrong with it
    return ActsFor(c->worker_id);
  }
};

// Where the auto-merge a worker reports can be checked (the repository is on this machine), the
// base must hold the head it names.
Status CheckMergeOnBase(const Task& task, const json& merge) {
  std::string base = merge.value("base", ""), head = merge.value("head", "");
  if (base.empty() || head.size() != 40 ||
      head.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Error::InvalidArgument("field 'merge' needs 'base' and 'head' (a full commit sha)");
  }
  std::error_code ec;
  if (task.repo.empty() || !std::filesystem::exists(task.repo, ec)) return Ok();
  TX_ASSIGN_OR_RETURN(bool on_base, git::IsAncestor(task.repo, head, base));
  if (!on_base) {
    return Error::Conflict("task " + task.id + "'s auto-merge names " + head.substr(0, 12) +
                           ", which is not on " + base + " in " + task.repo + ": not recorded");
  }
  return Ok();
}

}  // namespace

std::optional<std::string> ApiServer::RefuseUnlessActsFor(const httplib::Request& req,
                                                          const std::string& worker_id,
                                                          store::Store* held) {
  const std::string presented = req.get_header_value(service::kCredentialHeader);
  const std::string refusal = "this call acts for worker " + worker_id +
                              ": it needs the credential that worker's registration returned "
                              "(header " +
                              service::kCredentialHeader + ")";
  if (presented.empty()) return refusal;
  std::string expected;
  {
    MutexLock lock(credentials_mu_);
    if (auto it = credential_hashes_.find(worker_id); it != credential_hashes_.end()) {
      expected = it->second;
    }
  }
  if (expected.empty()) {
    std::optional<StorePool::Lease> lease;
    if (held == nullptr) {
      Result<StorePool::Lease> s = stores_.Acquire();
      if (!s.ok()) return s.error().message();
      lease.emplace(std::move(*s));
      held = &**lease;
    }
    std::optional<Worker> w;
    Status read = held->Read([&](store::Txn& txn) -> Status {
      TX_ASSIGN_OR_RETURN(w, txn.GetWorker(worker_id));
      return Ok();
    });
    if (!read.ok()) return read.error().message();
    if (!w) return refusal;
    if (auto it = w->metadata.find(service::kCredentialKey);
        it != w->metadata.end() && it->is_string()) {
      expected = it->get<std::string>();
    }
    if (expected.empty()) {
      return "worker " + worker_id + " was not registered over HTTP: no call over HTTP acts for it";
    }
    MutexLock lock(credentials_mu_);
    if (credential_hashes_.size() >= 100'000) credential_hashes_.clear();  // bounded
    credential_hashes_[worker_id] = expected;
  }
  if (!SameSecret(Sha256Hex(presented), expected)) return refusal;
  return std::nullopt;
}

// Runs `fn` with a store of its own and replies with its JSON plus the server's time, or with its
// error. A null JSON is a 204.
// `fn` that takes a Caller& acts for a worker, and says which (Caller::ActsFor): a call without
// that worker's credential is refused with 403 whatever `fn` returns.
template <typename Fn>
void ApiServer::Serve(const httplib::Request& req, httplib::Response& res, int ok_status, Fn fn) {
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  Result<json> body = ParseObject(req.body);
  if (!body.ok()) return ReplyError(res, body.error());
  store::Store& store = **s;
  Caller caller{[&](const std::string& id) { return RefuseUnlessActsFor(req, id, &store); }, store,
                std::nullopt};
  Result<json> out = [&] {
    if constexpr (std::is_invocable_v<decltype(fn), store::Store&, const json&, Caller&>) {
      return fn(store, *body, caller);
    } else {
      return fn(store, *body);
    }
  }();
  if (caller.refused) return ReplyError(res, 403, "forbidden", *caller.refused);
  if (!out.ok()) return ReplyError(res, out.error());
  if (out->is_null()) {
    res.status = 204;
    return;
  }
  (*out)["server_time"] = (*s)->clock().NowMs();
  Reply(res, ok_status, *out);
}

void ApiServer::RegisterWorker(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 201, [&](store::Store& store, const json& body) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::Registration r, service::DecodeRegistration(body));
    // Over HTTP a worker token could claim any slot's name: it never replaces a worker
    // that still heartbeats (a pool's supervised slot, or another machine's).
    r.replace_fresh = false;
    const std::string credential = NewToken();
    r.metadata[service::kCredentialKey] = Sha256Hex(credential);
    std::vector<Worker> replaced;
    TX_ASSIGN_OR_RETURN(
        Worker w,
        service::WorkerService(store, store.clock(), opts).Register(std::move(r), &replaced));
    const Moment now = store.clock().Now();
    json out = {
        {"worker", ToJson(w, now)}, {"credential", credential}, {"replaced", json::array()}};
    for (const auto& old : replaced) out["replaced"].push_back(ToJson(old, now));
    return out;
  });
}

// Recorded with the other heartbeats that arrive within a few milliseconds, in one
// transaction (HeartbeatBatcher), which has a store of its own: the request holds none while
// it waits for its batch.
void ApiServer::WorkerHeartbeat(const httplib::Request& req, httplib::Response& res) {
  Result<json> body = ParseObject(req.body);
  if (!body.ok()) return ReplyError(res, body.error());
  Result<service::HeartbeatBody> hb = service::DecodeHeartbeat(*body);
  if (!hb.ok()) return ReplyError(res, hb.error());
  if (auto refused = RefuseUnlessActsFor(req, hb->worker_id, nullptr)) {
    return ReplyError(res, 403, "forbidden", *refused);
  }
  Result<Worker> w = beats_->Beat(std::move(hb->worker_id), std::move(hb->update));
  if (!w.ok()) return ReplyError(res, w.error());
  const Moment now = beats_->clock().Now();
  Reply(res, 200, json{{"worker", ToJson(*w, now)}, {"server_time", now.wall}});
}

void ApiServer::DeregisterWorker(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::DeregisterBody d, service::DecodeDeregister(body));
    TX_RETURN_IF_ERROR(caller.ActsFor(d.worker_id));
    TX_ASSIGN_OR_RETURN(
        Worker w,
        service::WorkerService(store, store.clock(), opts).Deregister(d.worker_id, d.reason));
    return json{{"worker", ToJson(w, store.clock().Now())}};
  });
}

// The next task for this worker, waiting up to wait_ms for one (a long poll): 200 with the
// claim and its task, or 204 when none came or an operator's request for the worker arrived.
void ApiServer::ClaimTask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::ClaimBody c, service::DecodeClaim(body));
    TX_RETURN_IF_ERROR(caller.ActsFor(c.worker_id));
    TX_ASSIGN_OR_RETURN(std::optional<service::ClaimResult> held, HeldClaim(store, c.worker_id));
    if (held) return service::EncodeClaimReply(*held);
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
          c.gate.blocked_agents.empty() && c.gate.blocked_agent_queues.empty() ? nullptr : &c.gate;
      TX_ASSIGN_OR_RETURN(std::optional<service::ClaimResult> got,
                          claims.ClaimNext(c.worker_id, c.lease_ms, gate));
      if (got) return service::EncodeClaimReply(*got);
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
}

void ApiServer::InspectClaim(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  const std::string text = req.matches[1].str();
  std::int64_t token = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), token);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return ReplyError(res, Error::NotFound("no claim has token " + text));  // too big to be one
  }
  Result<Claim> c = service::ClaimService(store, store.clock(), opts).Inspect(token);
  if (!c.ok()) return ReplyError(res, c.error());
  // A claim's token fences its task: only its own worker reads it.
  if (auto refused = RefuseUnlessActsFor(req, c->worker_id, &store)) {
    return ReplyError(res, 403, "forbidden", *refused);
  }
  Reply(res, 200, {{"claim", ToJson(*c)}, {"server_time", store.clock().NowMs()}});
}

// The calls on a claim, each fenced by its token (service::FencedCall).
void ApiServer::Fenced(const httplib::Request& req, httplib::Response& res,
                       service::FencedCall call) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::FencedBody f, service::DecodeFenced(call, body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(f.token));
    service::ClaimService claims(store, store.clock(), opts);
    switch (call) {
      case service::FencedCall::kRenew: {
        TX_ASSIGN_OR_RETURN(Claim c, claims.Renew(f.task_id, f.token));
        return json{{"claim", ToJson(c)}};
      }
      case service::FencedCall::kGiveUp: {
        TX_ASSIGN_OR_RETURN(Claim c, claims.GiveUp(f.task_id, f.token, f.reason));
        return json{{"claim", ToJson(c)}};
      }
      case service::FencedCall::kRelease: {
        TX_ASSIGN_OR_RETURN(Task t, claims.Release(f.task_id, f.token, f.reason));
        return json{{"task", ToJson(t, {})}};
      }
      case service::FencedCall::kReport: {
        TX_ASSIGN_OR_RETURN(Task t, claims.Report(f.task_id, f.token, f.outcome, f.text,
                                                  f.exit_code, f.branch ? &*f.branch : nullptr));
        return json{{"task", ToJson(t, {})}};
      }
      case service::FencedCall::kFail: {
        TX_ASSIGN_OR_RETURN(Task t, claims.Fail(f.task_id, f.token, f.reason, f.text, f.exit_code));
        return json{{"task", ToJson(t, {})}};
      }
      case service::FencedCall::kAsk: {
        TX_ASSIGN_OR_RETURN(Task t, claims.Ask(f.task_id, f.token, f.text));
        return json{{"task", ToJson(t, {})}};
      }
    }
    return Error::Internal("unhandled call");
  });
}

void ApiServer::RenewClaim(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kRenew);
}

void ApiServer::ReleaseClaim(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kRelease);
}

void ApiServer::ReportOutcome(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kReport);
}

void ApiServer::FailAttempt(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kFail);
}

void ApiServer::GiveUpClaim(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kGiveUp);
}

void ApiServer::AskQuestion(const httplib::Request& req, httplib::Response& res) {
  Fenced(req, res, service::FencedCall::kAsk);
}

// The outcome of an auto-merge that a worker made on its own machine (git/review.h
// MergeTask): {"task_id", "token", "merge": {..}} when it merged, {"task_id", "token", "why"}
// when the merge was refused. Fenced by the token of the task's last attempt, the one that put
// it in review; TaskService::Merged and MergeRefused check its state.
void ApiServer::RecordAutoMerge(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::AutoMergeBody b, service::DecodeAutoMerge(body));
    service::TaskService tasks(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(b.task_id));
    std::int64_t last = 0;
    for (const auto& a : d.attempts) last = std::max(last, a.token);
    if (last != b.token) {
      return Error::Conflict("token " + std::to_string(b.token) + " is not that of task " +
                             b.task_id + "'s last attempt: its auto-merge is not recorded");
    }
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    // Only a task that asked for it, waiting in review, is merged by its worker.
    if (d.task.status != TaskStatus::kReview || !AsksForAutoMerge(d.task)) {
      return Error::Conflict("task " + b.task_id + " is " + std::string(ToString(d.task.status)) +
                             (AsksForAutoMerge(d.task) ? "" : " and did not ask for auto-merge") +
                             ": its worker's auto-merge is not recorded");
    }
    if (b.merge) TX_RETURN_IF_ERROR(CheckMergeOnBase(d.task, *b.merge));
    TX_ASSIGN_OR_RETURN(
        Task t, b.merge ? tasks.Merged(b.task_id, *b.merge) : tasks.MergeRefused(b.task_id, b.why));
    return json{{"task", ToJson(t, {})}};
  });
}

// The agents (docs/agents.md): the attempt's row of the usage ledger, and the ends of an
// attempt that are not the task's fault; AgentService checks the tokens.
void ApiServer::RecordUsage(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(AttemptUsage u, service::DecodeUsage(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(u.token));
    TX_RETURN_IF_ERROR(service::AgentService(store, store.clock(), opts).RecordUsage(u));
    return json{{"ok", true}};
  });
}

void ApiServer::TaskUsage(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
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
}

void ApiServer::EndLimited(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::LimitedBody b, service::DecodeLimited(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    TX_ASSIGN_OR_RETURN(
        Task t,
        service::AgentService(store, store.clock(), opts).EndLimited(b.task_id, b.token, b.limit));
    return json{{"task", ToJson(t, {})}};
  });
}

void ApiServer::EndUnavailable(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::UnavailableBody b, service::DecodeUnavailable(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    TX_ASSIGN_OR_RETURN(Task t, service::AgentService(store, store.clock(), opts)
                                    .EndUnavailable(b.task_id, b.token, b.reason, b.agent, b.why));
    return json{{"task", ToJson(t, {})}};
  });
}

void ApiServer::EndOverBudget(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::OverBudgetBody b, service::DecodeOverBudget(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    TX_ASSIGN_OR_RETURN(
        Task t,
        service::AgentService(store, store.clock(), opts).EndOverBudget(b.task_id, b.token, b.why));
    return json{{"task", ToJson(t, {})}};
  });
}

// An agent's tx task note and tx task add (a subtask of its task), fenced by its claim's token
// and acting for that claim's worker (docs/mcp.md). The subtask's limit is the server's
// [worker] max_subtasks, or the agent's when lower; its fields are checked as POST /api/tasks
// checks a task's.
void ApiServer::NoteProgress(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::NoteBody b, service::DecodeNote(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    TX_ASSIGN_OR_RETURN(
        service::NoteResult n,
        service::TaskService(store, store.clock(), opts).Note(b.task_id, b.token, b.text));
    return json{{"task", ToJson(n.task, {})}, {"attempt", n.attempt}};
  });
}

void ApiServer::AddSubtask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 201, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::SubtaskBody b, service::DecodeSubtask(body));
    TX_RETURN_IF_ERROR(caller.ActsForClaim(b.token));
    TX_RETURN_IF_ERROR(worker::PrepareGitTask(config_, false, b.task));
    TX_RETURN_IF_ERROR(worker::PrepareAgentTask(config_, b.task));
    service::SubtaskLimits limits;
    limits.max_subtasks = config_.max_subtasks;
    if (b.max_subtasks) {
      limits.max_subtasks = std::min(limits.max_subtasks, *b.max_subtasks);
    }
    TX_ASSIGN_OR_RETURN(Task added,
                        service::TaskService(store, store.clock(), opts)
                            .AddSubtask(b.parent_id, b.token, std::move(b.task), limits));
    return json{{"task", ToJson(added, {})}};
  });
}

// The fleet's limits (the ended ones announced first) and the day's spending against the
// budgets the worker was configured with.
void ApiServer::AgentState(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body) -> Result<json> {
    TX_ASSIGN_OR_RETURN(Budgets budgets, service::DecodeAgentState(body));
    // The fleet's budgets are the server's (config.toml beside the store, as it now
    // reads); a worker's own count only where the server sets none.
    if (Budgets fleet = budgets_->Current(); fleet.any()) budgets = fleet;
    service::AgentService agents(store, store.clock(), opts);
    TX_RETURN_IF_ERROR(agents.ResumeExpired());
    TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, agents.Limits());
    service::AgentStateReply out{std::move(limits), std::nullopt};
    if (budgets.any()) {
      TX_ASSIGN_OR_RETURN(out.budget, agents.CheckBudgets(budgets));
    }
    return service::EncodeAgentStateReply(out);
  });
}

// Reports a batch of outcomes and claims up to `claim` more tasks in one transaction
// (ClaimService::ReportAndClaimBatch), for clients that work through short tasks in batches;
// it does not wait for tasks. All or nothing: one refused report refuses the batch (409).
void ApiServer::ReportAndClaimBatch(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Serve(req, res, 200, [&](store::Store& store, const json& body, Caller& caller) -> Result<json> {
    TX_ASSIGN_OR_RETURN(service::BatchBody b, service::DecodeBatch(body));
    TX_RETURN_IF_ERROR(caller.ActsFor(b.worker_id));
    TX_ASSIGN_OR_RETURN(service::ClaimService::BatchResult r,
                        service::ClaimService(store, store.clock(), opts)
                            .ReportAndClaimBatch(b.worker_id, b.finished, b.claim, b.lease_ms));
    json out = {{"reported", json::array()}, {"claims", json::array()}};
    for (const Task& t : r.reported) out["reported"].push_back(ToJson(t, {}));
    for (const auto& c : r.claimed) out["claims"].push_back(service::EncodeClaimReply(c));
    return out;
  });
}

// An attempt's output from a remote worker, written at `offset` of the server's copy of its log
// (where GET /api/tasks/ID/log reads it); offset 0 starts the copy afresh. Fenced by the token
// of that attempt's claim (ended or not: the last output comes as the attempt ends).
void ApiServer::ShipLog(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  std::optional<std::string> refused;
  Status written = [&]() -> Status {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"task_id", "attempt", "token", "offset", "raw"}));
    bool raw = req.get_param_value("raw") == "1";
    std::string task_id = req.get_param_value("task_id");
    TX_ASSIGN_OR_RETURN(std::int64_t attempt, IntegerParam(req, "attempt"));
    TX_ASSIGN_OR_RETURN(std::int64_t token, IntegerParam(req, "token"));
    TX_ASSIGN_OR_RETURN(std::int64_t offset, IntegerParam(req, "offset"));
    TX_ASSIGN_OR_RETURN(Claim c, service::ClaimService(store, store.clock(), opts).Inspect(token));
    if (c.task_id != task_id || c.attempt != attempt) {
      return Error::Conflict("token " + std::to_string(token) + " is not that of " + task_id +
                             " attempt " + std::to_string(attempt));
    }
    refused = RefuseUnlessActsFor(req, c.worker_id, &store);
    if (refused) return Error::Conflict(*refused);
    if (offset + static_cast<std::int64_t>(req.body.size()) > kMaxShippedLogBytes) {
      return Error::Backpressure("the log of " + task_id + " is over " +
                                 std::to_string(kMaxShippedLogBytes >> 20) + " MiB");
    }
    std::string logs = (std::filesystem::path(store::LocalDir(options_.db_path)) / "logs").string();
    std::filesystem::path path =
        raw ? store::AttemptRawLogPath(logs, task_id, static_cast<int>(attempt))
            : store::AttemptLogPath(logs, task_id, static_cast<int>(attempt));
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    // The owner's alone, like the worker's own logs, and never through a planted symlink.
    exec::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      return PosixError("cannot write " + path.string(), errno);
    }
    if (offset == 0 && ::ftruncate(fd.get(), 0) != 0) {
      return PosixError("cannot write " + path.string(), errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || st.st_size < offset) {
      return Error::Conflict("the server's copy of the log is shorter than offset " +
                             std::to_string(offset) + ": send it again from 0");
    }
    std::size_t done = 0;
    while (done < req.body.size()) {
      ssize_t n = ::pwrite(fd.get(), req.body.data() + done, req.body.size() - done,
                           static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return PosixError("cannot write " + path.string(), errno);
      }
      done += static_cast<std::size_t>(n);
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(offset) + static_cast<off_t>(done)) != 0) {
      return PosixError("cannot write " + path.string(), errno);
    }
    return Ok();
  }();
  if (refused) return ReplyError(res, 403, "forbidden", *refused);
  if (!written.ok()) return ReplyError(res, written.error());
  Reply(res, 200, {{"ok", true}, {"server_time", store.clock().NowMs()}});
}

}  // namespace tx::api
