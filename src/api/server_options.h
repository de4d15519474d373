#pragma once
// What the HTTP API is started with. Apart from server.h so that the CLI can fill it in without
// linking the server (which is in the HTTP module; cli/http_api.h).

#include <chrono>
#include <cstddef>
#include <string>

#include "service/options.h"

namespace tx::api {

struct ServerOptions {
  std::string db_path;  // the store
  // The pool (PoolId) of this machine's directory for the store: the orchestrator the pool
  // routes speak to unless a request names another (?id=), as the CLI's commands do.
  std::string local_pool;
  std::string host = "127.0.0.1";
  int port = 8787;  // 0 = any free port (see ApiServer::port)
  std::size_t max_body_bytes = 1 << 20;
  // How often the event hub looks for new events (the streams' and the dashboard's latency).
  std::chrono::milliseconds event_poll{50};
  // Threads running complete requests (connections themselves hold none: api/http_server.h). A
  // remote worker's waiting claim holds one while it waits: at most half of them do; past that a
  // claim does not wait and its worker is told to come back in a second (Retry-After). Event
  // streams and followed logs run on threads of their own, capped apart.
  int threads = 256;
  static constexpr int kMaxThreads = 1024;  // each thread costs its stack; past this, refused
  // Remote workers' heartbeats that arrive within this window of the first are recorded in one
  // transaction, up to this many (api/heartbeat_batcher.h).
  std::chrono::milliseconds heartbeat_window{5};
  std::size_t heartbeat_batch = 256;
  service::ServiceOptions service;
};

}  // namespace tx::api
