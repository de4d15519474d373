#pragma once
// Daemon mode (tx orchestrator start --daemon). The caller takes the pid-file lock and checks the
// store first, so that those errors reach the terminal; then Detach() forks. The parent waits
// until the daemon says it is running (or why it is not) and returns its exit code; the daemon
// (a new session, stdin /dev/null, stdout and stderr appended to the log) carries on and calls
// Ready() or Failed() once. No store connection may be open across the fork (SQLite forbids it).

#include <optional>
#include <string>

#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::orchestrator {

class DaemonHandshake {
 public:
  // In the daemon: the orchestrator is running. The parent prints `message` and exits 0.
  void Ready(const std::string& message);
  // In the daemon: starting failed. The parent prints the message and exits with `exit_code`.
  void Failed(int exit_code, const std::string& message);

 private:
  friend Result<std::optional<DaemonHandshake>> Detach(const std::string&, int&, std::string&);
  explicit DaemonHandshake(exec::UniqueFd fd) : fd_(std::move(fd)) {}
  exec::UniqueFd fd_;
};

// Forks. In the parent: waits for the daemon's Ready/Failed (or its death), sets
// `parent_exit_code` and `message` to what it said, and returns nullopt — the caller reports them
// and exits. In the daemon: returns the handshake. unavailable when the fork or the log fails.
Result<std::optional<DaemonHandshake>> Detach(const std::string& log_path, int& parent_exit_code,
                                              std::string& message);

}  // namespace tx::orchestrator
