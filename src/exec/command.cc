#include "exec/command.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

// posix_spawn's file actions, freed however Run leaves.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&fa_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_;
};

}  // namespace

std::string CommandResult::FirstLine() const {
  std::string line = FirstNonEmptyLine(err);
  return line.empty() ? FirstNonEmptyLine(out) : line;
}

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::vector<std::string>& extra_env, std::size_t cap) {
  if (argv.empty()) return Error::InvalidArgument("run: empty argv");
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Error::Unavailable("run '" + argv[0] + "': pipe: " + std::strerror(errno));
  }
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return Error::Unavailable("run '" + argv[0] + "': pipe: " + std::strerror(errno));
  }
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  FileActions fa;
  posix_spawn_file_actions_addopen(fa.get(), 0, "/dev/null", O_RDONLY, 0);
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

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), fa.get(), nullptr, cargv.data(), cenv.data());
  if (rc != 0) {
    std::string why = std::strerror(rc);
    if (!cwd.empty() && ::access(cwd.c_str(), X_OK) != 0) why = "cwd '" + cwd + "': " + why;
    return Error::Unavailable("run '" + argv[0] + "': " + why);
  }
  out_w.Reset();
  err_w.Reset();

  CommandResult result;
  char buf[65536];
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
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
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : 1;
  return result;
}

}  // namespace tx::exec
