#include "git/git.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

namespace tx::git {

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

Result<bool> CommitExists(const std::string& top, const std::string& rev) {
  // "--end-of-options" keeps a revision that starts with "-" from being read as an option.
  TX_ASSIGN_OR_RETURN(exec::CommandResult r, Run(top, {"rev-parse", "--verify", "--quiet",
                                                       "--end-of-options", rev + "^{commit}"}));
  return r.ok();
}

Result<bool> IsAncestor(const std::string& top, const std::string& commit, const std::string& rev) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult r,
                      Run(top, {"merge-base", "--is-ancestor", "--end-of-options", commit, rev}));
  return r.ok();
}

Result<bool> BranchExists(const std::string& top, const std::string& branch) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult r,
                      Run(top, {"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}));
  return r.ok();
}

}  // namespace tx::git
