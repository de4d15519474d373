#pragma once
// The HTTP API (README, "HTTP API"): JSON over the same services the CLI uses, with the wire
// mappings of core/json.h. Errors are {"error": {"code", "message"}} with the status of the
// error's code (400/404/409/429/503/500), 401/403 from the auth rules of api/auth.h and 413 for
// a body over the cap. A refused request writes nothing.
//
// Thread safety: Start and Stop from one thread; requests are served on the server's threads,
// each with a store of its own from a StorePool.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "api/auth.h"
#include "api/event_hub.h"
#include "api/heartbeat_batcher.h"
#include "api/http_server.h"
#include "api/server_options.h"
#include "api/store_pool.h"
#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "core/worker.h"
#include "service/draft_pipeline.h"
#include "service/options.h"
#include "service/worker_wire.h"
#include "worker/budgets_source.h"
#include "worker/config.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tx::api {

class ApiServer {
 public:
  // Loads the tokens beside the store, opens it once to check it, binds the address and starts
  // serving on a thread of its own. Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<ApiServer>> Start(ServerOptions options);
  ~ApiServer();  // stops

  int port() const { return port_; }
  // Stops accepting, finishes the requests in flight, joins the thread. Idempotent.
  void Stop();

 private:
  struct Key {};  // only Start constructs

 public:
  ApiServer(Key, ServerOptions options, Tokens tokens, bool loopback);

 private:
  // A route: a request whose method is `method` and whose whole path matches `pattern` (a
  // regular expression; its groups are req.matches) is served by `handle`.
  enum class HttpMethod { kGet, kPost, kPatch, kDelete };
  struct Route {
    HttpMethod method;
    const char* pattern;
    void (ApiServer::*handle)(const httplib::Request&, httplib::Response&);
  };
  // Every route, in the order they are matched (server.cc).
  static const Route kRoutes[];

  // Registers the checks every request goes through first (the Host, the token), the replies to
  // errors and exceptions, and kRoutes.
  void Routes();

  // The handlers of kRoutes, by the file they are in.
  // server.cc: tasks, workers, the dashboard
  void Healthz(const httplib::Request& req, httplib::Response& res);
  void ListTasks(const httplib::Request& req, httplib::Response& res);
  void CancelTasks(const httplib::Request& req, httplib::Response& res);
  void RetryTasks(const httplib::Request& req, httplib::Response& res);
  void AddTasks(const httplib::Request& req, httplib::Response& res);
  void ShowTask(const httplib::Request& req, httplib::Response& res);
  void ChangeTask(const httplib::Request& req, httplib::Response& res);
  void DiffTask(const httplib::Request& req, httplib::Response& res);
  void MergeTask(const httplib::Request& req, httplib::Response& res);
  void ListWorkers(const httplib::Request& req, httplib::Response& res);
  void ShowWorker(const httplib::Request& req, httplib::Response& res);
  void ListWorkerAttempts(const httplib::Request& req, httplib::Response& res);
  void ListHeartbeats(const httplib::Request& req, httplib::Response& res);
  void DashboardPage(const httplib::Request& req, httplib::Response& res);
  void DashboardAsset(const httplib::Request& req, httplib::Response& res);
  // CancelTasks and RetryTasks.
  void ChangeTasks(const httplib::Request& req, httplib::Response& res, bool retry);
  // stream_routes.cc: what follows the store as it changes
  void ListEvents(const httplib::Request& req, httplib::Response& res);
  void TaskLog(const httplib::Request& req, httplib::Response& res);
  void StatsChart(const httplib::Request& req, httplib::Response& res);
  void UsageReport(const httplib::Request& req, httplib::Response& res);
  void ListNotifications(const httplib::Request& req, httplib::Response& res);
  void LiftAgentLimit(const httplib::Request& req, httplib::Response& res);
  void PrometheusMetrics(const httplib::Request& req, httplib::Response& res);
  // pool_routes.cc: the orchestrator, workers made and stopped, sessions
  void ShowOrchestrator(const httplib::Request& req, httplib::Response& res);
  void ScalePool(const httplib::Request& req, httplib::Response& res);
  void StopPool(const httplib::Request& req, httplib::Response& res);
  void CreateWorker(const httplib::Request& req, httplib::Response& res);
  void StopWorker(const httplib::Request& req, httplib::Response& res);
  void PauseWorker(const httplib::Request& req, httplib::Response& res);
  void ResumeWorker(const httplib::Request& req, httplib::Response& res);
  void ListSessions(const httplib::Request& req, httplib::Response& res);
  void EndSession(const httplib::Request& req, httplib::Response& res);
  // PauseWorker and ResumeWorker.
  void RequestOfWorker(const httplib::Request& req, httplib::Response& res, WorkerRequest request);
  // worker_routes.cc: the remote-worker protocol
  void RegisterWorker(const httplib::Request& req, httplib::Response& res);
  void WorkerHeartbeat(const httplib::Request& req, httplib::Response& res);
  void DeregisterWorker(const httplib::Request& req, httplib::Response& res);
  void ClaimTask(const httplib::Request& req, httplib::Response& res);
  void InspectClaim(const httplib::Request& req, httplib::Response& res);
  void RenewClaim(const httplib::Request& req, httplib::Response& res);
  void ReleaseClaim(const httplib::Request& req, httplib::Response& res);
  void ReportOutcome(const httplib::Request& req, httplib::Response& res);
  void FailAttempt(const httplib::Request& req, httplib::Response& res);
  void GiveUpClaim(const httplib::Request& req, httplib::Response& res);
  void AskQuestion(const httplib::Request& req, httplib::Response& res);
  void RecordAutoMerge(const httplib::Request& req, httplib::Response& res);
  void RecordUsage(const httplib::Request& req, httplib::Response& res);
  void TaskUsage(const httplib::Request& req, httplib::Response& res);
  void EndLimited(const httplib::Request& req, httplib::Response& res);
  void EndUnavailable(const httplib::Request& req, httplib::Response& res);
  void EndOverBudget(const httplib::Request& req, httplib::Response& res);
  void NoteProgress(const httplib::Request& req, httplib::Response& res);
  void AddSubtask(const httplib::Request& req, httplib::Response& res);
  void AgentState(const httplib::Request& req, httplib::Response& res);
  void ReportAndClaimBatch(const httplib::Request& req, httplib::Response& res);
  void ShipLog(const httplib::Request& req, httplib::Response& res);
  // The calls of the protocol on a claim (RenewClaim, ReleaseClaim, ...).
  void Fenced(const httplib::Request& req, httplib::Response& res, service::FencedCall call);
  // What most of the protocol's handlers do around their call (worker_routes.cc says).
  template <typename Fn>
  void Serve(const httplib::Request& req, httplib::Response& res, int ok_status, Fn fn);

  // Whether `req` carries the credential of `worker_id`'s registration over HTTP (worker
  // protocol, service::kCredentialHeader): nullopt when it does, else why not (a 403). Verified
  // hashes are kept, so that a heartbeat reads no store; `held` is used on a miss when given.
  std::optional<std::string> RefuseUnlessActsFor(const httplib::Request& req,
                                                 const std::string& worker_id, store::Store* held);

  ServerOptions options_;
  Tokens tokens_;
  // config.toml beside the store, read at start: the git isolation it asks for on behalf of the
  // tasks added here ([git] repo, [git.queues.NAME]).
  worker::WorkerConfig config_;
  // The fleet's daily budgets, from config.toml beside the store, read again when it changes.
  std::unique_ptr<worker::BudgetsSource> budgets_;
  // config.toml beside the store, read anew for each branch's diff and merge ([git]).
  std::string config_path_;
  // Threads that decode big arrays of tasks while they are inserted, shared by every request.
  service::HelperBudget decode_helpers_{4};
  bool loopback_ = false;       // every address the host resolves to is a loopback one
  AuthFailures auth_failures_;  // clients that present wrong tokens, slowed down
  StorePool stores_;
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<HeartbeatBatcher> beats_;  // remote workers' heartbeats, a batch at a time
  std::atomic<int> waiting_claims_{0};
  Mutex credentials_mu_;
  // worker id -> SHA-256 hex
  std::unordered_map<std::string, std::string> credential_hashes_ TX_GUARDED_BY(credentials_mu_);
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace tx::api
