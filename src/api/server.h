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
#include "service/options.h"
#include "worker/budgets_source.h"
#include "worker/config.h"

namespace httplib {
struct Request;
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
  void Routes();
  void StreamRoutes();
  void PoolRoutes();
  void WorkerRoutes();
  // Whether `req` carries the credential of `worker_id`'s registration over HTTP (worker
  // protocol, kCredentialHeader): nullopt when it does, else why not (a 403). Verified hashes are
  // kept, so that a heartbeat reads no store; `held` is used on a miss when given.
  std::optional<std::string> RefuseUnlessActsFor(const httplib::Request& req,
                                                 const std::string& worker_id, store::Store* held);

  ServerOptions options_;
  Tokens tokens_;
  // config.toml beside the store, read at start: the git isolation it asks for on behalf of the
  // tasks added here ([git] repo, [git.queues.NAME]).
  worker::WorkerConfig config_;
  // The fleet's daily budgets, from config.toml beside the store, read again when it changes.
  std::unique_ptr<worker::BudgetsSource> budgets_;
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
