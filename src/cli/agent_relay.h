#pragma once
// The agent's side of worker/agent_gateway.h: inside an agent (TX_AGENT_SOCKET set), tx does not
// open the store; it hands its arguments to the worker and prints what the worker's tx printed,
// exiting with its exit code. `tx mcp` is the exception: it serves the agent itself, and each of
// its tools runs a tx that relays.

#include <optional>
#include <string>
#include <vector>

namespace tx::cli {

// The exit code when this command line (`args`, without the program's name) was relayed (or
// could not be: 1, with a one-line error); nullopt when it is not an agent's or is `tx mcp`.
std::optional<int> RelayToWorker(const std::vector<std::string>& args);

}  // namespace tx::cli
