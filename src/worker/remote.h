#pragma once
// How a worker, or an agent's `tx task ...`, reaches a fleet it knows only by URL. The HTTP client
// (HttpCoordinator, tx_worker_http) is in tx's HTTP module (exec/http_module.h), opened by the
// first ConnectRemote: the processes that never speak HTTP (local workers, the CLI) do not map
// cpp-httplib and the OpenSSL it brings.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "worker/coordinator.h"

namespace tx::worker {

// A Coordinator over the API's worker protocol that can also read the API.
class RemoteCoordinator : public Coordinator {
 public:
  // GET `path` of the API (a read), as JSON.
  virtual Result<nlohmann::json> Fetch(const std::string& path) = 0;

  // An agent's tx task note and tx task add, through the server (docs/mcp.md): as
  // TaskService::Note and AddSubtask, fenced by the claim's `token`. `max_subtasks`: the limit
  // the agent was given (TX_MAX_SUBTASKS), if any; the server's own holds when it is lower.
  virtual Result<Task> Note(std::string_view task_id, std::int64_t token,
                            const std::string& text) = 0;
  virtual Result<Task> AddSubtask(std::string_view parent_id, std::int64_t token, const Task& draft,
                                  std::optional<int> max_subtasks) = 0;
};

// `url` is http://HOST:PORT; `token` a worker (or admin) token of that server. With `keep_alive`
// the connection stays open between requests (a worker's main loop); without it each request has
// its own (the heartbeat thread's, which would otherwise hold one of the server's threads).
using RemoteConnector = std::unique_ptr<RemoteCoordinator> (*)(const std::string& url,
                                                               const std::string& token,
                                                               bool keep_alive);

// The HTTP module's connector's coordinator; unavailable when the module cannot be opened.
Result<std::unique_ptr<RemoteCoordinator>> ConnectRemote(const std::string& url,
                                                         const std::string& token,
                                                         bool keep_alive = true);

}  // namespace tx::worker

// The HTTP module's entry (http_coordinator.cc); weak here: null unless this program links
// http_coordinator.o itself, as a test of HttpCoordinator does (exec/http_module.h).
extern "C" const tx::worker::RemoteConnector tx_remote_connector __attribute__((weak));
