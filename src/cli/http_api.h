#pragma once
// The HTTP API as `tx serve` and `tx orchestrator start --http` start it. The server (api/ and
// cpp-httplib) is linked into tx-http alone, which installs its starter before running the CLI
// (http_install.h); tx hands such command lines to tx-http before it parses them
// (http_handoff.h), so a tx process never needs it.

#include <memory>

#include "api/server_options.h"
#include "core/error.h"

namespace tx::cli {

// A running server, stopped when destroyed.
class HttpApi {
 public:
  virtual ~HttpApi() = default;
  virtual int port() const = 0;
  virtual void Stop() = 0;  // finishes the requests in flight; idempotent
};

using HttpApiStarter = Result<std::unique_ptr<HttpApi>> (*)(api::ServerOptions options);

// Called once, before any thread starts.
void InstallHttpApi(HttpApiStarter starter);

// As api::ApiServer::Start; an internal error in a binary built without the server.
Result<std::unique_ptr<HttpApi>> StartHttpApi(api::ServerOptions options);

}  // namespace tx::cli
