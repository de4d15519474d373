#pragma once
// A task's branch under review, as `tx task diff|merge` and the HTTP API (GET
// /api/tasks/ID/diff, POST /api/tasks/ID/merge) show and merge it: merge.h's git work, with the
// store's record of its outcome.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/task.h"
#include "git/settings.h"
#include "service/task_service.h"

namespace tx::git {

// The task's branch against its base: {task_id, branch, base, head, commits [{sha, subject}],
// files_changed, insertions, deletions}, and `diff` (git diff base...branch) with `with_diff`.
// invalid_argument: the task names no repository; not_found: it has no branch (yet).
Result<nlohmann::json> DescribeBranch(const Task& task, const Settings& git, bool with_diff);

// What is stored on a task as it goes to review (metadata.branch): DescribeBranch's summary
// without the diff. nullopt, with a warning logged, when the task names no repository or its
// branch cannot be read: the review goes on without it (`tx task diff` reads the branch anew).
std::optional<nlohmann::json> ReviewBranch(const Task& task, const Settings& git);

struct TaskMerge {
  Task task;  // as it now stands: done, or back in ready
  bool merged = false;
  std::string why;  // not merged: the conflict, or the failing check and its output
};

struct MergeOptions {
  // Auto-merge (docs/git.md): the task must be in review and ask for it, and is approved by its
  // green check in the transaction that records the merge (TaskService::Merged).
  bool auto_merge = false;
  int cancel_fd = -1;  // readable: the check is stopped and nothing merged (MergeSettings)
};

// Where a merge's outcome is recorded, as TaskService::Merged and MergeRefused do: the services
// beside the store, or the server, for a worker over HTTP (Coordinator::AutoMerge).
class MergeRecord {
 public:
  virtual ~MergeRecord() = default;
  virtual Result<Task> Merged(std::string_view id, const nlohmann::json& merge) = 0;
  virtual Result<Task> MergeRefused(std::string_view id, const std::string& why) = 0;
};

// Merges the branch of `task`, as it now stands (MergeBranch), and records it in `record`:
// Merged, or MergeRefused with the reason for the agent's next attempt. conflict: the task is not
// approved (with auto_merge: not in review, or not asking for it), refused before any git work;
// invalid_argument: it names no repository; an error of the merge itself (the repository, the
// base's checkout, a stop) leaves it as it was.
Result<TaskMerge> MergeTask(const Task& task, MergeRecord& record, const Settings& git,
                            const std::string& note, MergeOptions options = {});

// MergeTask of the task `id` read from `tasks`, recorded there.
Result<TaskMerge> MergeApprovedTask(service::TaskService& tasks, std::string_view id,
                                    const Settings& git, const std::string& note,
                                    MergeOptions options = {});

}  // namespace tx::git
