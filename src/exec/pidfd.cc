#include "exec/pidfd.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace tx::exec {

ProcessHandle OpenProcess(pid_t pid) {
  ProcessHandle h;
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    h.pidfd.Reset(fd);
  } else {
    h.gone = errno == ESRCH;
  }
#else
  h.gone = ::kill(pid, 0) != 0 && errno == ESRCH;
#endif
  return h;
}

bool ExitsWithin(int pidfd, int wait_ms) {
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, wait_ms);
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

void SignalProcess(int pidfd, pid_t pid, int sig) {
#ifdef SYS_pidfd_send_signal
  if (pidfd >= 0) {
    if (::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0 || errno == ESRCH) return;
  }
#else
  (void)pidfd;
#endif
  ::kill(pid, sig);
}

}  // namespace tx::exec
