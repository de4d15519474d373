#pragma once
// AgentGateway: how an agent's `tx` reaches its worker for the length of one attempt, so that
// what an agent may do is decided by the worker, not by the agent's environment.
//
// It serves a Unix socket in a directory of its own (mode 0700, made under `parent`) on a thread
// of its own. Each connection carries one request line (core/agent_gate.h); the request is gated
// (GateAgentCommand) and, when allowed, run by the worker's own tx binary with `env` (the way to
// the store, the claim's token) in `cwd`; the reply carries its exit code and output. A refused
// request gets exit code 2 and the reason, and runs nothing. Requests are served one at a time.
//
// Destroying the gateway cancels a command still running, stops the thread, and removes the
// socket and its directory.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/agent_gate.h"
#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::worker {

class AgentGateway {
 public:
  struct Options {
    AgentIdentity agent;
    std::string tx_binary;
    std::vector<std::string> env;  // "NAME=value", over this process's environment
    std::string cwd;
    std::string parent = "/tmp";  // where its directory is made
  };

  // unavailable: the directory or the socket could not be made (errno's text).
  static Result<std::unique_ptr<AgentGateway>> Start(Options options);
  ~AgentGateway();
  AgentGateway(const AgentGateway&) = delete;
  AgentGateway& operator=(const AgentGateway&) = delete;

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/tx.sock"; }

 private:
  AgentGateway(Options options, std::string dir, exec::UniqueFd listener, exec::UniqueFd stop);
  void Serve();
  void Answer(int connection);

  Options options_;
  std::string dir_;
  exec::UniqueFd listener_;
  exec::UniqueFd stop_;  // an eventfd: readable once the gateway is being destroyed
  std::thread thread_;
};

// The socket an agent's tx hands its commands to (TX_AGENT_SOCKET).
inline constexpr const char* kAgentSocketEnv = "TX_AGENT_SOCKET";

}  // namespace tx::worker
