#include "git/review.h"

#include <spdlog/spdlog.h>

#include "git/merge.h"
#include "git/worktree.h"

namespace tx::git {
namespace {

Status RequireRepo(const Task& task) {
  if (task.repo.empty()) {
    return Error::InvalidArgument("task " + task.id + " names no repository (tx task add --repo)");
  }
  return Ok();
}

std::string BaseOf(const Task& task, const Settings& git) {
  return task.base_branch.empty() ? git.base : task.base_branch;
}

}  // namespace

Result<nlohmann::json> DescribeBranch(const Task& task, const Settings& git, bool with_diff) {
  TX_RETURN_IF_ERROR(RequireRepo(task));
  TX_ASSIGN_OR_RETURN(BranchSummary s, SummarizeBranch(task.repo, task.id, BaseOf(task, git)));
  nlohmann::json commits = nlohmann::json::array();
  for (const auto& c : s.commits) commits.push_back({{"sha", c.sha}, {"subject", c.subject}});
  nlohmann::json out = {{"task_id", task.id},
                        {"branch", s.branch},
                        {"base", s.base},
                        {"head", s.head},
                        {"commits", commits},
                        {"files_changed", s.files_changed},
                        {"insertions", s.insertions},
                        {"deletions", s.deletions}};
  if (with_diff) {
    TX_ASSIGN_OR_RETURN(std::string diff, BranchDiff(task.repo, task.id, s.base));
    out["diff"] = std::move(diff);
  }
  return out;
}

std::optional<nlohmann::json> ReviewBranch(const Task& task, const Settings& git) {
  if (task.repo.empty()) return std::nullopt;
  Result<nlohmann::json> j = DescribeBranch(task, git, /*with_diff=*/false);
  if (!j.ok()) {
    spdlog::warn("{}: its branch's summary is not recorded: {}", task.id, j.error().message());
    return std::nullopt;
  }
  j->erase("task_id");
  return std::move(*j);
}

namespace {

class ServiceMergeRecord : public MergeRecord {
 public:
  explicit ServiceMergeRecord(service::TaskService& tasks) : tasks_(tasks) {}
  Result<Task> Merged(std::string_view id, const nlohmann::json& merge) override {
    return tasks_.Merged(id, merge);
  }
  Result<Task> MergeRefused(std::string_view id, const std::string& why) override {
    return tasks_.MergeRefused(id, why);
  }

 private:
  service::TaskService& tasks_;
};

}  // namespace

Result<TaskMerge> MergeApprovedTask(service::TaskService& tasks, std::string_view id,
                                    const Settings& git, const std::string& note,
                                    MergeOptions options) {
  TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(id));
  ServiceMergeRecord record(tasks);
  return MergeTask(d.task, record, git, note, options);
}

Result<TaskMerge> MergeTask(const Task& task, MergeRecord& tasks, const Settings& git,
                            const std::string& note, MergeOptions options) {
  TX_RETURN_IF_ERROR(RequireRepo(task));
  if (!options.auto_merge) {
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, TaskEvent::kMerge, TaskStatus::kDone));
  } else if (task.status != TaskStatus::kReview || !AsksForAutoMerge(task)) {
    return Error::Conflict("cannot auto-merge task " + task.id + ": it is " +
                           std::string(ToString(task.status)) +
                           (AsksForAutoMerge(task) ? "" : ", and does not ask for auto-merge"));
  }
  MergeSettings settings{git.rebase, git.check, git.spare_worktrees};
  settings.cancel_fd = options.cancel_fd;
  TX_ASSIGN_OR_RETURN(MergeResult r, MergeBranch(task.repo, task.id, BaseOf(task, git), settings));
  TaskMerge out;
  if (r.kind == MergeResult::Kind::kMerged) {
    Result<Task> merged = tasks.Merged(
        task.id,
        {{"base", r.base}, {"head", r.head}, {"branch", TaskBranch(task.id)}, {"note", note}});
    if (!merged.ok()) {
      // The base has it now; only the record failed (the task cancelled meanwhile, the store out
      // of reach): say so, rather than that nothing happened.
      return Error(merged.error().code(),
                   "task " + task.id + "'s branch was merged into " + r.base + " (now at " +
                       r.head.substr(0, 12) +
                       "), but recording it failed: " + merged.error().message());
    }
    out.task = std::move(*merged);
    out.merged = true;
    return out;
  }
  TX_ASSIGN_OR_RETURN(out.task, tasks.MergeRefused(task.id, r.detail));
  out.why = r.detail;
  return out;
}

}  // namespace tx::git
