#pragma once
// An exclusive flock on a file, held as long as the descriptor is open: the orchestrator's pid
// file, and the locks that serialize git work on a repository (git/worktree.h, merge.h).

#include <optional>
#include <string>

#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::exec {

// Opens `path` (created 0644 when missing, with its parent directories) and waits for the lock.
// kUnavailable, naming the file, when it cannot be opened or locked.
Result<UniqueFd> LockFile(const std::string& path);

// The same without waiting: nullopt when another open file description holds it.
Result<std::optional<UniqueFd>> TryLockFile(const std::string& path);

}  // namespace tx::exec
