#include "worker/remote.h"

#include "exec/http_module.h"

namespace tx::worker {

Result<std::unique_ptr<RemoteCoordinator>> ConnectRemote(const std::string& url,
                                                         const std::string& token,
                                                         bool keep_alive) {
  TX_ASSIGN_OR_RETURN(RemoteConnector connector,
                      exec::HttpEntry(&tx_remote_connector, "tx_remote_connector"));
  return connector(url, token, keep_alive);
}

}  // namespace tx::worker
