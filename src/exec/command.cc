#include "exec/command.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "exec/unique_fd.h"

extern char** environ;

namespace tx::exec {
namespace {

std::string FirstNonEmptyLine(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) return line;
    pos = end + 1;
  }
  return "";
}

// The environment of this process with `extra` laid over it.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::string_view name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& x : extra) {
      if (x.size() > name.size() && x.compare(0, name.size(), name) == 0 && x[name.size()] == '=') {
        replaced = true;
        break;
      }
    }
    if (!replaced) env.emplace_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// One of posix_spawn's C objects (its attributes, its file actions), destroyed however
// RunCommand leaves.
template <typename T, int (*Init)(T*), int (*Destroy)(T*)>
class SpawnObject {
 public:
  SpawnObject() { Init(&v_); }
  ~SpawnObject() { Destroy(&v_); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
  T* get() { return &v_; }

 private:
  T v_;
};
using SpawnAttributes =
    SpawnObject<posix_spawnattr_t, posix_spawnattr_init, posix_spawnattr_destroy>;
using FileActions = SpawnObject<posix_spawn_file_actions_t, posix_spawn_file_actions_init,
                                posix_spawn_file_actions_destroy>;

}  // namespace

std::string CommandResult::FirstLine() const {
  std::string line = FirstNonEmptyLine(err);
  return line.empty() ? FirstNonEmptyLine(out) : line;
}

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::vector<std::string>& extra_env, std::size_t cap,
                                 long long timeout_ms, int cancel_fd, const std::string& input) {
  if (argv.empty()) return Error::InvalidArgument("run: empty argv");
  // The input is a memory file the child reads as its stdin: no pipe to feed while it runs.
  UniqueFd in;
  if (!input.empty()) {
    in = UniqueFd(::memfd_create("tx-input", MFD_CLOEXEC));
    std::size_t done = 0;
    while (in.get() >= 0 && done < input.size()) {
      ssize_t n = ::write(in.get(), input.data() + done, input.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    if (in.get() < 0 || done < input.size() || ::lseek(in.get(), 0, SEEK_SET) != 0) {
      return PosixError("run '" + argv[0] + "': its input", errno);
    }
  }
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return PosixError("run '" + argv[0] + "': pipe", errno);
  }
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return PosixError("run '" + argv[0] + "': pipe", errno);
  }
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  FileActions fa;
  if (in.get() >= 0) {
    posix_spawn_file_actions_adddup2(fa.get(), in.get(), 0);
  } else {
    posix_spawn_file_actions_addopen(fa.get(), 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(fa.get(), out_w.get(), 1);
  posix_spawn_file_actions_adddup2(fa.get(), err_w.get(), 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(fa.get(), cwd.c_str());

  std::vector<std::string> env = MergedEnvironment(extra_env);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  SpawnAttributes attrs;
  // A group of its own (pgid == pid), no signal blocked and every one at its default: the
  // caller may be a thread that blocks them all (the worker's, for its signalfd).
  posix_spawnattr_setflags(attrs.get(),
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(attrs.get(), 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(attrs.get(), &none);
  posix_spawnattr_setsigdefault(attrs.get(), &all);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), fa.get(), attrs.get(), cargv.data(), cenv.data());
  if (rc != 0) {
    std::string why = std::strerror(rc);
    if (!cwd.empty() && ::access(cwd.c_str(), X_OK) != 0) why = "cwd '" + cwd + "': " + why;
    return Error::Unavailable("run '" + argv[0] + "': " + why);
  }
  out_w.Reset();
  err_w.Reset();

  CommandResult result;
  char buf[65536];
  pollfd fds[3] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open = 2;
  int status = 0;
  bool exited = false;
  auto started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point exited_at;
  auto reap = [&](int flags) {
    if (exited) return;
    pid_t r;
    while ((r = ::waitpid(pid, &status, flags)) < 0 && errno == EINTR) {
    }
    if (r == pid) {
      exited = true;
      exited_at = std::chrono::steady_clock::now();
      ::kill(-pid, SIGKILL);  // what it left behind, which could hold the pipes open for ever
    }
  };
  while (open > 0) {
    // Short polls: the child's exit is noticed even while a leftover holds the pipes.
    if (::poll(fds, 3, 50) < 0 && errno != EINTR) break;
    if (fds[2].fd >= 0 && fds[2].revents != 0 && !exited) {
      result.cancelled = true;
      ::kill(-pid, SIGKILL);
      fds[2].fd = -1;  // polled no more: it stays readable until its owner reads it
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      std::size_t room = cap > sinks[i]->size() ? cap - sinks[i]->size() : 0;
      sinks[i]->append(buf, std::min(room, static_cast<std::size_t>(n)));
    }
    reap(WNOHANG);
    // A descendant that left the group (setsid) may hold the pipes: its output is not waited for.
    if (exited && std::chrono::steady_clock::now() - exited_at > std::chrono::seconds(2)) break;
    if (!exited && timeout_ms > 0 &&
        std::chrono::steady_clock::now() - started > std::chrono::milliseconds(timeout_ms)) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
  }
  reap(0);
  result.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : 1;
  return result;
}

}  // namespace tx::exec
