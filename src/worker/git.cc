#include "worker/git.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

namespace tx::worker::git {

namespace fs = std::filesystem;

Result<exec::CommandResult> Run(const std::string& dir, std::vector<std::string> args,
                                const std::vector<std::string>& env) {
  args.insert(args.begin(), {"git", "-C", dir});
  std::vector<std::string> all = {"LC_ALL=C", "GIT_TERMINAL_PROMPT=0"};
  all.insert(all.end(), env.begin(), env.end());
  auto wait = std::chrono::milliseconds(20);
  for (int tries = 1;; ++tries) {
    TX_ASSIGN_OR_RETURN(exec::CommandResult r, exec::RunCommand(args, "", all));
    bool locked = !r.ok() && r.err.find(".lock': File exists") != std::string::npos;
    if (!locked || tries == 10) return r;
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(500));
  }
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

Error Failed(const std::string& what, const exec::CommandResult& r) {
  return Error::Unavailable(what + ": " + r.FirstLine());
}

Result<std::string> TopLevel(const std::string& repo) {
  if (repo.empty()) return Error::InvalidArgument("no repository given");
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    return Error::InvalidArgument("repo '" + repo + "' is not a directory");
  }
  TX_ASSIGN_OR_RETURN(exec::CommandResult r, Run(repo, {"rev-parse", "--show-toplevel"}));
  if (!r.ok()) {
    return Error::InvalidArgument("repo '" + repo + "' is not a git repository: " + r.FirstLine());
  }
  return Trimmed(r.out);
}

Result<bool> BranchExists(const std::string& top, const std::string& branch) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult r,
                      Run(top, {"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}));
  return r.ok();
}

Result<exec::UniqueFd> Lock(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);  // failing that, open says why
  exec::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Error::Unavailable("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Error::Unavailable("cannot lock " + path + ": " + std::strerror(errno));
    }
  }
  return fd;
}

Result<std::optional<exec::UniqueFd>> TryLock(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  exec::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Error::Unavailable("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<exec::UniqueFd>();
    if (errno != EINTR) {
      return Error::Unavailable("cannot lock " + path + ": " + std::strerror(errno));
    }
  }
  return std::optional<exec::UniqueFd>(std::move(fd));
}

}  // namespace tx::worker::git
