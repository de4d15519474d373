#pragma once
// ExitOutcome: how a child ended, built in exactly one place (FromWaitStatus / SpawnFailed) and
// classified once. The worker turns it into a task outcome and an attempt end reason.

#include <string>

namespace tx::exec {

// "SIGKILL", "SIGTERM", or "signal N".
std::string SignalName(int sig);

struct ExitOutcome {
  enum class Kind {
    kExited,       // exited by itself with exit_code
    kSignalled,    // killed by a signal it did not ask for (signal)
    kTimedOut,     // the worker stopped it: task timeout
    kStalled,      // the worker stopped it: no output for the stall timeout
    kSpawnFailed,  // never started (detail says why, e.g. "spawn 'claude': No such file ...")
  };
  // The one classification every caller uses.
  enum class Class {
    kSuccess,     // exited 0
    kFailed,      // exited non-zero (other than 137/143)
    kKilled,      // SIGKILL or exit 137: killed, possibly by the OOM killer
    kTerminated,  // SIGTERM or exit 143
    kTimedOut,
    kStalled,
    kSpawnFailed,
  };

  Kind kind = Kind::kExited;
  int exit_code = 0;  // kExited: the code; otherwise 128 + signal when a signal ended it, or -1
  int signal = 0;     // the signal that ended it, when one did
  std::string detail;
  // kSignalled: the signal was one tx sent (Child::Signal) — a stop, a timeout, a shutdown — not
  // the kernel's OOM killer or someone's kill -9.
  bool sent_by_tx = false;

  // From a waitpid() status. A stop the worker caused (timeout, stall) is marked afterwards with
  // AsTimedOut / AsStalled, keeping the code and signal.
  static ExitOutcome FromWaitStatus(int wait_status);
  static ExitOutcome SpawnFailed(std::string detail);
  ExitOutcome AsTimedOut() const;
  ExitOutcome AsStalled() const;

  Class Classify() const;
  // "exited 0", "exited 1", "killed by SIGKILL (possibly out of memory)", "timed out", ...
  std::string Describe() const;
};

}  // namespace tx::exec
