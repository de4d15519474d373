#pragma once
// AgentGateway: how an agent's `tx` reaches its worker, so that what an agent may do is decided by
// the worker, not by the agent's environment.
//
// One per worker, made at its first attempt: a Unix socket in a directory of its own (mode 0700,
// made under `parent`) served on a thread of its own. Each attempt is admitted with its identity
// and gets a random key; each connection carries one request line with its key
// (core/agent_gate.h). A request with the current attempt's key is gated (GateAgentCommand) and,
// when allowed, run by the worker's own tx binary with the attempt's `env` (the way to the store,
// the claim's token) in its `cwd`; the reply carries its exit code and output. A refused request,
// or one with another key (an earlier attempt's, none between attempts), gets exit code 2 and the
// reason, and runs nothing. Requests are served one at a time.
//
// The end of an admission cancels a command of its attempt still running. Destroying the gateway
// stops the thread and removes the socket and its directory.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/agent_gate.h"
#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "exec/unique_fd.h"

namespace tx::worker {

// What an agent is told of its gateway: TX_AGENT_SOCKET and TX_AGENT_KEY.
struct AgentAccess {
  std::string socket;
  std::string key;
};

class AgentGateway {
 public:
  // One attempt's side of the gateway.
  struct Attempt {
    AgentIdentity agent;
    std::vector<std::string> env;  // "NAME=value", over this process's environment
    std::string cwd;
  };

  // Ends its attempt's admission when destroyed.
  class Admission {
   public:
    Admission(Admission&& other) noexcept;
    Admission& operator=(Admission&&) = delete;
    ~Admission();
    const AgentAccess& access() const { return access_; }

   private:
    friend class AgentGateway;
    Admission(AgentGateway* gateway, AgentAccess access);
    AgentGateway* gateway_;
    AgentAccess access_;
  };

  // unavailable: the directory or the socket could not be made (errno's text).
  static Result<std::unique_ptr<AgentGateway>> Start(std::string tx_binary,
                                                     const std::string& parent = "/tmp");
  ~AgentGateway();
  AgentGateway(const AgentGateway&) = delete;

  // Removes the gateway directories under `parent` that a worker killed with SIGKILL left behind
  // (it could not remove its own): this user's tx-agent-* directories older than `min_age` whose
  // socket no one listens on. The age spares a gateway between its directory and its listen.
  // Returns how many were removed.
  static int SweepStale(const std::string& parent = "/tmp",
                        std::chrono::seconds min_age = std::chrono::seconds(60));
  AgentGateway& operator=(const AgentGateway&) = delete;

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/tx.sock"; }

  // Serves `attempt` until the admission ends; at most one at a time (a second replaces the
  // first's).
  Admission Admit(Attempt attempt);

 private:
  AgentGateway(std::string tx_binary, std::string dir, exec::UniqueFd listener, exec::UniqueFd stop,
               exec::UniqueFd cancel);
  void Dismiss(const std::string& key);
  void Serve();
  void Answer(int connection);

  const std::string tx_binary_;
  const std::string dir_;
  exec::UniqueFd listener_;
  exec::UniqueFd stop_;    // an eventfd: readable once the gateway is being destroyed
  exec::UniqueFd cancel_;  // an eventfd: readable from an admission's end to the next one
  Mutex mu_;
  std::optional<Attempt> current_ TX_GUARDED_BY(mu_);
  std::string key_ TX_GUARDED_BY(mu_);
  std::thread thread_;
};

// The socket an agent's tx hands its commands to, and the key it sends with each.
inline constexpr const char* kAgentSocketEnv = "TX_AGENT_SOCKET";
inline constexpr const char* kAgentKeyEnv = "TX_AGENT_KEY";

}  // namespace tx::worker
