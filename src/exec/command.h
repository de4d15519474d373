#pragma once
// RunCommand: runs a short helper program (git, above all) to completion and hands back its exit
// status and output. For the agents themselves, which run for hours under watch, see Child.

#include <string>
#include <vector>

#include "core/error.h"

namespace tx::exec {

struct CommandResult {
  int exit_code = 0;  // 128 + N when killed by signal N
  std::string out;    // stdout
  std::string err;    // stderr
  bool timed_out = false;
  bool cancelled = false;  // cut short by cancel_fd
  bool ok() const { return exit_code == 0; }
  // The first non-empty line of stderr, else of stdout: what a one-line error should quote.
  std::string FirstLine() const;
};

// Runs argv (argv[0] looked up in PATH) in `cwd` (empty: this process's), with this process's
// environment plus `extra_env` ("NAME=value", replacing a variable of the same name), `input` as
// its stdin (empty: /dev/null), in a process group of its own, and waits for it. Each of stdout and
// stderr keeps at most `cap` bytes (the rest is read and dropped, so the child never blocks on a
// full pipe). Once the child has exited, whatever is left of its group (a server a test started in
// the background, holding the pipes open) is killed, so a command never outlives itself. With
// `timeout_ms` > 0, a command still running then is killed with its group, and timed_out set.
// With `cancel_fd` >= 0, the same once that fd is readable (a stop signal's signalfd: it is
// polled, never read), and cancelled set.
// kUnavailable when it cannot be started ("run 'git': No such file or directory"); a non-zero
// exit is a CommandResult, not an error.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const std::string& cwd = "",
                                 const std::vector<std::string>& extra_env = {},
                                 std::size_t cap = 16u << 20, long long timeout_ms = 0,
                                 int cancel_fd = -1, const std::string& input = "");

}  // namespace tx::exec
