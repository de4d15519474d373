// tx mcp

#include <cstdlib>
#include <iostream>

#include "api/mcp_server.h"
#include "cli/commands.h"

namespace tx::cli {

Handler SetupMcp(CLI::App& cmd) {
  (void)cmd;
  return [](Context& ctx) -> Status {
    // Nothing but protocol messages may reach stdout: the tools' commands run as children whose
    // output is captured, and what tx mcp has to say goes to stderr.
    (void)ctx;
    api::McpOptions options;
    options.tx_binary = SelfExe();
    if (options.tx_binary.empty()) {
      return Error::Internal("tx mcp: cannot find its own executable (/proc/self/exe)");
    }
    if (const char* task = std::getenv("TX_TASK_ID"); task != nullptr) options.task_id = task;
    api::McpServer server(std::move(options));
    server.Serve(std::cin, std::cout);
    return Ok();
  };
}

}  // namespace tx::cli
