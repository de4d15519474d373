#pragma once
// Runs the real tx binary for black-box tests: posix_spawn (no shell), stdout and stderr captured
// through pipes read together with poll (no deadlock however much either side writes), stdin from
// /dev/null, cwd set through the spawn's file actions (the test process never chdirs).
//
// The child's environment is the test process's minus every TX_* variable (TX_DB, TX_CLAIM_TOKEN,
// TX_ALLOWED_COMMANDS, ... leaking in from the caller would change what tx does), plus `extra_env`.
//
// TempDir is a fresh mkdtemp directory under /tmp, removed with everything in it on destruction.
// Looking at the processes it leaves (/proc, polling) is process_probes.h's.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace tx::testing {

using Env = std::map<std::string, std::string>;

struct RunResult {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;     // everything the child wrote to stdout
  std::string err;     // everything the child wrote to stderr
  bool timed_out = false;
};

namespace detail {

inline std::runtime_error SysError(const std::string& what, int err) {
  return std::runtime_error(what + ": " + std::strerror(err));
}

// The parent's environment without TX_*, then `extra` (which wins).
inline std::vector<std::string> ChildEnvironment(const Env& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("TX_", 0) == 0 || extra.count(name) != 0) continue;
    env.push_back(std::move(entry));
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

inline std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace detail

// Runs `binary args...` in `cwd` (empty: the test's own cwd) and waits for it, at most `timeout`
// (then the child is killed with SIGKILL and timed_out is set). Throws std::runtime_error when
// the process cannot be started at all.
inline RunResult RunProcess(const std::string& binary, const std::vector<std::string>& args,
                            const Env& extra_env = {}, const std::string& cwd = {},
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw detail::SysError("pipe", errno);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw detail::SysError("pipe", e);
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());

  std::vector<std::string> argv_s;
  argv_s.push_back(binary);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = detail::ChildEnvironment(extra_env);
  std::vector<char*> argv = detail::CStrings(argv_s);
  std::vector<char*> envp = detail::CStrings(env_s);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw detail::SysError("spawn " + binary, rc);
  }

  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  }
  return r;
}

#ifdef TX_BINARY
// Runs the tx binary under test.
inline RunResult RunTx(std::vector<std::string> args, Env extra_env = {}, std::string cwd = {}) {
  return RunProcess(TX_BINARY, args, extra_env, cwd);
}
#endif

// A process left running in the background (a `tx worker start`), its stdout and stderr written
// to `log_path`. The destructor SIGKILLs and reaps it if it is still running.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::string& binary, const std::vector<std::string>& args,
                    const Env& extra_env, const std::string& cwd, const std::string& log_path)
      : log_path_(log_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    std::vector<std::string> argv_s{binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = detail::ChildEnvironment(extra_env);
    std::vector<char*> argv = detail::CStrings(argv_s);
    std::vector<char*> envp = detail::CStrings(env_s);
    int rc = posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw detail::SysError("spawn " + binary, rc);
  }
  ~BackgroundProcess() {
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) const { kill(pid_, sig); }

  // The exit status (128 + N for signal N) once it has exited within `timeout`, else -1.
  int Wait(std::chrono::milliseconds timeout) {
    if (exit_code_) return *exit_code_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return *exit_code_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      usleep(10'000);
    }
  }

  // Everything it has written so far.
  std::string Output() const {
    std::string out;
    int fd = open(log_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    close(fd);
    return out;
  }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> exit_code_;
};

// A fresh directory under /tmp, removed recursively when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/tx-test-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw detail::SysError("mkdtemp", errno);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tx::testing
