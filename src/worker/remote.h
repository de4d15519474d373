#pragma once
// How a worker, or an agent's `tx task ...`, reaches a fleet it knows only by URL. The HTTP client
// (HttpCoordinator, tx_worker_http) is linked into tx-http alone: tx itself carries no HTTP
// library, so the many processes that never speak HTTP (local workers, the CLI) do not map
// cpp-httplib and the OpenSSL it brings. tx-http installs its connector at start (main_http.cc);
// tx hands any command line that could need one to tx-http before it runs (cli/http_handoff.h).

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

// Called once, before any thread starts.
void InstallRemoteConnector(RemoteConnector connector);

// The installed connector's coordinator; an internal error in a binary built without one.
Result<std::unique_ptr<RemoteCoordinator>> ConnectRemote(const std::string& url,
                                                         const std::string& token,
                                                         bool keep_alive = true);

}  // namespace tx::worker
