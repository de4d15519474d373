#pragma once
// Review and merge of a task's branch (docs/git.md): what the branch holds against its base, and
// the merge queue that lands an approved branch on the base — never half.
//
// MergeBranch, under a lock on the repository (<repo>/.tx/merge.lock, flock: merges run one at a
// time whoever starts them, in whatever process), in the task's worktree (worktree.h):
//   1. rebases the branch onto the base's current tip (or merges the base into it), unless the
//      branch already holds that tip;
//   2. runs the check command there, if one is configured;
//   3. fast-forwards the base to the result: in the checkout that has the base checked out (so
//      its files follow), else by a compare-and-swap of the ref;
//   4. removes the worktree and deletes the merged branch.
// A conflict undoes the rebase (or merge), a failing check leaves the base as it was, and either
// is returned for the task to be sent back with it. The base moving meanwhile (someone committed
// to it by hand) starts over, up to three times.

#include <string>
#include <vector>

#include "core/error.h"

namespace tx::git {

struct BranchSummary {
  struct Commit {
    std::string sha;
    std::string subject;
  };
  std::string branch;
  std::string base;
  std::string head;             // the branch's tip
  std::vector<Commit> commits;  // on the branch and not on the base, oldest first
  int files_changed = 0;        // base...branch: what the branch changed since it forked
  int insertions = 0;
  int deletions = 0;
};

// The branch of `task_id` in `repo` against its base (`base`, as TaskBase resolves it).
// not_found: the task has no branch in the repository.
Result<BranchSummary> SummarizeBranch(const std::string& repo, const std::string& task_id,
                                      const std::string& base);

// The diff of the branch since it forked from its base (git diff base...branch).
Result<std::string> BranchDiff(const std::string& repo, const std::string& task_id,
                               const std::string& base);

struct MergeSettings {
  bool rebase = true;                        // else merge the base into the branch
  std::string check;                         // a shell command run on the result; "" = none
  int keep_spares = 0;                       // RemoveWorktree's
  long long check_timeout_ms = 30 * 60'000;  // a check still running then has failed
  int cancel_fd = -1;  // readable: the check is stopped, nothing merged (RunCommand's cancel_fd)
};

struct MergeResult {
  enum class Kind { kMerged, kConflict, kCheckFailed };
  Kind kind = Kind::kMerged;
  std::string base;
  std::string head;  // merged: the base's new tip
  std::string
      detail;  // refused: what to tell the agent (the conflicting files, the check's output)
};

// See above. An error (the repository, the branch, the base's checkout) is not the task's doing:
// nothing was merged, and the task stays approved.
Result<MergeResult> MergeBranch(const std::string& repo, const std::string& task_id,
                                const std::string& base, const MergeSettings& settings);

}  // namespace tx::git
