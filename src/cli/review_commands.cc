// tx task diff|merge: a task's branch against its base, and its merge (docs/git.md). Both run
// git where the task's repository is, on this machine.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "git/review.h"
#include "service/task_service.h"
#include "store/location.h"
#include "worker/config.h"

namespace tx::cli {

namespace {

struct Args {
  std::string id, note;
  bool stat = false;
};

// The task and the [git] settings for its repository from `.tx/config.toml` beside the store.
Result<std::pair<Task, git::Settings>> TaskAndSettings(Context& ctx, const std::string& id) {
  TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
  TX_ASSIGN_OR_RETURN(service::TaskDetail d,
                      service::TaskService(*store, ctx.clock(), ctx.options()).Show(id));
  TX_ASSIGN_OR_RETURN(git::Settings git, worker::LoadGitSettings(ctx.ConfigPath(), d.task.repo));
  return std::pair{d.task, git};
}

}  // namespace

Handler SetupTaskDiff(CLI::App& cmd) {
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  cmd.add_flag("--stat", a->stat,
               "The summary only: commits, files changed, insertions, deletions");
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(auto found, TaskAndSettings(ctx, a->id));
    TX_ASSIGN_OR_RETURN(nlohmann::json j, git::DescribeBranch(found.first, found.second, !a->stat));
    if (ctx.json()) {
      ctx.PrintJson(j);
      return Ok();
    }
    std::size_t commits = j["commits"].size();
    int files = j["files_changed"];
    ctx.out() << j["branch"].get<std::string>() << " against " << j["base"].get<std::string>()
              << ": " << commits << (commits == 1 ? " commit, " : " commits, ") << files
              << (files == 1 ? " file changed, +" : " files changed, +")
              << j["insertions"].get<int>() << " -" << j["deletions"].get<int>() << "\n";
    for (const auto& c : j["commits"]) {
      ctx.out() << "  " << c["sha"].get<std::string>().substr(0, 12) << " "
                << c["subject"].get<std::string>() << "\n";
    }
    if (j.contains("diff") && !j["diff"].get<std::string>().empty()) {
      ctx.out() << "\n" << j["diff"].get<std::string>();
    }
    return Ok();
  };
}

Handler SetupTaskMerge(CLI::App& cmd) {
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  NonEmpty(cmd.add_option("--note", a->note, "A comment (recorded in the event)")->type_name("T"));
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(auto found, TaskAndSettings(ctx, a->id));
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(git::TaskMerge m,
                        git::MergeApprovedTask(tasks, found.first.id, found.second, a->note));
    if (m.merged) return ShowTask(ctx, *store, m.task.id);
    return Error::Conflict("task " + m.task.id + " not merged, and sent back to the queue: " +
                           m.why.substr(0, m.why.find('\n')));
  };
}

}  // namespace tx::cli
