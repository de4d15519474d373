#include <iostream>
#include <string>
#include <vector>

#include "cli/agent_relay.h"

// tx-agent: mounted as `tx` in an agent's container; relays the command line to the agent's
// worker (cli/agent_relay.h) and can do nothing else.
int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::optional<int> code = tx::cli::RelayToWorker(args)) return *code;
  std::cerr << "tx: inside a container only an agent's commands run, through its worker "
               "(TX_AGENT_SOCKET unset, or tx mcp, which needs the whole tx)\n";
  return 2;
}
