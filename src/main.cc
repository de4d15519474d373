#include "cli/cli.h"
#include "cli/http_handoff.h"

// tx: the CLI without the HTTP library. A command line that may need HTTP runs as tx-http.
int main(int argc, char** argv) {
  if (tx::cli::MayNeedHttp(argc, argv)) return tx::cli::RunHttpBinary(argv);
  return tx::cli::Run(argc, argv);
}
