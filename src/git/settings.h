#pragma once
// The [git] settings of config.toml as the git work reads them (docs/git.md): what a worktree is
// made from and set up with (worktree.h), and what a merge must pass (merge.h). The worker's
// config reads them ([git], [git.repos."PATH"] laid over it: worker/config.h GitSettingsFor).

#include <string>
#include <vector>

namespace tx::git {

struct Settings {
  std::string base;                // a task's base branch when it names none; "" = the repo's HEAD
  std::vector<std::string> setup;  // shell commands run in a new worktree before the agent
  int spare_worktrees = 1;         // finished worktrees kept for new tasks (worktree.h: spares)
  std::string check;               // a shell command a merge must pass (merge.h); "" = none
  bool rebase = true;              // merge = "rebase" (default) or "merge"
  bool operator==(const Settings&) const = default;
};

}  // namespace tx::git
