#pragma once
// A handle on another process that outlives its pid: a Linux pidfd (5.3+). Signals sent through
// it never reach a process that reused the pid, and it polls readable once the process exits, so
// an exit is an event to wait for rather than something to probe for. Without pidfds (ENOSYS)
// the handle is empty and callers fall back to the pid.

#include <sys/types.h>

#include "exec/unique_fd.h"

namespace tx::exec {

struct ProcessHandle {
  UniqueFd pidfd;     // empty when the process is gone or the kernel has no pidfds
  bool gone = false;  // the process no longer exists (ESRCH): a zombie is not gone
};

// Opens a pidfd on `pid`.
ProcessHandle OpenProcess(pid_t pid);

// Whether the process behind `pidfd` exits within `wait_ms`, or already has. False for an
// invalid descriptor.
bool ExitsWithin(int pidfd, int wait_ms);

// Sends `sig` through `pidfd` when it is valid: nothing when that process is gone. Otherwise
// (no pidfd) by pid with kill(2).
void SignalProcess(int pidfd, pid_t pid, int sig);

}  // namespace tx::exec
