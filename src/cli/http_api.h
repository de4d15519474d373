#pragma once
// The HTTP API as `tx serve` and `tx orchestrator start --http` start it. The server (api/,
// Boost.Beast, cpp-httplib) is in tx's HTTP module (exec/http_module.h), opened by the first
// StartHttpApi; its starter is served_api.cc's.

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

// Ok when the API can be served: opens the HTTP module; unavailable, saying why, when it cannot
// be. For a command to refuse before it starts anything.
Status CheckHttpApi();

// As api::ApiServer::Start; unavailable when the HTTP module cannot be opened.
Result<std::unique_ptr<HttpApi>> StartHttpApi(api::ServerOptions options);

}  // namespace tx::cli

// The HTTP module's entry (served_api.cc); weak here: null unless this program links served_api.o
// itself (exec/http_module.h).
extern "C" const tx::cli::HttpApiStarter tx_http_api_starter __attribute__((weak));
