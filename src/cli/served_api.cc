// The HTTP module's side of http_api.h: the API server behind HttpApi, and the entry through
// which the CLI starts it.

#include "api/server.h"
#include "cli/http_api.h"

namespace tx::cli {
namespace {

class ServedApi final : public HttpApi {
 public:
  explicit ServedApi(std::unique_ptr<api::ApiServer> server) : server_(std::move(server)) {}
  int port() const override { return server_->port(); }
  void Stop() override { server_->Stop(); }

 private:
  std::unique_ptr<api::ApiServer> server_;
};

Result<std::unique_ptr<HttpApi>> StartServedApi(api::ServerOptions options) {
  TX_ASSIGN_OR_RETURN(std::unique_ptr<api::ApiServer> server,
                      api::ApiServer::Start(std::move(options)));
  return std::unique_ptr<HttpApi>(std::make_unique<ServedApi>(std::move(server)));
}

}  // namespace
}  // namespace tx::cli

extern "C" const tx::cli::HttpApiStarter tx_http_api_starter = &tx::cli::StartServedApi;
