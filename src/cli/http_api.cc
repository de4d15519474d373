#include "cli/http_api.h"

#include "exec/http_module.h"

namespace tx::cli {
namespace {

Result<HttpApiStarter> Starter() {
  return exec::HttpEntry(&tx_http_api_starter, "tx_http_api_starter");
}

}  // namespace

Status CheckHttpApi() {
  TX_RETURN_IF_ERROR(Starter());
  return Ok();
}

Result<std::unique_ptr<HttpApi>> StartHttpApi(api::ServerOptions options) {
  TX_ASSIGN_OR_RETURN(HttpApiStarter starter, Starter());
  return starter(std::move(options));
}

}  // namespace tx::cli
