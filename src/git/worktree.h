#pragma once
// Git isolation: a worktree and a branch of its own for each task that names a repository
// (`tx task add --repo PATH [--base BRANCH]`), so that agents running in parallel on one
// repository never see each other's edits (docs/git.md).
//
//   <repo>/.tx/worktrees/<task id>   the worktree, on branch tx/<task id>
//
// The first attempt makes the branch from the base branch's current tip; a retry reuses the
// branch, and the worktree as the last attempt left it when it is still there (uncommitted edits
// included), so no work is thrown away. `.tx/` is added to the repository's info/exclude, so the
// worktrees never show in the main checkout's `git status`. Every git command runs as a child
// process (exec/command.h); nothing here holds a git lock beyond one command.
//
// Spares: checking out a large repository writes every file, which on a slow disk takes seconds
// (10,000 files: ~10 s on this project's test machine, where each file created costs ~1 ms). So a
// finished task's worktree may be kept as a spare, `<repo>/.tx/worktrees/.spare-<task id>`:
// detached, reset, and cleaned of every untracked and ignored file. A new task then takes a spare
// (renamed into place by `git worktree move`, which only one taker can win) and checks its
// branch out there, which writes only the files that differ.

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::git {

struct Worktree {
  std::string repo;          // the repository's top-level directory
  std::string path;          // <repo>/.tx/worktrees/<task id>
  std::string branch;        // tx/<task id>
  std::string base;          // the branch it was made from
  std::string git_dir;       // the worktree's own git directory (<repo>/.git/worktrees/<task id>)
  bool created = false;      // false: an earlier attempt's worktree, reused as it was
  bool needs_setup = false;  // the setup commands have not yet all succeeded in it
};

// tx/<task id>
std::string TaskBranch(const std::string& task_id);

// The worktree of `task_id` in `repo`, made or reused. `base` empty: the branch the repository
// has checked out. invalid_argument: `repo` is not a git repository, `base` names no branch (or
// the repository's HEAD is detached and no base was given); unavailable: git itself failed (the
// message quotes it).
Result<Worktree> PrepareWorktree(const std::string& repo, const std::string& base,
                                 const std::string& task_id);

// The base of the task's branch: the branch it was made from (recorded in <repo>/.tx/bases/),
// else `base`, else the branch the repository has checked out.
Result<std::string> TaskBase(const std::string& repo, const std::string& task_id,
                             const std::string& base);

// Forgets the base recorded for the task's branch (once the branch is merged and deleted).
void ForgetBase(const std::string& repo, const std::string& task_id);

// The lock on a task's worktree (<repo>/.tx/locks/<task id>), which a worker holds from making it
// to removing it: a worker that runs the task's next attempt waits for the last one's clean-up,
// and a cancel by hand leaves a worktree in use to its worker. Waits for it.
Result<exec::UniqueFd> LockTaskWorktree(const std::string& repo, const std::string& task_id);
// The same without waiting: nullopt when another holds it.
Result<std::optional<exec::UniqueFd>> TryLockTaskWorktree(const std::string& repo,
                                                          const std::string& task_id);

// RemoveWorktree (no spare kept) unless a worker holds the task's worktree (LockTaskWorktree),
// which then removes it itself; nothing when the task names no repository.
Status RemoveIdleWorktree(const std::string& repo, const std::string& task_id);

// The spares waiting in `repo`.
int CountSpares(const std::string& repo);

// Writes `text` (the task's instructions) to CLAUDE.md and AGENTS.md in the worktree, where
// agents look for them, without letting them into the agent's commits: a file the repository
// tracks keeps its content with `text` appended and is marked skip-worktree in this worktree's
// index; a file it does not track is ignored through the exclude file that AgentGitEnv names.
Status WriteInstructions(const Worktree& wt, const std::string& text);

// The environment an agent in `wt` runs with, on top of `base_env` ("NAME=value" each): TX_REPO,
// TX_WORKTREE, TX_BRANCH, TX_BASE_BRANCH, and GIT_CONFIG_COUNT/KEY/VALUE setting
// core.excludesFile to a file in the worktree's git directory that holds the user's own global
// excludes plus the instruction files.
std::vector<std::string> AgentGitEnv(const Worktree& wt, const std::vector<std::string>& base_env);

// The argv that runs `setup` (shell commands, in order, each through /bin/sh -c, in the
// worktree) before `agent_argv`, stopping at the first that fails (its exit status is the
// attempt's), and marks the worktree set up once all have succeeded. Each command is echoed to
// the attempt's log first.
std::vector<std::string> WithSetup(const Worktree& wt, const std::vector<std::string>& setup,
                                   const std::vector<std::string>& agent_argv);

// Removes the worktree of `task_id` in `repo` (uncommitted edits included) and prunes git's
// record of it; the branch stays, checked out nowhere. With `keep_spares` > 0 and fewer spares
// than that in the repository, the worktree becomes a spare instead of being deleted. Nothing to
// remove is not an error.
Status RemoveWorktree(const std::string& repo, const std::string& task_id, int keep_spares = 0);

}  // namespace tx::git
