#pragma once
// Running git for a worker's worktrees and merges (worktree.h, merge.h): each command a child
// process (exec/command.h), with LC_ALL=C so that its messages can be read.

#include <string>
#include <vector>

#include "core/error.h"
#include "exec/command.h"

namespace tx::git {

// Runs git with `args` in `dir`, with `env` added. Git's lock files (a ref, the config) make a
// command fail at once when another holds them — parallel workers making worktrees in one
// repository do — so such a failure is tried again a few times before it is returned.
Result<exec::CommandResult> Run(const std::string& dir, std::vector<std::string> args,
                                const std::vector<std::string>& env = {});

// Git's output without its trailing newline.
std::string Trimmed(std::string s);

// unavailable: "<what>: <git's first line>".
Error Failed(const std::string& what, const exec::CommandResult& r);

// The top level of the repository `repo` is in. invalid_argument: not a directory, or not in a
// git repository.
Result<std::string> TopLevel(const std::string& repo);

// Whether `rev` (a branch, a tag, a remote branch, a commit) names a commit in the repository at
// `top`.
Result<bool> CommitExists(const std::string& top, const std::string& rev);

// Whether refs/heads/<branch> exists in the repository at `top`.
Result<bool> BranchExists(const std::string& top, const std::string& branch);

// Whether the commit `commit` is `rev` or one of its ancestors, in the repository at `top`
// (false when either names no commit there).
Result<bool> IsAncestor(const std::string& top, const std::string& commit, const std::string& rev);

}  // namespace tx::git
