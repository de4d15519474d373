#include "exec/exit_outcome.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>
#include <utility>

namespace tx::exec {

namespace {

// Exit codes a shell reports when a command it ran died of SIGKILL / SIGTERM (128 + signal).
constexpr int kKilledCode = 128 + SIGKILL;
constexpr int kTerminatedCode = 128 + SIGTERM;

}  // namespace

std::string SignalName(int sig) {
  // sigabbrev_np is thread-safe (unlike strsignal) and gives "KILL" for SIGKILL.
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

ExitOutcome ExitOutcome::FromWaitStatus(int wait_status) {
  ExitOutcome o;
  if (WIFEXITED(wait_status)) {
    o.kind = Kind::kExited;
    o.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    o.kind = Kind::kSignalled;
    o.signal = WTERMSIG(wait_status);
    o.exit_code = 128 + o.signal;
    if (WCOREDUMP(wait_status)) o.detail = "core dumped";
  } else {
    // Stops and continues are never waited for (no WUNTRACED / WCONTINUED); keep it visible.
    o.kind = Kind::kExited;
    o.exit_code = -1;
    o.detail = "unexpected wait status " + std::to_string(wait_status);
  }
  return o;
}

ExitOutcome ExitOutcome::SpawnFailed(std::string detail) {
  ExitOutcome o;
  o.kind = Kind::kSpawnFailed;
  o.exit_code = -1;
  o.detail = std::move(detail);
  return o;
}

ExitOutcome ExitOutcome::AsTimedOut() const {
  ExitOutcome o = *this;
  o.kind = Kind::kTimedOut;
  // Keep how the stop ended ("terminated by SIGTERM") for logs.
  o.detail = Describe();
  return o;
}

ExitOutcome ExitOutcome::AsStalled() const {
  ExitOutcome o = *this;
  o.kind = Kind::kStalled;
  o.detail = Describe();
  return o;
}

ExitOutcome::Class ExitOutcome::Classify() const {
  switch (kind) {
    case Kind::kExited:
      if (exit_code == 0) return Class::kSuccess;
      if (exit_code == kKilledCode) return Class::kKilled;
      if (exit_code == kTerminatedCode) return Class::kTerminated;
      return Class::kFailed;
    case Kind::kSignalled:
      if (signal == SIGKILL) return Class::kKilled;
      if (signal == SIGTERM) return Class::kTerminated;
      return Class::kFailed;
    case Kind::kTimedOut:
      return Class::kTimedOut;
    case Kind::kStalled:
      return Class::kStalled;
    case Kind::kSpawnFailed:
      return Class::kSpawnFailed;
  }
  return Class::kFailed;
}

std::string ExitOutcome::Describe() const {
  switch (kind) {
    case Kind::kExited: {
      std::string text = "exited " + std::to_string(exit_code);
      // A shell exits 128+N when the command it waited for died of signal N.
      if (exit_code == kKilledCode) text += " (killed, possibly out of memory)";
      if (exit_code == kTerminatedCode) text += " (terminated)";
      if (!detail.empty()) text += " (" + detail + ")";
      return text;
    }
    case Kind::kSignalled: {
      // The OOM killer sends SIGKILL; one tx sent is said to be tx's.
      if (signal == SIGKILL) {
        return sent_by_tx ? "killed by SIGKILL (sent by tx)"
                          : "killed by SIGKILL (possibly out of memory)";
      }
      std::string text = (signal == SIGTERM ? "terminated by " : "killed by ") + SignalName(signal);
      if (!detail.empty()) text += " (" + detail + ")";
      return text;
    }
    case Kind::kTimedOut:
      return "timed out";
    case Kind::kStalled:
      return "stalled (no output)";
    case Kind::kSpawnFailed:
      return "spawn failed: " + detail;
  }
  return "unknown outcome";
}

}  // namespace tx::exec
