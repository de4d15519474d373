#pragma once
// A task's branch under review, as `tx task diff|merge` and the HTTP API (GET
// /api/tasks/ID/diff, POST /api/tasks/ID/merge) show and merge it: merge.h's git work, with the
// store's record of its outcome.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/task.h"
#include "service/task_service.h"
#include "worker/config.h"

namespace tx::worker {

// The [git] settings for `repo` from the config file at `config_path` (a missing file: the
// defaults).
Result<GitSettings> LoadGitSettings(const std::string& config_path, const std::string& repo);

// The task's branch against its base: {task_id, branch, base, head, commits [{sha, subject}],
// files_changed, insertions, deletions}, and `diff` (git diff base...branch) with `with_diff`.
// invalid_argument: the task names no repository; not_found: it has no branch (yet).
Result<nlohmann::json> DescribeBranch(const Task& task, const GitSettings& git, bool with_diff);

struct TaskMerge {
  Task task;  // as it now stands: done, or back in ready
  bool merged = false;
  std::string why;  // not merged: the conflict, or the failing check and its output
};

// Merges the branch of the approved task `id` (MergeBranch) and records it: Merged, or
// MergeRefused with the reason for the agent's next attempt. conflict: the task is not approved
// (refused before any git work); invalid_argument: it names no repository; an error of the merge
// itself (the repository, the base's checkout) leaves it approved.
Result<TaskMerge> MergeApprovedTask(service::TaskService& tasks, std::string_view id,
                                    const GitSettings& git, const std::string& note);

}  // namespace tx::worker
