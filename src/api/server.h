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
#include <string>
#include <thread>

#include "api/auth.h"
#include "api/event_hub.h"
#include "api/store_pool.h"
#include "core/error.h"
#include "service/options.h"

namespace httplib {
class Server;
}

namespace tx::api {

struct ServerOptions {
  std::string db_path;  // the store
  std::string host = "127.0.0.1";
  int port = 8787;  // 0 = any free port (see ApiServer::port)
  std::size_t max_body_bytes = 1 << 20;
  // How often the event hub looks for new events (the streams' and the dashboard's latency).
  std::chrono::milliseconds event_poll{50};
  // Threads serving requests: each open event stream, log follow and waiting claim of a remote
  // worker holds one while it lasts. At most half of them hold waiting claims; past that a claim
  // does not wait and its worker is told to come back in a second (Retry-After).
  int threads = 256;
  service::ServiceOptions service;
};

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
  ApiServer(Key, ServerOptions options, Tokens tokens);

 private:
  void Routes();
  void StreamRoutes();
  void PoolRoutes();
  void WorkerRoutes();

  ServerOptions options_;
  Tokens tokens_;
  bool loopback_;
  StorePool stores_;
  std::unique_ptr<EventHub> hub_;
  std::atomic<int> waiting_claims_{0};
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, as the library created it (it owns it)
};

// Splits "HOST:PORT" ("127.0.0.1:8787", "[::1]:8787", ":8787" = loopback). Invalid argument
// naming the text otherwise.
Result<std::pair<std::string, int>> ParseListenAddress(std::string_view text);

}  // namespace tx::api
