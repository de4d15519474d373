// The routes that follow the store as it changes: the event log (a JSON page, or Server-Sent
// Events), a task's log (a tail, or followed while the attempt runs) and the metrics.

#include <httplib.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/http_util.h"
#include "api/server.h"
#include "core/duration.h"
#include "core/json.h"
#include "core/validation.h"
#include "service/agent_service.h"
#include "service/event_log.h"
#include "service/notify_outbox.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"

namespace tx::api {

namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A stream with nothing to say writes a comment this often, so proxies keep it open and a
// client that has gone away is noticed by the failed write.
constexpr auto kKeepAlive = 15s;
constexpr std::size_t kStreamBatch = 500;
// How often a followed log is checked for new output, and how many checks go by between asking
// the store whether its attempt still runs.
constexpr auto kLogPoll = 100ms;
constexpr int kLogPollsPerStateCheck = 5;

bool WantsEventStream(const httplib::Request& req) {
  return req.get_header_value("Accept").find("text/event-stream") != std::string::npos;
}

std::string EventFrame(const StoredEvent& e) {
  return "id: " + std::to_string(e.id) + "\ndata: " + ToJsonText(e) + "\n\n";
}

Result<bool> FlagParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  if (v == "true" || v == "1" || v.empty()) return true;
  if (v == "false" || v == "0") return false;
  return Error::InvalidArgument("parameter '" + std::string(name) + "' must be true or false");
}

// The size of a file, or -1 when it does not exist (yet).
std::int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<std::int64_t>(n);
}

// Up to `max` bytes of `path` from `offset`.
std::string ReadFrom(const std::string& path, std::int64_t offset, std::size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(offset);
  std::string out(max, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace

// GET /api/events: a page of events as JSON, or, for `Accept: text/event-stream`, every event
// from the cursor on as it happens. A stream starts after Last-Event-ID (what a reconnecting
// EventSource sends), else after `?after=N`, else at the newest event.
void ApiServer::ListEvents(const httplib::Request& req, httplib::Response& res) {
  Status params = OnlyParams(req, {"after", "limit"});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<std::int64_t> after = CursorParam(req, "after");
  if (!after.ok()) return ReplyError(res, after.error());
  if (!WantsEventStream(req)) {
    Result<int> limit = CountParam(req, "limit", kDefaultPageSize, 1, kMaxPageSize);
    if (!limit.ok()) return ReplyError(res, limit.error());
    Result<StorePool::Lease> s = stores_.Acquire();
    if (!s.ok()) return ReplyError(res, s.error());
    Result<std::vector<Event>> events = service::EventLog(**s).Since(*after, *limit);
    if (!events.ok()) return ReplyError(res, events.error());
    json out = {{"events", json::array()}};
    for (const auto& e : *events) out["events"].push_back(ToJson(e));
    return Reply(res, 200, out);
  }
  std::int64_t start = req.has_param("after") ? *after : hub_->last_id();
  if (req.has_header("Last-Event-ID")) {
    std::string v = req.get_header_value("Last-Event-ID");
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), start);
    if (ec != std::errc() || end != v.data() + v.size() || start < 0) {
      return ReplyError(res, Error::InvalidArgument("Last-Event-ID is not an event id: " + v));
    }
  }
  res.set_header("Cache-Control", "no-cache");
  auto cursor = std::make_shared<std::int64_t>(start);
  auto first = std::make_shared<bool>(true);
  res.set_chunked_content_provider(
      "text/event-stream", [this, cursor, first](std::size_t, httplib::DataSink& sink) {
        std::string chunk;
        if (*first)
          chunk = "retry: 1000\n\n";  // the headers go out at once, and reconnects
                                      // come quickly
        EventHub::Batch b =
            hub_->Wait(*cursor, *first ? std::chrono::milliseconds(0) : kKeepAlive, kStreamBatch);
        *first = false;
        if (b.stopped) {
          sink.done();
          return true;
        }
        if (b.evicted) {  // a client far behind: its events come from the store
          Result<StorePool::Lease> s = stores_.Acquire();
          if (!s.ok()) return false;
          Result<std::vector<StoredEvent>> older =
              service::EventLog(**s).StoredSince(*cursor, static_cast<int>(kStreamBatch));
          if (!older.ok()) return false;
          b.events = std::move(*older);
        }
        for (const auto& e : b.events) {
          chunk += EventFrame(e);
          *cursor = e.id;
        }
        if (chunk.empty()) chunk = ": keep-alive\n\n";
        return sink.write(chunk.data(), chunk.size());
      });
}

// GET /api/tasks/ID/log: the output of an attempt (the latest, or ?attempt=N), all of it or its
// last ?tail=BYTES; with ?follow=true the response stays open and carries new output until the
// attempt ends. ?raw=true: a structured agent's raw output, kept beside the readable log.
void ApiServer::TaskLog(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Status params = OnlyParams(req, {"attempt", "tail", "follow", "raw"});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<bool> follow = FlagParam(req, "follow");
  if (!follow.ok()) return ReplyError(res, follow.error());
  Result<bool> raw = FlagParam(req, "raw");
  if (!raw.ok()) return ReplyError(res, raw.error());
  Result<int> tail = CountParam(req, "tail", 0, 1, 1 << 30);
  if (!tail.ok()) return ReplyError(res, tail.error());
  std::string id = req.matches[1].str();
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  Result<service::TaskDetail> detail = service::TaskService(**s, (*s)->clock(), opts).Show(id);
  if (!detail.ok()) return ReplyError(res, detail.error());
  if (detail->attempts.empty()) {
    return ReplyError(res, Error::NotFound("task " + id + " has no attempts yet"));
  }
  int n = detail->attempts.back().attempt;
  if (req.has_param("attempt")) {
    Result<int> asked = CountParam(req, "attempt", n, 1, 1 << 20);
    if (!asked.ok()) return ReplyError(res, asked.error());
    n = *asked;
  }
  const Claim* attempt = nullptr;
  for (const auto& c : detail->attempts) {
    if (c.attempt == n) attempt = &c;
  }
  if (!attempt) {
    return ReplyError(res, Error::NotFound("task " + id + " has no attempt " + std::to_string(n)));
  }
  std::string logs = (std::filesystem::path(store::LocalDir(options_.db_path)) / "logs").string();
  std::string path = store::AttemptLogPath(logs, id, n);
  if (*raw) {
    std::string raw_path = store::AttemptRawLogPath(logs, id, n);
    if (FileSize(raw_path) >= 0 || FileSize(path) < 0) path = raw_path;
  }
  // No file: the attempt has printed nothing (its log is made at its first byte).
  std::int64_t size = FileSize(path);
  bool running = attempt->status == ClaimStatus::kActive;
  std::int64_t from = *tail > 0 ? std::max<std::int64_t>(0, size - *tail) : 0;
  if (!*follow || !running) {
    res.status = 200;
    res.set_content(size < 0 ? std::string() : ReadFrom(path, from, size - from),
                    "text/plain; charset=utf-8");
    return;
  }
  auto offset = std::make_shared<std::int64_t>(from);
  std::int64_t token = attempt->token;
  // Not text/plain: the library gzips text for clients that accept it, and a gzipped chunked
  // reply reaches a browser only when it ends, which defeats following.
  res.set_chunked_content_provider(
      "application/octet-stream",
      [this, path, offset, token, id, &opts](std::size_t, httplib::DataSink& sink) {
        for (int polls = 0;; ++polls) {
          std::int64_t size = FileSize(path);
          if (size > *offset) {
            std::string data = ReadFrom(path, *offset, 64 * 1024);
            *offset += static_cast<std::int64_t>(data.size());
            if (!data.empty()) return sink.write(data.data(), data.size());
          }
          if (hub_->stopping() || !sink.is_writable()) {
            sink.done();
            return true;
          }
          if (polls % kLogPollsPerStateCheck == kLogPollsPerStateCheck - 1) {
            Result<StorePool::Lease> s = stores_.Acquire();
            if (!s.ok()) return false;
            Result<service::TaskDetail> d = service::TaskService(**s, (*s)->clock(), opts).Show(id);
            bool active = false;
            if (d.ok()) {
              for (const auto& c : d->attempts) {
                active = active || (c.token == token && c.status == ClaimStatus::kActive);
              }
            }
            // Ended: what it wrote last is read on the next round, then the response ends.
            if (!active && FileSize(path) <= *offset) {
              sink.done();
              return true;
            }
          }
          std::this_thread::sleep_for(kLogPoll);
        }
      });
}

// GET /api/stats?range=1h|24h|7d (1h by default): the chart's data (api/stats.h).
void ApiServer::StatsChart(const httplib::Request& req, httplib::Response& res) {
  Status params = OnlyParams(req, {"range"});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<StatsRange> range =
      ParseStatsRange(req.has_param("range") ? req.get_param_value("range") : "1h");
  if (!range.ok()) return ReplyError(res, range.error());
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  Reply(res, 200, hub_->RenderStats((*s)->clock().NowMs(), *range));
}

// GET /api/usage?by=task|queue|agent|day&since=DUR: the usage ledger summed, as `tx usage
// --json` prints it.
void ApiServer::UsageReport(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Status params = OnlyParams(req, {"by", "since"});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  Millis since = 0;
  if (req.has_param("since")) {
    Result<Millis> d = ParseDuration(req.get_param_value("since"));
    if (!d.ok()) return ReplyError(res, d.error());
    since = std::max<Millis>(0, store.clock().NowMs() - *d);
  }
  std::string by = req.has_param("by") ? req.get_param_value("by") : "task";
  Result<nlohmann::json> doc =
      service::AgentService(store, store.clock(), opts).UsageDocument(by, since);
  if (!doc.ok()) return ReplyError(res, doc.error());
  Reply(res, 200, *doc);
}

// GET /api/notifications?status=pending|delivered|failed&limit=N: the deliveries, newest
// first, as `tx notify list --json` prints them (docs/notifications.md).
void ApiServer::ListNotifications(const httplib::Request& req, httplib::Response& res) {
  Status params = OnlyParams(req, {"status", "limit"});
  if (!params.ok()) return ReplyError(res, params.error());
  std::optional<DeliveryStatus> status;
  if (req.has_param("status")) {
    Result<DeliveryStatus> parsed = ParseDeliveryStatus(req.get_param_value("status"));
    if (!parsed.ok()) return ReplyError(res, parsed.error());
    status = *parsed;
  }
  int limit = 50;
  if (req.has_param("limit")) {
    Result<int> parsed = ParseCount("limit", req.get_param_value("limit"), 10'000);
    if (!parsed.ok()) return ReplyError(res, parsed.error());
    limit = *parsed;
  }
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  Result<std::vector<Delivery>> list =
      service::NotifyOutbox(store, store.clock()).List(status, limit);
  if (!list.ok()) return ReplyError(res, list.error());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : *list) out.push_back(ToJson(d));
  Reply(res, 200, out);
}

// POST /api/agents/NAME/lift[?account=A]: an operator lifts a profile's usage limit before its
// reset, as `tx agent lift` does.
void ApiServer::LiftAgentLimit(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Status params = OnlyParams(req, {"account"});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  std::optional<std::string> account;
  if (req.has_param("account")) account = req.get_param_value("account");
  Result<std::vector<AgentLimit>> lifted =
      service::AgentService(store, store.clock(), opts).Lift(req.matches[1].str(), account);
  if (!lifted.ok()) return ReplyError(res, lifted.error());
  nlohmann::json out = {{"lifted", nlohmann::json::array()}};
  for (const auto& l : *lifted) out["lifted"].push_back(ToJson(l));
  Reply(res, 200, out);
}

// GET /metrics: the Prometheus text format. Gauges are read from the store now; counters come
// from the event log (api/metrics.h).
void ApiServer::PrometheusMetrics(const httplib::Request& req, httplib::Response& res) {
  const service::ServiceOptions& opts = options_.service;
  Status params = OnlyParams(req, {});
  if (!params.ok()) return ReplyError(res, params.error());
  Result<StorePool::Lease> s = stores_.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  store::Store& store = **s;
  MetricsSnapshot snap;
  Status read = store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(snap.tasks, txn.CountTasks());
    TX_ASSIGN_OR_RETURN(std::vector<Worker> workers, txn.ListWorkers({}));
    for (const auto& w : workers) ++snap.workers[w.status];
    TX_ASSIGN_OR_RETURN(snap.reconciler, txn.GetReconcilerRecord());
    TX_ASSIGN_OR_RETURN(snap.usage_by_agent, txn.UsageByAgent());
    TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> rows, txn.ListOrchestrators());
    for (const auto& o : rows) {
      if (o.status != "stopped" && opts.orchestrator_alive(o, store.clock().NowMs())) {
        ++snap.orchestrators_up;
      }
    }
    return Ok();
  });
  if (!read.ok()) return ReplyError(res, read.error());
  snap.last_event_id = hub_->last_id();
  res.status = 200;
  res.set_content(hub_->RenderMetrics(snap), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace tx::api
