#pragma once
// tx-http's side of the split (http_api.h, worker/remote.h): installs the HTTP API server and the
// remote workers' HTTP client. Linked into tx-http only (tx_cli_http).

namespace tx::cli {

// Call first in main, before any thread starts.
void InstallHttp();

}  // namespace tx::cli
