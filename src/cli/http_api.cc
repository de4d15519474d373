#include "cli/http_api.h"

namespace tx::cli {
namespace {
HttpApiStarter g_starter = nullptr;  // set before any thread starts, read-only after
}  // namespace

void InstallHttpApi(HttpApiStarter starter) { g_starter = starter; }

Result<std::unique_ptr<HttpApi>> StartHttpApi(api::ServerOptions options) {
  if (g_starter == nullptr) {
    return Error::Internal("this binary has no HTTP server: run tx-http (beside tx) instead");
  }
  return g_starter(std::move(options));
}

}  // namespace tx::cli
