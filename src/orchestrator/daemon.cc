#include "orchestrator/daemon.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <string>

namespace tx::orchestrator {
namespace {

// The handshake: one byte (the exit code) then the message, then EOF.
void Send(int fd, int code, const std::string& message) {
  std::string buf(1, static_cast<char>(code));
  buf += message;
  const char* p = buf.data();
  std::size_t left = buf.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void DaemonHandshake::Ready(const std::string& message) {
  if (!fd_.valid()) return;
  Send(fd_.get(), 0, message);
  fd_.Reset();
}

void DaemonHandshake::Failed(int exit_code, const std::string& message) {
  if (!fd_.valid()) return;
  Send(fd_.get(), exit_code, message);
  fd_.Reset();
}

Result<std::optional<DaemonHandshake>> Detach(const std::string& log_path, int& parent_exit_code,
                                              std::string& message) {
  exec::UniqueFd log(
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!log.valid()) {
    return PosixError("cannot open " + log_path, errno);
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return PosixError("pipe", errno);
  }
  exec::UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) return PosixError("fork", errno);
  if (pid > 0) {
    write_end.Reset();
    std::string reply;
    char buf[512];
    for (;;) {
      ssize_t n = ::read(read_end.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
    if (reply.empty()) {
      int status = 0;
      ::waitpid(pid, &status, WNOHANG);
      message = "the daemon exited before it was running; see " + log_path;
      parent_exit_code = 1;
    } else {
      parent_exit_code = static_cast<unsigned char>(reply[0]);
      message = reply.substr(1);
    }
    return std::optional<DaemonHandshake>();
  }
  // The daemon: its own session, no terminal, output to the log.
  read_end.Reset();
  ::setsid();
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  ::dup2(log.get(), STDOUT_FILENO);
  ::dup2(log.get(), STDERR_FILENO);
  return std::optional<DaemonHandshake>(DaemonHandshake(std::move(write_end)));
}

}  // namespace tx::orchestrator
