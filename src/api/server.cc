#include "api/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/dashboard.h"
#include "api/http_util.h"
#include "api/requests.h"
#include "core/json.h"
#include "core/validation.h"
#include "git/review.h"
#include "git/worktree.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/draft_pipeline.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"

namespace tx::api {

namespace {

using nlohmann::json;

// POST /api/tasks with an array: every task decoded and prepared as a single one is, and added in
// one transaction, all or none; a refusal names the first task refused, in the array's order, by
// its place ("task 3: ..."). A big array's tasks are decoded on a helper thread while the first
// are inserted; a small one, one with git work (a repo: git runs for each), or one that got no
// helper is decoded whole before the transaction, so that none of it runs under the store's
// write lock.
Result<json> AddTaskArray(const worker::WorkerConfig& config, store::Store& store,
                          const service::ServiceOptions& opts, const json& body,
                          service::HelperBudget& helpers) {
  if (body.empty()) return Error::InvalidArgument("the array holds no task");
  if (body.size() > kMaxTasksPerPost) {
    return Error::InvalidArgument("an array adds at most " + std::to_string(kMaxTasksPerPost) +
                                  " tasks (this one has " + std::to_string(body.size()) + ")");
  }
  auto label = [](std::size_t i) { return "task " + std::to_string(i + 1); };
  bool git = std::any_of(body.begin(), body.end(),
                         [](const json& t) { return t.is_object() && t.contains("repo"); });
  // Runs of 100: an array of 1,000 (the peers' bulk chunk) has its inserts start after a tenth
  // of the decoding; one helper keeps ahead of the inserts, which cost four times as much.
  service::DraftPipeline::Options pipeline{
      .run_items = 100, .items_for_threads = git ? SIZE_MAX : 200, .max_threads = 1};
  service::DraftPipeline drafts(
      body.size(),
      [&](std::size_t i) -> Result<Task> {
        auto at = [&](const Error& e) { return Error(e.code(), label(i) + ": " + e.message()); };
        if (!body[i].is_object()) return at(Error::InvalidArgument("must be a JSON object"));
        Result<Task> t = DecodeAndPrepareNewTask(body[i], config);
        if (!t.ok()) return at(t.error());
        return t;
      },
      label, pipeline, &helpers);
  if (drafts.helpers() == 0) drafts.DecodeAll();
  service::TaskService tasks(store, store.clock(), opts);
  TX_ASSIGN_OR_RETURN(
      std::size_t added,
      tasks.AddEach([&](std::size_t i, std::string& name) { return drafts.At(i, name); },
                    body.size()));
  json ids = json::array();
  std::string name;
  for (std::size_t i = 0; i < added; ++i) {
    TX_ASSIGN_OR_RETURN(const Task* t, drafts.At(i, name));
    ids.push_back(t->id);
  }
  return json{{"added", added}, {"ids", std::move(ids)}};
}

bool Mutating(const std::string& method) { return method != "GET" && method != "HEAD"; }

// A task as GET /api/tasks/:id shows it: with its attempts and usage, and, while it waits, why no
// running worker could claim it.
Result<json> Shown(service::TaskService& tasks, const service::TaskDetail& d) {
  json out = ToJson(d.task, d.attempts, d.usage);
  TX_ASSIGN_OR_RETURN(auto unclaimable, tasks.Unclaimable({d.task}));
  if (!unclaimable.empty()) out["unclaimable"] = unclaimable.begin()->second;
  return out;
}

// The longest search a task list takes (?q=).
constexpr std::size_t kMaxSearchBytes = 200;

// Cancels a task, and removes its worktree when its repository is on this machine (the branch
// stays).
Result<Task> Cancel(service::TaskService& tasks, const std::string& id, const std::string& note) {
  TX_ASSIGN_OR_RETURN(Task cancelled, tasks.Cancel(id, note));
  if (!cancelled.repo.empty()) {
    if (Status s = git::RemoveIdleWorktree(cancelled.repo, cancelled.id); !s.ok()) {
      std::fprintf(stderr, "tx: warning: %s\n", s.error().message().c_str());
    }
  }
  return cancelled;
}

// What a path needs: the worker protocol needs a worker (or admin) token, any change an admin
// token, and reads nothing more than the auth rules' default.
Access NeedOf(const httplib::Request& req) {
  if (req.path.starts_with("/api/worker/")) return Access::kWorker;
  return Mutating(req.method) ? Access::kAdmin : Access::kRead;
}

// Whether every address `host` resolves to is a loopback one: the name's text decides nothing
// ("127.public.example" may resolve anywhere). Unavailable when it does not resolve.
Result<bool> IsLoopbackListener(const std::string& host) {
  if (IsLoopbackAddress(host)) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return Error::Unavailable("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  bool all = found != nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = "";
    const void* addr =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (::inet_ntop(a->ai_family, addr, text, sizeof text) == nullptr || !IsLoopbackAddress(text)) {
      all = false;
    }
  }
  return all;
}

// The client a request came from, as the failure limiter knows it.
std::string ClientOf(const httplib::Request& req) { return req.remote_addr; }

}  // namespace

ApiServer::ApiServer(Key, ServerOptions options, Tokens tokens, bool loopback)
    : options_(std::move(options)),
      tokens_(std::move(tokens)),
      loopback_(loopback),
      stores_(store::OpenOptions{options_.db_path, false}),
      http_(std::make_unique<HttpServer>(HttpServer::Options{
          .handler_threads = options_.threads, .max_body_bytes = options_.max_body_bytes})) {
  options_.service = service::WithDefaults(std::move(options_.service));
}

ApiServer::~ApiServer() { Stop(); }

Result<std::unique_ptr<ApiServer>> ApiServer::Start(ServerOptions options) {
  options.db_path = store::AbsoluteLocation(options.db_path);
  TX_ASSIGN_OR_RETURN(Tokens tokens, LoadTokens(store::LocalDir(options.db_path)));
  TX_ASSIGN_OR_RETURN(bool loopback, IsLoopbackListener(options.host));
  if (!loopback && tokens.by_token.empty()) {
    return Error::InvalidArgument("refusing to listen on " + options.host +
                                  " (not a loopback address) without a token: run tx init, "
                                  "which writes .tx/token");
  }
  auto s = std::make_unique<ApiServer>(Key{}, std::move(options), std::move(tokens), loopback);
  std::string config_file =
      (std::filesystem::path(store::LocalDir(s->options_.db_path)) / "config.toml").string();
  s->config_path_ = config_file;
  TX_RETURN_IF_ERROR(worker::ApplyConfigFile(config_file, s->config_));
  s->budgets_ = std::make_unique<worker::BudgetsSource>(config_file, s->config_.budgets);
  {
    TX_ASSIGN_OR_RETURN(StorePool::Lease check, s->stores_.Acquire());  // the store opens
  }
  TX_ASSIGN_OR_RETURN(s->hub_, EventHub::Start(store::OpenOptions{s->options_.db_path, false},
                                               s->options_.event_poll));
  TX_ASSIGN_OR_RETURN(
      s->beats_,
      HeartbeatBatcher::Start(store::OpenOptions{s->options_.db_path, false}, s->options_.service,
                              s->options_.heartbeat_window, s->options_.heartbeat_batch));
  // A client that goes away must cost a failed write, not the process. (Children started
  // through exec/ reset every signal.)
  ::signal(SIGPIPE, SIG_IGN);
  s->Routes();
  TX_ASSIGN_OR_RETURN(s->port_, s->http_->Listen(s->options_.host, s->options_.port));
  return s;
}

void ApiServer::Stop() {
  if (port_ <= 0 || stopped_) return;
  stopped_ = true;
  hub_->Stop();  // ends the event streams and followed logs first
  http_->Stop();
  beats_->Stop();
}

// Every route of the API, in the order a request's path is matched against them (the first
// whose method and pattern match serves it): a path two patterns match goes to the one listed
// first. Routes() registers them.
const ApiServer::Route ApiServer::kRoutes[] = {
    {HttpMethod::kGet, "/healthz", &ApiServer::Healthz},
    {HttpMethod::kGet, "/api/tasks", &ApiServer::ListTasks},
    {HttpMethod::kPost, "/api/tasks/cancel", &ApiServer::CancelTasks},
    {HttpMethod::kPost, "/api/tasks/retry", &ApiServer::RetryTasks},
    {HttpMethod::kPost, "/api/tasks", &ApiServer::AddTasks},
    {HttpMethod::kGet, R"(/api/tasks/([^/]+))", &ApiServer::ShowTask},
    {HttpMethod::kPatch, R"(/api/tasks/([^/]+))", &ApiServer::ChangeTask},
    {HttpMethod::kGet, R"(/api/tasks/([^/]+)/diff)", &ApiServer::DiffTask},
    {HttpMethod::kPost, R"(/api/tasks/([^/]+)/merge)", &ApiServer::MergeTask},
    {HttpMethod::kGet, "/api/workers", &ApiServer::ListWorkers},
    {HttpMethod::kGet, R"(/api/workers/([^/]+))", &ApiServer::ShowWorker},
    {HttpMethod::kGet, R"(/api/workers/([^/]+)/attempts)", &ApiServer::ListWorkerAttempts},
    {HttpMethod::kGet, "/api/heartbeats", &ApiServer::ListHeartbeats},
    {HttpMethod::kGet, "/", &ApiServer::DashboardPage},
    {HttpMethod::kGet, kDashboardAssetPattern, &ApiServer::DashboardAsset},
    {HttpMethod::kGet, "/api/events", &ApiServer::ListEvents},
    {HttpMethod::kGet, R"(/api/tasks/([^/]+)/log)", &ApiServer::TaskLog},
    {HttpMethod::kGet, "/api/stats", &ApiServer::StatsChart},
    {HttpMethod::kGet, "/api/usage", &ApiServer::UsageReport},
    {HttpMethod::kGet, "/api/notifications", &ApiServer::ListNotifications},
    {HttpMethod::kPost, R"(/api/agents/([^/]+)/lift)", &ApiServer::LiftAgentLimit},
    {HttpMethod::kGet, "/metrics", &ApiServer::PrometheusMetrics},
    {HttpMethod::kGet, "/api/orchestrator", &ApiServer::ShowOrchestrator},
    {HttpMethod::kPost, "/api/orchestrator/scale", &ApiServer::ScalePool},
    {HttpMethod::kPost, "/api/orchestrator/stop", &ApiServer::StopPool},
    {HttpMethod::kPost, "/api/workers", &ApiServer::CreateWorker},
    {HttpMethod::kDelete, R"(/api/workers/([^/]+))", &ApiServer::StopWorker},
    {HttpMethod::kPost, R"(/api/workers/([^/]+)/pause)", &ApiServer::PauseWorker},
    {HttpMethod::kPost, R"(/api/workers/([^/]+)/resume)", &ApiServer::ResumeWorker},
    {HttpMethod::kGet, "/api/sessions", &ApiServer::ListSessions},
    {HttpMethod::kDelete, R"(/api/sessions/([^/]+))", &ApiServer::EndSession},
    {HttpMethod::kPost, "/api/worker/register", &ApiServer::RegisterWorker},
    {HttpMethod::kPost, "/api/worker/heartbeat", &ApiServer::WorkerHeartbeat},
    {HttpMethod::kPost, "/api/worker/deregister", &ApiServer::DeregisterWorker},
    {HttpMethod::kPost, "/api/worker/claim", &ApiServer::ClaimTask},
    {HttpMethod::kGet, R"(/api/worker/claims/(\d+))", &ApiServer::InspectClaim},
    {HttpMethod::kPost, "/api/worker/renew", &ApiServer::RenewClaim},
    {HttpMethod::kPost, "/api/worker/release", &ApiServer::ReleaseClaim},
    {HttpMethod::kPost, "/api/worker/report", &ApiServer::ReportOutcome},
    {HttpMethod::kPost, "/api/worker/fail", &ApiServer::FailAttempt},
    {HttpMethod::kPost, "/api/worker/give-up", &ApiServer::GiveUpClaim},
    {HttpMethod::kPost, "/api/worker/ask", &ApiServer::AskQuestion},
    {HttpMethod::kPost, "/api/worker/auto-merge", &ApiServer::RecordAutoMerge},
    {HttpMethod::kPost, "/api/worker/usage", &ApiServer::RecordUsage},
    {HttpMethod::kGet, "/api/worker/usage", &ApiServer::TaskUsage},
    {HttpMethod::kPost, "/api/worker/limited", &ApiServer::EndLimited},
    {HttpMethod::kPost, "/api/worker/unavailable", &ApiServer::EndUnavailable},
    {HttpMethod::kPost, "/api/worker/over-budget", &ApiServer::EndOverBudget},
    {HttpMethod::kPost, "/api/worker/note", &ApiServer::NoteProgress},
    {HttpMethod::kPost, "/api/worker/subtask", &ApiServer::AddSubtask},
    {HttpMethod::kPost, "/api/worker/agent-state", &ApiServer::AgentState},
    {HttpMethod::kPost, "/api/worker/batch", &ApiServer::ReportAndClaimBatch},
    {HttpMethod::kPost, "/api/worker/log", &ApiServer::ShipLog},
};

void ApiServer::Routes() {
  HttpServer& h = *http_;
  using Pre = HttpServer::Pre;

  // Every request is authorised here, before its route runs.
  h.SetPreRouting([this](const httplib::Request& req, httplib::Response& res) {
    if (loopback_ &&
        !HostAllowedOnLoopback(req.get_header_value("Host"), config_.api_allowed_hosts)) {
      ReplyError(res, 403, "forbidden",
                 "Host '" + req.get_header_value("Host") +
                     "' is not a name of this loopback server (allow it with [api] "
                     "allowed_hosts in .tx/config.toml)");
      return Pre::kHandled;
    }
    std::optional<std::string_view> bearer;
    const std::string authorization = req.get_header_value("Authorization");
    // A browser's EventSource cannot send headers: a read may carry its token as
    // ?access_token= instead (never a change, so a token is not left in a link that acts).
    const std::string from_query = req.get_param_value(kAccessTokenParam);
    if (req.has_header("Authorization")) {
      bearer = BearerToken(authorization);
      if (!bearer) {
        ReplyError(res, 401, "unauthorized", "malformed Authorization header: expected Bearer");
        return Pre::kHandled;
      }
    } else if (req.has_param(kAccessTokenParam)) {
      if (Mutating(req.method)) {
        ReplyError(res, 401, "unauthorized",
                   "access_token is accepted on reads only: send Authorization: Bearer");
        return Pre::kHandled;
      }
      bearer = from_query;
    }
    // The dashboard's page and assets hold no data (it reads everything through the API, with
    // the token it is given), and a browser opening it cannot send a token.
    if (req.method == "GET" && !req.has_header("Authorization") &&
        (req.path == "/" || req.path.starts_with("/assets/"))) {
      return Pre::kUnhandled;
    }
    const Millis now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
    if (bearer) {
      if (Millis wait = auth_failures_.WaitFor(ClientOf(req), now); wait > 0) {
        res.set_header("Retry-After", std::to_string((wait + 999) / 1000));
        ReplyError(res, 429, "backpressure",
                   "too many requests with unknown tokens from this address: try again later");
        return Pre::kHandled;
      }
    }
    Verdict v = Authorize(tokens_, loopback_, Mutating(req.method), NeedOf(req), bearer);
    if (v.http_status == 401 && bearer) auth_failures_.Failed(ClientOf(req), now);
    if (v.http_status != 0) {
      ReplyError(res, v.http_status, CodeOfStatus(v.http_status), v.message);
      return Pre::kHandled;
    }
    return Pre::kUnhandled;
  });
  // Statuses the server sets by itself (unknown route, body too large, a stream refused) get the
  // same shape; the server's own refusals say why in res.reason.
  h.SetErrorHandler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = !res.reason.empty() ? res.reason
                          : res.status == 404 ? "no route " + req.method + " " + req.path
                          : res.status == 413 ? "request body too large"
                                              : "request refused";
    ReplyError(res, res.status, CodeOfStatus(res.status), message);
  });
  h.SetExceptionHandler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unexpected error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    ReplyError(res, 500, "internal", what);
  });

  for (const Route& r : kRoutes) {
    HttpServer::Handler handle = [this, fn = r.handle](const httplib::Request& req,
                                                       httplib::Response& res) {
      (this->*fn)(req, res);
    };
    switch (r.method) {
      case HttpMethod::kGet:
        h.Get(r.pattern, std::move(handle));
        break;
      case HttpMethod::kPost:
        h.Post(r.pattern, std::move(handle));
        break;
      case HttpMethod::kPatch:
        h.Patch(r.pattern, std::move(handle));
        break;
      case HttpMethod::kDelete:
        h.Delete(r.pattern, std::move(handle));
        break;
    }
  }
}

void ApiServer::Healthz(const httplib::Request&, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_ASSIGN_OR_RETURN(auto counts, service::TaskService(store, store.clock(), opts).Counts());
    (void)counts;
    return json{{"ok", true}};
  });
}

// GET /api/tasks: a page of tasks, filtered (status, queue, owner, agent, a search of ids and
// titles, the created time), each with its usage summed (one query for the page).
void ApiServer::ListTasks(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<JsonText> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"status", "queue", "owner", "agent", "q", "since", "until",
                                        "limit", "cursor", "order"}));
    store::TaskFilter f;
    if (req.has_param("status")) {
      TX_ASSIGN_OR_RETURN(f.status, ParseTaskStatus(req.get_param_value("status")));
    }
    if (req.has_param("queue")) f.queue = req.get_param_value("queue");
    if (req.has_param("owner")) f.owner = req.get_param_value("owner");
    if (req.has_param("agent")) f.agent = req.get_param_value("agent");
    f.search = req.get_param_value("q");
    if (f.search.size() > kMaxSearchBytes) {
      return Error::InvalidArgument("parameter 'q' is longer than " +
                                    std::to_string(kMaxSearchBytes) + " bytes");
    }
    const Millis now = store.clock().NowMs();
    TX_ASSIGN_OR_RETURN(f.created_since, TimeParam(req, "since", now));
    TX_ASSIGN_OR_RETURN(f.created_until, TimeParam(req, "until", now));
    TX_ASSIGN_OR_RETURN(f.limit, CountParam(req, "limit", kDefaultPageSize, 1, kMaxPageSize));
    TX_ASSIGN_OR_RETURN(f.cursor, CursorParam(req, "cursor"));
    std::string order = req.has_param("order") ? req.get_param_value("order") : "asc";
    if (order != "asc" && order != "desc") {
      return Error::InvalidArgument("parameter 'order' must be asc or desc");
    }
    f.newest_first = order == "desc";
    service::TaskService tasks(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(std::vector<Task> list, tasks.List(f));
    TX_ASSIGN_OR_RETURN(auto unclaimable, tasks.Unclaimable(list));
    std::vector<std::string> ids;
    for (const auto& t : list) ids.push_back(t.id);
    TX_ASSIGN_OR_RETURN(auto usage,
                        service::AgentService(store, store.clock(), opts).TaskTotals(ids));
    // Written as text (a page of tasks is what the dashboard reads most): each task as
    // ToJsonText writes it, with its "unclaimable" when no worker can take it and its "usage".
    std::string out = "{\"tasks\":[";
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Task& t = list[i];
      if (i > 0) out += ',';
      out += ToJsonText(t, {});
      out.pop_back();  // the task's '}'
      if (auto it = unclaimable.find(t.id); it != unclaimable.end()) {
        out += ",\"unclaimable\":";
        AppendJsonString(out, it->second);
      }
      auto u = usage.find(t.id);
      out += ",\"usage\":";
      out += u == usage.end() ? "null" : ToJson(u->second).dump();
      out += '}';
    }
    out += "],\"next_cursor\":";
    if (static_cast<int>(list.size()) == f.limit) {
      AppendJsonString(out, std::to_string(list.back().seq));
    } else {
      out += "null";
    }
    out += '}';
    return JsonText{std::move(out)};
  });
}

// POST /api/tasks/cancel and /api/tasks/retry: the PATCH of each task's status, for many tasks at
// once. Each is its own transaction; a task refused (not found, in a state the change does not
// leave) is reported beside the others, which go on.
void ApiServer::ChangeTasks(const httplib::Request& req, httplib::Response& res, bool retry) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_ASSIGN_OR_RETURN(json body, ParseObject(req.body));
    TX_ASSIGN_OR_RETURN(BulkChange c, DecodeBulkChange(body, retry));
    service::TaskService tasks(store, store.clock(), opts);
    json results = json::array();
    int ok = 0;
    for (const auto& id : c.ids) {
      Result<Task> r = retry ? tasks.Retry(id, c.note, c.fresh) : Cancel(tasks, id, c.note);
      json& one = results.emplace_back(json{{"id", id}, {"ok", r.ok()}});
      if (r.ok()) {
        ++ok;
        one["status"] = ToString(r->status);
      } else {
        one["error"] = {{"code", CodeName(r.error().code())}, {"message", r.error().message()}};
      }
    }
    const int failed = static_cast<int>(c.ids.size()) - ok;
    return json{{"results", std::move(results)}, {"ok", ok}, {"failed", failed}};
  });
}

void ApiServer::CancelTasks(const httplib::Request& req, httplib::Response& res) {
  ChangeTasks(req, res, /*retry=*/false);
}

void ApiServer::RetryTasks(const httplib::Request& req, httplib::Response& res) {
  ChangeTasks(req, res, /*retry=*/true);
}

void ApiServer::AddTasks(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 201, [&](store::Store& store) -> Result<JsonText> {
    TX_ASSIGN_OR_RETURN(json body, ParseBody(req.body));
    if (body.is_array()) {
      TX_ASSIGN_OR_RETURN(json added, AddTaskArray(config_, store, opts, body, decode_helpers_));
      return JsonText{added.dump()};
    }
    if (!body.is_object()) {
      return Error::InvalidArgument("the request body must be a task or an array of tasks");
    }
    TX_ASSIGN_OR_RETURN(Task draft, DecodeAndPrepareNewTask(body, config_));
    service::TaskService tasks(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(service::TaskService::Added added, tasks.AddAndCheck(std::move(draft)));
    res.set_header("Location", "/api/tasks/" + added.task.id);
    std::string out = ToJsonText(added.task, {});
    // Added either way (a worker may start later), but said now.
    if (added.unclaimable) {
      out.pop_back();  // the object's '}'
      out += ",\"warnings\":[";
      AppendJsonString(out, "no worker can claim it now: " + *added.unclaimable);
      out += "]}";
    }
    return JsonText{std::move(out)};
  });
}

void ApiServer::ShowTask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    service::TaskService tasks(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(req.matches[1].str()));
    return Shown(tasks, d);
  });
}

void ApiServer::ChangeTask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    std::string id = req.matches[1].str();
    TX_ASSIGN_OR_RETURN(json body, ParseObject(req.body));
    TX_ASSIGN_OR_RETURN(TaskChange c, DecodeTaskChange(body));
    service::TaskService tasks(store, store.clock(), opts);
    switch (c.kind) {
      case TaskChange::Kind::kFields:
        TX_RETURN_IF_ERROR(tasks.Update(id, c.fields));
        break;
      case TaskChange::Kind::kOutcome:
        if (c.force) {
          TX_RETURN_IF_ERROR(tasks.ForceOutcome(id, c.outcome, c.text));
        } else {
          TX_RETURN_IF_ERROR(service::ClaimService(store, store.clock(), opts)
                                 .Report(id, *c.token, c.outcome, c.text));
        }
        break;
      case TaskChange::Kind::kCancel:
        TX_RETURN_IF_ERROR(Cancel(tasks, id, c.text));
        break;
      case TaskChange::Kind::kRetry: {
        // "ready" is a retry of a failed or cancelled task, and a request for changes
        // of one in review; a task that moves meanwhile is refused by the call made.
        TX_ASSIGN_OR_RETURN(service::TaskDetail now, tasks.Show(id));
        if (now.task.status == TaskStatus::kWaiting) {
          return Error::Conflict("task " + id +
                                 " is waiting for the answer to its agent's question: send "
                                 "status 'ready' with 'answer'");
        }
        if (now.task.status == TaskStatus::kReview) {
          TX_RETURN_IF_ERROR(tasks.RequestChanges(id, c.text, c.fresh));
        } else {
          TX_RETURN_IF_ERROR(tasks.Retry(id, c.text, c.fresh));
        }
        break;
      }
      case TaskChange::Kind::kApprove:
        TX_RETURN_IF_ERROR(tasks.Approve(id, c.text));
        break;
      case TaskChange::Kind::kAnswer:
        TX_RETURN_IF_ERROR(tasks.Answer(id, c.text));
        break;
    }
    TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(id));
    return Shown(tasks, d);
  });
}

// A task's branch under review, and its merge (docs/git.md): git runs here, where the task's
// repository must be; the [git] settings are those of config.toml beside the store, read anew.
void ApiServer::DiffTask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"stat"}));
    TX_ASSIGN_OR_RETURN(
        service::TaskDetail d,
        service::TaskService(store, store.clock(), opts).Show(req.matches[1].str()));
    TX_ASSIGN_OR_RETURN(git::Settings git, worker::LoadGitSettings(config_path_, d.task.repo));
    bool stat = req.has_param("stat") && req.get_param_value("stat") != "0";
    return git::DescribeBranch(d.task, git, !stat);
  });
}

void ApiServer::MergeTask(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    json body = json::object();
    if (!req.body.empty()) {
      TX_ASSIGN_OR_RETURN(body, ParseObject(req.body));
    }
    std::string note;
    for (const auto& [key, value] : body.items()) {
      if (key != "note" || !value.is_string()) {
        return Error::InvalidArgument("a merge takes only \"note\" (a string), not \"" + key +
                                      "\"");
      }
      note = value.get<std::string>();
    }
    service::TaskService tasks(store, store.clock(), opts);
    TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(req.matches[1].str()));
    TX_ASSIGN_OR_RETURN(git::Settings git, worker::LoadGitSettings(config_path_, d.task.repo));
    TX_ASSIGN_OR_RETURN(git::TaskMerge m, git::MergeApprovedTask(tasks, d.task.id, git, note));
    if (!m.merged) {
      return Error::Conflict("task " + m.task.id +
                             " not merged, and sent back to the queue: " + m.why);
    }
    TX_ASSIGN_OR_RETURN(service::TaskDetail now, tasks.Show(m.task.id));
    return ToJson(now.task, now.attempts);
  });
}

void ApiServer::ListWorkers(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"status", "limit"}));
    std::vector<WorkerStatus> statuses;
    if (req.has_param("status")) {
      for (const auto& name : SplitCommas({req.get_param_value("status")})) {
        TX_ASSIGN_OR_RETURN(WorkerStatus s, ParseWorkerStatus(name));
        statuses.push_back(s);
      }
    }
    TX_ASSIGN_OR_RETURN(int limit, CountParam(req, "limit", 0, 1, 100'000));
    TX_ASSIGN_OR_RETURN(std::vector<Worker> all,
                        service::WorkerService(store, store.clock(), opts).List(statuses));
    if (limit > 0 && static_cast<int>(all.size()) > limit) all.resize(limit);  // newest first
    const Moment now = store.clock().Now();
    json out = {{"workers", json::array()}};
    for (const auto& w : all) out["workers"].push_back(ToJson(w, now));
    return out;
  });
}

void ApiServer::ShowWorker(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_ASSIGN_OR_RETURN(
        Worker w, service::WorkerService(store, store.clock(), opts).Get(req.matches[1].str()));
    return ToJson(w, store.clock().Now());
  });
}

// GET /api/workers/ID/attempts: a worker's history, newest first, a page at a time.
void ApiServer::ListWorkerAttempts(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_RETURN_IF_ERROR(OnlyParams(req, {"limit", "cursor"}));
    TX_ASSIGN_OR_RETURN(int limit, CountParam(req, "limit", kDefaultPageSize, 1, kMaxPageSize));
    TX_ASSIGN_OR_RETURN(std::int64_t cursor, CursorParam(req, "cursor"));
    TX_ASSIGN_OR_RETURN(service::WorkerService::History history,
                        service::WorkerService(store, store.clock(), opts)
                            .Attempts(req.matches[1].str(), cursor, limit));
    json out = {{"worker", ToJson(history.worker, store.clock().Now())},
                {"attempts", json::array()},
                {"next_cursor", nullptr}};
    for (const auto& a : history.attempts) {
      json& j = out["attempts"].emplace_back(ToJson(a.claim));
      j["task_title"] = a.task_title;
      j["cost_usd"] = a.has_usage ? json(a.cost_usd) : json();
      j["cost_estimated"] = a.cost_estimated;
    }
    if (static_cast<int>(history.attempts.size()) == limit) {
      out["next_cursor"] = std::to_string(history.attempts.back().claim.token);
    }
    return out;
  });
}

void ApiServer::ListHeartbeats(const httplib::Request&, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  ReplyWithStore(stores_, res, 200, [&](store::Store& store) -> Result<json> {
    TX_ASSIGN_OR_RETURN(std::vector<Worker> all,
                        service::WorkerService(store, store.clock(), opts).List({}));
    TX_ASSIGN_OR_RETURN(auto titles,
                        service::TaskService(store, store.clock(), opts).CurrentTitles(all));
    return HeartbeatDocument(all, titles);
  });
}

// The dashboard's page and files (api/dashboard.h).
void ApiServer::DashboardPage(const httplib::Request& req, httplib::Response& res) {
  ServeDashboardPage(req, res);
}

void ApiServer::DashboardAsset(const httplib::Request& req, httplib::Response& res) {
  ServeDashboardAsset(req, res);
}

}  // namespace tx::api
