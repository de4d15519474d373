#pragma once
// HttpCoordinator: the Coordinator of a worker that reaches the fleet only over HTTP (`tx worker
// start --server URL --token T`), through the API's worker protocol (docs/api.md, "Remote
// workers"): every call is one request, every outcome fenced by the claim's token exactly as on
// the local path. An idle worker's ClaimNext waits at the server (a long poll), so a new task
// reaches it in milliseconds without polling. The server's clock is what leases are judged by:
// each reply carries it, and NowMs() is this machine's clock corrected by the last offset seen.
//
// Errors: a reply's {"error": {"code", "message"}} becomes that code; a server that cannot be
// reached (or that answers 5xx) is unavailable, which the worker retries.

#include <httplib.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "worker/remote.h"

namespace tx::worker {

class HttpCoordinator : public RemoteCoordinator {
 public:
  // `url` is http://HOST:PORT; `token` a worker (or admin) token of that server. With
  // `keep_alive` the connection stays open between requests (the main loop's); without it each
  // request has its own (the heartbeat thread's, which would otherwise hold one of the server's
  // threads between beats).
  HttpCoordinator(const std::string& url, const std::string& token, bool keep_alive = true);

  Millis NowMs() override;
  std::string credential() const override { return credential_; }
  void set_credential(const std::string& credential) override;
  Result<Worker> Register(const service::Registration& r, std::vector<Worker>* replaced) override;
  Result<Worker> Heartbeat(std::string_view worker_id,
                           const service::HeartbeatUpdate& update) override;
  Result<Worker> GetWorker(std::string_view worker_id) override;
  Result<Worker> Deregister(std::string_view worker_id, const std::string& reason) override;
  Result<std::optional<service::ClaimResult>> ClaimNext(std::string_view worker_id, Millis lease_ms,
                                                        Millis wait_ms,
                                                        const service::AgentGate* gate) override;
  bool WaitsForClaims() const override { return true; }
  Millis ClaimBackoffMs() const override { return claim_backoff_ms_; }
  int watch_fd() override { return -1; }
  bool DrainWatch() override { return false; }
  Result<std::optional<Millis>> NextEligibleAt(std::string_view,
                                               const service::AgentGate*) override {
    return std::optional<Millis>();
  }
  void Interrupt() override;
  Result<Claim> Inspect(std::int64_t token) override;
  Result<Claim> Renew(std::string_view task_id, std::int64_t token) override;
  Result<Task> Release(std::string_view task_id, std::int64_t token, EndReason reason) override;
  Result<Task> Report(std::string_view task_id, std::int64_t token, service::Outcome outcome,
                      const std::string& text, std::optional<int> exit_code,
                      const nlohmann::json* branch) override;
  Result<Task> Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                    const std::string& error, std::optional<int> exit_code) override;
  Result<Claim> GiveUp(std::string_view task_id, std::int64_t token, EndReason reason) override;
  Result<Task> Ask(std::string_view task_id, std::int64_t token,
                   const std::string& question) override;
  Result<git::TaskMerge> AutoMerge(std::string_view task_id, std::int64_t token,
                                   const git::Settings& git, int cancel_fd) override;
  Status RecordUsage(const AttemptUsage& usage) override;
  Result<std::vector<AttemptUsage>> TaskUsage(std::string_view task_id) override;
  Result<Task> EndLimited(std::string_view task_id, std::int64_t token,
                          const service::LimitReport& limit) override;
  Result<Task> EndUnavailable(std::string_view task_id, std::int64_t token, EndReason reason,
                              const std::string& profile, const std::string& why) override;
  Result<Task> EndOverBudget(std::string_view task_id, std::int64_t token,
                             const std::string& why) override;
  Result<AgentState> GetAgentState(const Budgets& budgets) override;
  Result<double> TaskCost(std::string_view task_id) override;
  Status ShipLog(std::string_view task_id, int attempt, std::int64_t token, std::int64_t offset,
                 std::string_view data, bool raw) override;
  bool ShipsLogs() const override { return true; }

  Result<nlohmann::json> Fetch(const std::string& path) override { return Get(path); }
  Result<Task> Note(std::string_view task_id, std::int64_t token, const std::string& text) override;
  Result<Task> AddSubtask(std::string_view parent_id, std::int64_t token, const Task& draft,
                          std::optional<int> max_subtasks) override;

 private:
  // POSTs `body` to `path` and returns the reply's JSON (null for 204), or its error.
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> Get(const std::string& path);
  Result<nlohmann::json> Decode(const httplib::Result& r, const std::string& what);

  std::string url_;
  httplib::Client client_;
  std::string credential_;  // set before the calls that act for the worker, not changed during
  std::atomic<Millis> clock_offset_ms_{0};  // server's clock minus ours
  Millis claim_backoff_ms_ = 0;             // the last empty claim's Retry-After
};

// The RemoteConnector of the HTTP module (worker/remote.h).
std::unique_ptr<RemoteCoordinator> ConnectHttp(const std::string& url, const std::string& token,
                                               bool keep_alive);

}  // namespace tx::worker
