#include "worker/remote.h"

namespace tx::worker {
namespace {
RemoteConnector g_connector = nullptr;  // set before any thread starts, read-only after
}  // namespace

void InstallRemoteConnector(RemoteConnector connector) { g_connector = connector; }

Result<std::unique_ptr<RemoteCoordinator>> ConnectRemote(const std::string& url,
                                                         const std::string& token,
                                                         bool keep_alive) {
  if (g_connector == nullptr) {
    return Error::Internal("this binary has no HTTP client: run tx-http (beside tx) instead");
  }
  return g_connector(url, token, keep_alive);
}

}  // namespace tx::worker
