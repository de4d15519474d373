#include "cli/cli.h"
#include "cli/http_install.h"

// tx-http: the CLI with the HTTP API server and the remote workers' client (cli/http_handoff.h).
int main(int argc, char** argv) {
  tx::cli::InstallHttp();
  return tx::cli::Run(argc, argv);
}
