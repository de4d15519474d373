#include "worker/http_coordinator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>

#include "core/json.h"
#include "core/validation.h"
#include "service/worker_wire.h"

namespace tx::worker {
namespace {

using nlohmann::json;

constexpr Millis kRequestTimeoutMs = 15'000;
constexpr Millis kLongPollSlackMs = 10'000;  // beyond the wait asked of the server

Millis LocalNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The body of a call on the claim `token` of `task_id`, the rest to fill in.
service::FencedBody OnClaim(std::string_view task_id, std::int64_t token) {
  service::FencedBody body;
  body.task_id = task_id;
  body.token = token;
  return body;
}

}  // namespace

HttpCoordinator::HttpCoordinator(const std::string& url, const std::string& token, bool keep_alive)
    : url_(url), client_(url) {
  client_.set_connection_timeout(5, 0);
  client_.set_read_timeout(kRequestTimeoutMs / 1000, 0);
  client_.set_write_timeout(kRequestTimeoutMs / 1000, 0);
  client_.set_keep_alive(keep_alive);
  // The library writes a request's headers and body separately: with Nagle's algorithm on, the
  // body waits for the server's delayed ACK (40 ms) on every request of a kept-alive connection.
  client_.set_tcp_nodelay(true);
  if (!token.empty()) client_.set_bearer_token_auth(token);
  // An agent's `tx task done` acts for its worker, with the credential the worker handed it.
  if (const char* c = std::getenv(kWorkerCredentialEnv); c != nullptr && *c != '\0') {
    set_credential(c);
  }
}

void HttpCoordinator::set_credential(const std::string& credential) {
  credential_ = credential;
  client_.set_default_headers({{kWorkerCredentialHeader, credential}});
}

std::unique_ptr<RemoteCoordinator> ConnectHttp(const std::string& url, const std::string& token,
                                               bool keep_alive) {
  return std::make_unique<HttpCoordinator>(url, token, keep_alive);
}

Millis HttpCoordinator::NowMs() { return LocalNowMs() + clock_offset_ms_.load(); }

void HttpCoordinator::Interrupt() { client_.stop(); }

Result<json> HttpCoordinator::Decode(const httplib::Result& r, const std::string& what) {
  if (!r) {
    return Error::Unavailable("cannot reach " + url_ + " (" + what +
                              "): " + httplib::to_string(r.error()));
  }
  json body =
      r->body.empty() || NestsDeeperThan(r->body) ? json() : json::parse(r->body, nullptr, false);
  if (r->status >= 200 && r->status < 300) {
    if (body.is_object() && body.contains("server_time") && body["server_time"].is_number()) {
      clock_offset_ms_ = body["server_time"].get<Millis>() - LocalNowMs();
    }
    return r->status == 204 ? json() : body;
  }
  std::string code, message = "HTTP " + std::to_string(r->status);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    code = body["error"].value("code", "");
    message = body["error"].value("message", message);
  }
  return Error(CodeOfHttpReply(r->status, code), what + ": " + message);
}

Result<json> HttpCoordinator::Post(const std::string& path, const json& body) {
  return Decode(client_.Post(path, body.dump(), "application/json"), "POST " + path);
}

Result<json> HttpCoordinator::Get(const std::string& path) {
  return Decode(client_.Get(path), "GET " + path);
}

Result<Worker> HttpCoordinator::Register(const service::Registration& r,
                                         std::vector<Worker>* replaced) {
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/register", service::EncodeRegistration(r)));
  if (auto c = reply.find("credential"); c != reply.end() && c->is_string()) {
    set_credential(c->get<std::string>());
  }
  if (replaced != nullptr && reply.contains("replaced") && reply["replaced"].is_array()) {
    for (const auto& w : reply["replaced"]) {
      TX_ASSIGN_OR_RETURN(Worker old, WorkerFromJson(w));
      replaced->push_back(std::move(old));
    }
  }
  return WorkerFromJson(reply["worker"]);
}

Result<Worker> HttpCoordinator::Heartbeat(std::string_view worker_id,
                                          const service::HeartbeatUpdate& u) {
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/heartbeat",
                                       service::EncodeHeartbeat({std::string(worker_id), u})));
  return WorkerFromJson(reply["worker"]);
}

Result<Worker> HttpCoordinator::GetWorker(std::string_view worker_id) {
  TX_ASSIGN_OR_RETURN(json reply, Get("/api/workers/" + std::string(worker_id)));
  return WorkerFromJson(reply);
}

Result<Worker> HttpCoordinator::Deregister(std::string_view worker_id, const std::string& reason) {
  TX_ASSIGN_OR_RETURN(
      json reply,
      Post("/api/worker/deregister", service::EncodeDeregister({std::string(worker_id), reason})));
  return WorkerFromJson(reply["worker"]);
}

Result<std::optional<service::ClaimResult>> HttpCoordinator::ClaimNext(
    std::string_view worker_id, Millis lease_ms, Millis wait_ms, const service::AgentGate* gate) {
  client_.set_read_timeout(std::chrono::milliseconds(wait_ms + kLongPollSlackMs));
  service::ClaimBody body{std::string(worker_id), lease_ms, wait_ms, {}};
  if (gate != nullptr) body.gate = *gate;
  httplib::Result r =
      client_.Post("/api/worker/claim", service::EncodeClaim(body).dump(), "application/json");
  client_.set_read_timeout(kRequestTimeoutMs / 1000, 0);
  claim_backoff_ms_ = 0;
  if (r && r->status == 204 && r->has_header("Retry-After")) {
    claim_backoff_ms_ = 1000 * std::max(1, std::atoi(r->get_header_value("Retry-After").c_str()));
  }
  TX_ASSIGN_OR_RETURN(json reply, Decode(r, "POST /api/worker/claim"));
  return service::DecodeClaimReply(reply);
}

Result<Claim> HttpCoordinator::Inspect(std::int64_t token) {
  TX_ASSIGN_OR_RETURN(json reply, Get("/api/worker/claims/" + std::to_string(token)));
  return ClaimFromJson(reply["claim"]);
}

Result<Claim> HttpCoordinator::Renew(std::string_view task_id, std::int64_t token) {
  TX_ASSIGN_OR_RETURN(json reply,
                      Post("/api/worker/renew", service::EncodeFenced(service::FencedCall::kRenew,
                                                                      OnClaim(task_id, token))));
  return ClaimFromJson(reply["claim"]);
}

Result<Task> HttpCoordinator::Release(std::string_view task_id, std::int64_t token,
                                      EndReason reason) {
  service::FencedBody body = OnClaim(task_id, token);
  body.reason = reason;
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/release",
                                       service::EncodeFenced(service::FencedCall::kRelease, body)));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::Report(std::string_view task_id, std::int64_t token,
                                     service::Outcome outcome, const std::string& text,
                                     std::optional<int> exit_code, const json* branch) {
  service::FencedBody body = OnClaim(task_id, token);
  body.outcome = outcome;
  body.text = text;
  body.exit_code = exit_code;
  if (branch != nullptr) body.branch = *branch;
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/report",
                                       service::EncodeFenced(service::FencedCall::kReport, body)));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::Ask(std::string_view task_id, std::int64_t token,
                                  const std::string& question) {
  service::FencedBody body = OnClaim(task_id, token);
  body.text = question;
  TX_ASSIGN_OR_RETURN(
      json reply, Post("/api/worker/ask", service::EncodeFenced(service::FencedCall::kAsk, body)));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                                   const std::string& error, std::optional<int> exit_code) {
  service::FencedBody body = OnClaim(task_id, token);
  body.reason = reason;
  body.text = error;
  body.exit_code = exit_code;
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/fail",
                                       service::EncodeFenced(service::FencedCall::kFail, body)));
  return TaskFromJson(reply["task"]);
}

Result<Claim> HttpCoordinator::GiveUp(std::string_view task_id, std::int64_t token,
                                      EndReason reason) {
  service::FencedBody body = OnClaim(task_id, token);
  body.reason = reason;
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/give-up",
                                       service::EncodeFenced(service::FencedCall::kGiveUp, body)));
  return ClaimFromJson(reply["claim"]);
}

namespace {

// The outcome of an auto-merge made here, recorded by the server (POST /api/worker/auto-merge),
// fenced by the token of the attempt that put the task in review.
class ServerMergeRecord : public git::MergeRecord {
 public:
  ServerMergeRecord(std::function<Result<json>(const json&)> post, std::int64_t token)
      : post_(std::move(post)), token_(token) {}
  Result<Task> Merged(std::string_view id, const json& merge) override {
    return Record({std::string(id), token_, merge, ""});
  }
  Result<Task> MergeRefused(std::string_view id, const std::string& why) override {
    return Record({std::string(id), token_, std::nullopt, why});
  }

 private:
  Result<Task> Record(const service::AutoMergeBody& body) {
    TX_ASSIGN_OR_RETURN(json reply, post_(service::EncodeAutoMerge(body)));
    return TaskFromJson(reply["task"]);
  }
  std::function<Result<json>(const json&)> post_;
  std::int64_t token_;
};

}  // namespace

Result<git::TaskMerge> HttpCoordinator::AutoMerge(std::string_view task_id, std::int64_t token,
                                                  const git::Settings& git, int cancel_fd) {
  TX_ASSIGN_OR_RETURN(json shown, Get("/api/tasks/" + std::string(task_id)));
  TX_ASSIGN_OR_RETURN(Task task, TaskFromJson(shown));
  ServerMergeRecord record(
      [this](const json& body) { return Post("/api/worker/auto-merge", body); }, token);
  return git::MergeTask(task, record, git, "auto-merge",
                        {.auto_merge = true, .cancel_fd = cancel_fd});
}

Status HttpCoordinator::RecordUsage(const AttemptUsage& usage) {
  TX_RETURN_IF_ERROR(Post("/api/worker/usage", service::EncodeUsage(usage)));
  return Ok();
}

Result<std::vector<AttemptUsage>> HttpCoordinator::TaskUsage(std::string_view task_id) {
  TX_ASSIGN_OR_RETURN(json reply, Get("/api/worker/usage?task_id=" + std::string(task_id)));
  std::vector<AttemptUsage> out;
  for (const auto& u : reply.value("usage", json::array())) {
    TX_ASSIGN_OR_RETURN(AttemptUsage row, UsageFromJson(u));
    out.push_back(std::move(row));
  }
  return out;
}

Result<double> HttpCoordinator::TaskCost(std::string_view task_id) {
  TX_ASSIGN_OR_RETURN(json reply, Get("/api/worker/usage?task_id=" + std::string(task_id)));
  auto cost = reply.find("cost_usd");
  return cost != reply.end() && cost->is_number() ? cost->get<double>() : 0.0;
}

Result<Task> HttpCoordinator::EndLimited(std::string_view task_id, std::int64_t token,
                                         const service::LimitReport& limit) {
  TX_ASSIGN_OR_RETURN(
      json reply,
      Post("/api/worker/limited", service::EncodeLimited({std::string(task_id), token, limit})));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::EndUnavailable(std::string_view task_id, std::int64_t token,
                                             EndReason reason, const std::string& profile,
                                             const std::string& why) {
  TX_ASSIGN_OR_RETURN(
      json reply,
      Post("/api/worker/unavailable",
           service::EncodeUnavailable({std::string(task_id), token, reason, profile, why})));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::EndOverBudget(std::string_view task_id, std::int64_t token,
                                            const std::string& why) {
  TX_ASSIGN_OR_RETURN(json reply,
                      Post("/api/worker/over-budget",
                           service::EncodeOverBudget({std::string(task_id), token, why})));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::Note(std::string_view task_id, std::int64_t token,
                                   const std::string& text) {
  TX_ASSIGN_OR_RETURN(json reply, Post("/api/worker/note",
                                       service::EncodeNote({std::string(task_id), token, text})));
  return TaskFromJson(reply["task"]);
}

Result<Task> HttpCoordinator::AddSubtask(std::string_view parent_id, std::int64_t token,
                                         const Task& draft, std::optional<int> max_subtasks) {
  TX_ASSIGN_OR_RETURN(
      json reply, Post("/api/worker/subtask", service::EncodeSubtask({std::string(parent_id), token,
                                                                      draft, max_subtasks})));
  return TaskFromJson(reply["task"]);
}

Result<Coordinator::AgentState> HttpCoordinator::GetAgentState(const Budgets& budgets) {
  TX_ASSIGN_OR_RETURN(json reply,
                      Post("/api/worker/agent-state", service::EncodeAgentState(budgets)));
  TX_ASSIGN_OR_RETURN(service::AgentStateReply state, service::DecodeAgentStateReply(reply));
  return AgentState{std::move(state.limits), state.budget.value_or(BudgetState{})};
}

Status HttpCoordinator::ShipLog(std::string_view task_id, int attempt, std::int64_t token,
                                std::int64_t offset, std::string_view data, bool raw) {
  std::string path = "/api/worker/log?task_id=" + std::string(task_id) +
                     "&attempt=" + std::to_string(attempt) + "&token=" + std::to_string(token) +
                     "&offset=" + std::to_string(offset) + (raw ? "&raw=1" : "");
  httplib::Result r = client_.Post(path, std::string(data), "application/octet-stream");
  TX_RETURN_IF_ERROR(Decode(r, "POST /api/worker/log"));
  return Ok();
}

}  // namespace tx::worker

extern "C" const tx::worker::RemoteConnector tx_remote_connector = &tx::worker::ConnectHttp;
