// tx task add|list|show|update|done|fail|review|note|cancel|retry|approve|changes

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/print.h"
#include "cli/table.h"
#include "cli/task_batch.h"
#include "core/argv.h"
#include "core/duration.h"
#include "core/json.h"
#include "core/validation.h"
#include "git/review.h"
#include "git/worktree.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "store/location.h"
#include "worker/remote.h"

namespace tx::cli {

namespace {

// `unclaimable`: why no running worker could claim the waiting task (empty: one could).
Status PrintTask(Context& ctx, const service::TaskDetail& d, const std::string& unclaimable = "") {
  if (ctx.json()) {
    nlohmann::json j = ToJson(d.task, d.attempts, d.usage);
    if (!unclaimable.empty()) j["unclaimable"] = unclaimable;
    ctx.PrintJson(j);
  } else {
    PrintTaskDetail(ctx.out(), d.task, d.attempts, d.usage, ctx.now(), unclaimable);
  }
  return Ok();
}

// The same, read from the server of a remote fleet.
Status ShowRemoteTask(Context& ctx, worker::RemoteCoordinator& fleet, const std::string& id) {
  TX_ASSIGN_OR_RETURN(nlohmann::json j, fleet.Fetch("/api/tasks/" + id));
  service::TaskDetail d;
  TX_ASSIGN_OR_RETURN(d.task, TaskFromJson(j));
  for (const auto& a : j.value("attempts", nlohmann::json::array())) {
    TX_ASSIGN_OR_RETURN(Claim c, ClaimFromJson(a));
    d.attempts.push_back(std::move(c));
    if (auto u = a.find("usage"); u != a.end() && u->is_object()) {
      TX_ASSIGN_OR_RETURN(AttemptUsage row, UsageFromJson(*u));
      d.usage.push_back(std::move(row));
    }
  }
  return PrintTask(ctx, d, j.value("unclaimable", std::string()));
}

struct AddArgs {
  std::string title, description, instructions, deliverables, priority,
      queue = "default", owner, workdir, command, agent, timeout, max_attempts, repo, base,
      metadata, budget, sandbox, batch;
  std::vector<std::string> steps, requires_caps, after;
  bool review = false, auto_merge = false;
};

// The agent's task and claim token, when this tx runs inside an agent (TX_TASK_ID and
// TX_CLAIM_TOKEN both set): what `tx task add` adds a subtask of.
struct AgentClaim {
  std::string task_id;
  std::string token;
};
std::optional<AgentClaim> AgentClaimFromEnvironment() {
  const char* task = std::getenv("TX_TASK_ID");
  const char* token = std::getenv("TX_CLAIM_TOKEN");
  if (task == nullptr || *task == '\0' || token == nullptr || *token == '\0') return std::nullopt;
  return AgentClaim{task, token};
}

// How many subtasks an agent may add under its task: the store's [worker] max_subtasks (the
// config.toml beside it, else 10), or the worker's own setting the agent was given
// (TX_MAX_SUBTASKS) when that is lower, so that an agent raising the variable gains nothing.
Result<service::SubtaskLimits> SubtaskLimitsFor(const worker::WorkerConfig& store_config) {
  service::SubtaskLimits limits;
  limits.max_subtasks = store_config.max_subtasks;
  if (const char* env = std::getenv("TX_MAX_SUBTASKS"); env != nullptr && *env != '\0') {
    TX_ASSIGN_OR_RETURN(std::int64_t n, ParseInteger("TX_MAX_SUBTASKS", env));
    if (n < 0) return Error::InvalidArgument("invalid TX_MAX_SUBTASKS " + std::string(env));
    limits.max_subtasks = static_cast<int>(std::min<std::int64_t>(n, limits.max_subtasks));
  }
  return limits;
}

}  // namespace

// Re-reads a task with its attempts so every command prints the same full view.
Status ShowTask(Context& ctx, store::Store& store, const std::string& id) {
  service::TaskService tasks(store, ctx.clock(), ctx.options());
  TX_ASSIGN_OR_RETURN(service::TaskDetail d, tasks.Show(id));
  TX_ASSIGN_OR_RETURN(auto unclaimable, tasks.Unclaimable({d.task}));
  return PrintTask(ctx, d, unclaimable.contains(id) ? unclaimable.at(id) : "");
}

// tx task add --batch: every field comes from the lines, so any other flag is refused; an agent
// adds its subtasks one at a time, within its limits.
Status AddBatch(Context& ctx, const CLI::App& cmd, const std::string& source) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() > 0 && o->get_name() != "--batch" && o->get_name() != "--help") {
      return Error::InvalidArgument("--batch takes every field from its lines: " + o->get_name() +
                                    " cannot go with it");
    }
  }
  if (AgentClaimFromEnvironment()) {
    return Error::InvalidArgument("an agent adds its subtasks one at a time, not with --batch");
  }
  worker::WorkerConfig config;
  TX_RETURN_IF_ERROR(worker::ApplyConfigFile(ctx.ConfigPath(), config));
  std::ifstream file;
  if (source != "-") {
    file.open(source);
    if (!file) return PosixError("cannot read " + source, errno, ErrorCode::kNotFound);
  }
  TX_ASSIGN_OR_RETURN(std::unique_ptr<TaskBatch> batch,
                      TaskBatch::Read(source == "-" ? std::cin : file, config));
  TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
  batch->DecodeNowIfUnhelped();
  service::TaskService tasks(*store, ctx.clock(), ctx.options());
  TX_ASSIGN_OR_RETURN(
      std::size_t added,
      tasks.AddEach([&](std::size_t i, std::string& label) { return batch->At(i, label); },
                    batch->size()));
  nlohmann::json ids = nlohmann::json::array();
  std::string label;
  for (std::size_t i = 0; i < added; ++i) {
    TX_ASSIGN_OR_RETURN(const Task* t, batch->At(i, label));
    if (ctx.json()) {
      ids.push_back(t->id);
    } else {
      ctx.out() << t->id << "  " << ToString(t->status) << "  " << Printable(t->title) << '\n';
    }
  }
  if (ctx.json()) ctx.PrintJson({{"added", added}, {"ids", std::move(ids)}});
  return Ok();
}

Handler SetupTaskAdd(CLI::App& cmd) {
  auto a = std::make_shared<AddArgs>();
  cmd.add_option("title", a->title, "What the task is, in a line (required without --batch)")
      ->type_name("");
  cmd.add_option("--description", a->description, "Longer description")->type_name("T");
  cmd.add_option("--instructions", a->instructions, "Instructions for the agent")->type_name("T");
  cmd.add_option("--deliverables", a->deliverables, "What must exist when it is done")
      ->type_name("T");
  OnePerFlag(cmd.add_option("--step", a->steps, "A step (repeatable, in order)")->type_name("T"));
  NonEmpty(cmd.add_option("--priority", a->priority, "Integer, higher runs first (default 0)")
               ->type_name("N"));
  NonEmpty(cmd.add_option("--queue", a->queue, "Queue name (default: default)")->type_name("Q"));
  OnePerFlag(
      cmd.add_option("--requires", a->requires_caps, "Capability a worker must have (repeatable)")
          ->type_name("CAP"));
  OnePerFlag(cmd.add_option("--after", a->after, "Task that must be done first (repeatable)")
                 ->type_name("TASK"));
  NonEmpty(cmd.add_option("--owner", a->owner, "Pin to a worker name or slot")->type_name("W"));
  NonEmpty(
      cmd.add_option("--workdir", a->workdir, "Working directory for the run")->type_name("DIR"));
  NonEmpty(
      cmd.add_option("--command", a->command, "Command line of a plain job (run without a shell)")
          ->type_name("'ARGV'"));
  NonEmpty(cmd.add_option("--agent", a->agent,
                          "Agent profile (claude, codex, aider, generic, or from config.toml)")
               ->type_name("NAME"));
  NonEmpty(cmd.add_option("--budget-usd", a->budget,
                          "Stop and fail the task once its attempts have cost this much")
               ->type_name("X"));
  NonEmpty(cmd.add_option("--sandbox", a->sandbox,
                          "Run its agent in this sandbox at least: none, bwrap, podman or docker "
                          "(docs/sandbox.md)")
               ->type_name("KIND"));
  NonEmpty(
      cmd.add_option("--timeout", a->timeout, "Run timeout, e.g. 30m (default 30m, at most 2h)")
          ->type_name("DUR"));
  NonEmpty(cmd.add_option("--max-attempts", a->max_attempts, "Attempts before failing (default 3)")
               ->type_name("N"));
  cmd.add_flag("--review", a->review, "Success goes to review instead of done");
  cmd.add_flag("--auto-merge", a->auto_merge,
               "Merge the task's branch without an approval once it passes [git] check "
               "(implies --review)");
  NonEmpty(cmd.add_option("--repo", a->repo, "Git repository to work in")->type_name("PATH"));
  NonEmpty(cmd.add_option("--base", a->base, "Base branch (with --repo)")->type_name("BRANCH"));
  NonEmpty(cmd.add_option("--metadata", a->metadata, "JSON object stored with the task")
               ->type_name("JSON"));
  NonEmpty(cmd.add_option("--batch", a->batch,
                          "Add the tasks of FILE (- for stdin), one JSON object a line with the "
                          "fields of POST /api/tasks, in one transaction: all or none")
               ->type_name("FILE"));
  return [a, &cmd](Context& ctx) -> Status {
    if (!a->batch.empty()) return AddBatch(ctx, cmd, a->batch);
    if (a->title.empty()) {
      return Error::InvalidArgument("tx task add needs a title (or --batch FILE)");
    }
    Task t;
    t.title = a->title;
    t.description = a->description;
    t.instructions = a->instructions;
    t.deliverables = a->deliverables;
    t.steps = a->steps;
    if (!a->priority.empty()) {
      TX_ASSIGN_OR_RETURN(t.priority, ParseInteger("priority", a->priority));
    }
    t.queue = a->queue;
    t.requires_caps = SplitCommas(a->requires_caps);
    t.after = SplitCommas(a->after);
    t.owner = a->owner;
    t.workdir = a->workdir;
    if (!a->command.empty()) {
      TX_ASSIGN_OR_RETURN(t.command, SplitArgv(a->command));
    }
    t.agent = a->agent;
    t.timeout_ms = 0;
    if (!a->timeout.empty()) {
      TX_ASSIGN_OR_RETURN(t.timeout_ms, ParseDuration(a->timeout));
    }
    if (!a->timeout.empty() && t.timeout_ms == 0) {
      return Error::InvalidArgument("invalid timeout '" + a->timeout + "': must be more than 0s");
    }
    if (!a->max_attempts.empty()) {
      TX_ASSIGN_OR_RETURN(std::int64_t n, ParseInteger("max attempts", a->max_attempts));
      if (n < 1 || n > 100) {
        return Error::InvalidArgument("invalid max attempts " + a->max_attempts +
                                      ": must be between 1 and 100");
      }
      t.max_attempts = static_cast<int>(n);
    }
    t.review = a->review;
    // As given here: workers and servers elsewhere would read a relative path from their own.
    if (!a->repo.empty()) t.repo = std::filesystem::absolute(a->repo).lexically_normal().string();
    t.base_branch = a->base;
    if (!a->metadata.empty()) {
      TX_ASSIGN_OR_RETURN(t.metadata, ParseJsonObject("metadata", a->metadata));
    }
    if (!a->budget.empty()) {
      char* end = nullptr;
      double usd = std::strtod(a->budget.c_str(), &end);
      if (end == a->budget.c_str() || *end != '\0') {
        return Error::InvalidArgument("invalid budget '" + a->budget +
                                      "': a number of dollars such as 2.50");
      }
      t.metadata["budget_usd"] = usd;
    }
    if (!a->sandbox.empty()) t.metadata["sandbox"] = a->sandbox;  // checked by PrepareAgentTask
    // Isolation the config asks for on the task's behalf ([git] repo, [git.queues.NAME]), and
    // the agent profiles it knows.
    worker::WorkerConfig config;
    TX_RETURN_IF_ERROR(worker::ApplyConfigFile(ctx.ConfigPath(), config));
    TX_RETURN_IF_ERROR(worker::PrepareGitTask(config, a->auto_merge, t));
    TX_RETURN_IF_ERROR(worker::PrepareAgentTask(config, t));
    auto print = [&](const Task& added, const nlohmann::json& warnings) {
      if (ctx.json()) {
        nlohmann::json j = ToJson(added, {});
        if (!warnings.empty()) j["warnings"] = warnings;
        ctx.PrintJson(j);
      } else {
        ctx.out() << added.id << "  " << ToString(added.status) << "  " << Printable(added.title)
                  << '\n';
      }
    };
    // Run by an agent: a subtask of its own task, fenced by its token, within the limits.
    std::optional<AgentClaim> agent = AgentClaimFromEnvironment();
    std::int64_t token = 0;
    if (agent) {
      TX_ASSIGN_OR_RETURN(token, ParseInteger("TX_CLAIM_TOKEN", agent->token));
    }
    if (std::optional<RemoteFleet> remote = ctx.Remote(); remote && agent) {
      // The agent of a remote worker: through the server, whose limit holds too.
      std::optional<int> mine;
      if (const char* env = std::getenv("TX_MAX_SUBTASKS"); env != nullptr && *env != '\0') {
        TX_ASSIGN_OR_RETURN(std::int64_t n, ParseInteger("TX_MAX_SUBTASKS", env));
        mine = static_cast<int>(std::clamp<std::int64_t>(n, 0, 1 << 20));
      }
      TX_ASSIGN_OR_RETURN(auto fleet, worker::ConnectRemote(remote->url, remote->token));
      TX_ASSIGN_OR_RETURN(Task added, fleet->AddSubtask(agent->task_id, token, t, mine));
      print(added, nlohmann::json::array());
      return Ok();
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    service::TaskService::Added added;
    if (agent) {
      TX_ASSIGN_OR_RETURN(service::SubtaskLimits limits, SubtaskLimitsFor(config));
      TX_ASSIGN_OR_RETURN(added.task,
                          tasks.AddSubtask(agent->task_id, token, std::move(t), limits));
      Result<std::map<std::string, std::string>> why = tasks.Unclaimable({added.task});
      if (why.ok() && why->contains(added.task.id)) added.unclaimable = why->at(added.task.id);
    } else {
      TX_ASSIGN_OR_RETURN(added, tasks.AddAndCheck(std::move(t)));
    }
    // Added either way (a worker may start later), but said now rather than found out tomorrow.
    nlohmann::json warnings = nlohmann::json::array();
    if (added.unclaimable) {
      warnings.push_back("no worker can claim it now: " + *added.unclaimable);
      std::fprintf(stderr, "tx: warning: %s waits: %s\n", added.task.id.c_str(),
                   added.unclaimable->c_str());
    }
    print(added.task, warnings);
    return Ok();
  };
}

Handler SetupTaskList(CLI::App& cmd) {
  struct Args {
    std::string status, queue, owner, limit;
  };
  auto a = std::make_shared<Args>();
  NonEmpty(cmd.add_option("--status", a->status,
                          "blocked|ready|running|waiting|review|approved|done|failed|"
                          "cancelled (or todo, in-progress, completed, ...)")
               ->type_name("S"));
  NonEmpty(cmd.add_option("--queue", a->queue, "Only this queue")->type_name("Q"));
  NonEmpty(cmd.add_option("--owner", a->owner, "Only tasks pinned to this worker name or slot")
               ->type_name("W"));
  NonEmpty(cmd.add_option("--limit", a->limit, "At most this many")->type_name("N"));
  return [a](Context& ctx) -> Status {
    store::TaskFilter f;
    if (!a->status.empty()) {
      TX_ASSIGN_OR_RETURN(f.status, ParseTaskStatus(a->status));
    }
    if (!a->queue.empty()) f.queue = a->queue;
    if (!a->owner.empty()) f.owner = a->owner;
    if (!a->limit.empty()) {
      TX_ASSIGN_OR_RETURN(f.limit, ParseCount("--limit", a->limit));
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(std::vector<Task> list, tasks.List(f));
    TX_ASSIGN_OR_RETURN(auto unclaimable, tasks.Unclaimable(list));
    if (ctx.json()) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& t : list) {
        arr.push_back(ToJson(t, {}));
        if (auto it = unclaimable.find(t.id); it != unclaimable.end()) {
          arr.back()["unclaimable"] = it->second;
        }
      }
      ctx.PrintJson(arr);
    } else {
      PrintTaskTable(ctx.out(), list, unclaimable);
    }
    return Ok();
  };
}

Handler SetupTaskShow(CLI::App& cmd) {
  auto id = std::make_shared<std::string>();
  cmd.add_option("id", *id, "Task id")->type_name("")->required();
  return [id](Context& ctx) -> Status {
    if (std::optional<RemoteFleet> remote = ctx.Remote()) {
      TX_ASSIGN_OR_RETURN(auto fleet, worker::ConnectRemote(remote->url, remote->token));
      return ShowRemoteTask(ctx, *fleet, *id);
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    return ShowTask(ctx, *store, *id);
  };
}

Handler SetupTaskUpdate(CLI::App& cmd) {
  struct Args {
    std::string id, title, priority, metadata;
    std::vector<std::string> after;
    bool no_after = false;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  NonEmpty(cmd.add_option("--title", a->title, "New title")->type_name("T"));
  NonEmpty(cmd.add_option("--priority", a->priority, "New priority (integer)")->type_name("N"));
  OnePerFlag(cmd.add_option("--after", a->after, "Replace after[] with these tasks (repeatable)")
                 ->type_name("TASK"));
  cmd.add_flag("--no-after", a->no_after, "Clear after[]");
  NonEmpty(cmd.add_option("--metadata", a->metadata, "JSON object merged into the metadata")
               ->type_name("JSON"));
  return [a](Context& ctx) -> Status {
    service::TaskPatch p;
    if (!a->title.empty()) p.title = a->title;
    if (!a->priority.empty()) {
      TX_ASSIGN_OR_RETURN(p.priority, ParseInteger("priority", a->priority));
    }
    if (a->no_after && !a->after.empty()) {
      return Error::InvalidArgument("--after and --no-after cannot be used together");
    }
    if (a->no_after) p.after = std::vector<std::string>{};
    if (!a->after.empty()) p.after = SplitCommas(a->after);
    if (!a->metadata.empty()) {
      TX_ASSIGN_OR_RETURN(p.metadata_merge, ParseJsonObject("metadata", a->metadata));
    }
    if (!p.title && !p.priority && !p.after && !p.metadata_merge) {
      return Error::InvalidArgument(
          "nothing to update: pass --title, --priority, --after, "
          "--no-after or --metadata");
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_RETURN_IF_ERROR(tasks.Update(a->id, p));
    return ShowTask(ctx, *store, a->id);
  };
}

namespace {

struct OutcomeArgs {
  std::string id, token, result, error;
  bool force = false;
};

Handler SetupOutcome(CLI::App& cmd, service::Outcome outcome, const char* name) {
  auto a = std::make_shared<OutcomeArgs>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  NonEmpty(
      cmd.add_option("--token", a->token, "The claim's fencing token (default: $TX_CLAIM_TOKEN)")
          ->type_name("N"));
  cmd.add_option("--result", a->result, "Result text")->type_name("T");
  cmd.add_option("--error", a->error, "Error text")->type_name("T");
  cmd.add_flag("--force", a->force,
               "Operator override without a token: revokes the claim, recorded as forced");
  return [a, outcome, name](Context& ctx) -> Status {
    std::string text = outcome == service::Outcome::kFail
                           ? (a->error.empty() ? a->result : a->error)
                           : (a->result.empty() ? a->error : a->result);
    if (std::optional<RemoteFleet> remote = ctx.Remote()) {
      // An agent of a remote worker reports through the server, fenced by the same token.
      if (a->force) return Error::InvalidArgument("--force needs the store (pass --db)");
      TX_ASSIGN_OR_RETURN(std::int64_t token, ResolveToken(a->token, name));
      TX_ASSIGN_OR_RETURN(auto fleet, worker::ConnectRemote(remote->url, remote->token));
      TX_RETURN_IF_ERROR(fleet->Report(a->id, token, outcome, text, std::nullopt, nullptr));
      return ShowRemoteTask(ctx, *fleet, a->id);
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    if (a->force) {
      if (!a->token.empty())
        return Error::InvalidArgument("--force and --token exclude each other");
      service::TaskService tasks(*store, ctx.clock(), ctx.options());
      TX_RETURN_IF_ERROR(tasks.ForceOutcome(a->id, outcome, text));
    } else {
      TX_ASSIGN_OR_RETURN(std::int64_t token, ResolveToken(a->token, name));
      // An agent sending its task to review: its branch's summary goes with it (metadata.branch).
      std::optional<nlohmann::json> branch;
      if (outcome != service::Outcome::kFail) {
        Result<service::TaskDetail> d =
            service::TaskService(*store, ctx.clock(), ctx.options()).Show(a->id);
        if (d.ok() && (outcome == service::Outcome::kReview || d->task.review)) {
          Result<git::Settings> git = worker::LoadGitSettings(ctx.ConfigPath(), d->task.repo);
          if (git.ok()) branch = git::ReviewBranch(d->task, *git);
        }
      }
      service::ClaimService claims(*store, ctx.clock(), ctx.options());
      TX_RETURN_IF_ERROR(
          claims.Report(a->id, token, outcome, text, std::nullopt, branch ? &*branch : nullptr));
    }
    return ShowTask(ctx, *store, a->id);
  };
}

}  // namespace

Handler SetupTaskDone(CLI::App& cmd) {
  return SetupOutcome(cmd, service::Outcome::kDone, "tx task done");
}
Handler SetupTaskFail(CLI::App& cmd) {
  return SetupOutcome(cmd, service::Outcome::kFail, "tx task fail");
}
Handler SetupTaskReview(CLI::App& cmd) {
  return SetupOutcome(cmd, service::Outcome::kReview, "tx task review");
}

namespace {

// Appends the note to the log of the attempt that made it, in this machine's logs (O_APPEND, as
// the worker writes it). The worker makes the log at its agent's first byte, so a note may come
// first and make it. Best effort: the note is already in the store.
void AppendNoteToLog(const std::string& logs_dir, const std::string& task_id, int attempt,
                     const std::string& text) {
  std::string path = store::AttemptLogPath(logs_dir, task_id, attempt);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string line = "[tx] note: " + text;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  line += '\n';
  ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;
  ::close(fd);
}

}  // namespace

Handler SetupTaskNote(CLI::App& cmd) {
  struct Args {
    std::string text, task, token;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("text", a->text, "The note: one line of progress")->type_name("")->required();
  NonEmpty(cmd.add_option("--task", a->task, "The task (default: $TX_TASK_ID)")->type_name("ID"));
  NonEmpty(
      cmd.add_option("--token", a->token, "The claim's fencing token (default: $TX_CLAIM_TOKEN)")
          ->type_name("N"));
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(std::string id, ResolveAgentTask(a->task, "tx task note"));
    const char* env_token = std::getenv("TX_CLAIM_TOKEN");
    if (a->token.empty() && (env_token == nullptr || *env_token == '\0')) {
      return Error::InvalidArgument(
          "tx task note needs the claim's token: pass --token N or set TX_CLAIM_TOKEN");
    }
    TX_ASSIGN_OR_RETURN(std::int64_t token, ResolveToken(a->token, "tx task note"));
    if (std::optional<RemoteFleet> remote = ctx.Remote()) {
      // The agent of a remote worker: the note goes to the store and the event through the
      // server; the attempt's log is the worker's, on its machine, and not written here.
      TX_ASSIGN_OR_RETURN(auto fleet, worker::ConnectRemote(remote->url, remote->token));
      TX_RETURN_IF_ERROR(fleet->Note(id, token, a->text));
      return ShowRemoteTask(ctx, *fleet, id);
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(service::NoteResult noted, tasks.Note(id, token, a->text));
    std::filesystem::path logs = std::filesystem::path(store::LocalDir(ctx.DbPath())) / "logs";
    AppendNoteToLog(logs.string(), id, noted.attempt, a->text);
    return ShowTask(ctx, *store, id);
  };
}

namespace {

// A command `tx task VERB ID [--note T]` that calls one TaskService method and shows the task.
// `after` (optional) runs on the changed task before it is shown.
Handler SetupNoteCommand(CLI::App& cmd, const char* note_help, bool note_required,
                         Result<Task> (service::TaskService::*change)(std::string_view,
                                                                      const std::string&),
                         void (*after)(const Task&) = nullptr) {
  struct Args {
    std::string id, note;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  CLI::Option* note = NonEmpty(cmd.add_option("--note", a->note, note_help)->type_name("T"));
  if (note_required) note->required();
  return [a, change, after](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(Task changed, (tasks.*change)(a->id, a->note));
    if (after != nullptr) after(changed);
    return ShowTask(ctx, *store, a->id);
  };
}

}  // namespace

Handler SetupTaskCancel(CLI::App& cmd) {
  // A cancelled task's worktree goes at once, unless a worker still holds it: that one kills its
  // agent and removes it. The branch stays.
  return SetupNoteCommand(cmd, "Why", false, &service::TaskService::Cancel, [](const Task& t) {
    if (Status s = git::RemoveIdleWorktree(t.repo, t.id); !s.ok()) {
      std::fprintf(stderr, "tx: warning: %s\n", s.error().message().c_str());
    }
  });
}

namespace {

// tx task retry|changes ID [--note T] [--fresh]: the next attempt resumes the agent's session
// with the note (docs/agents.md), unless --fresh.
Handler SetupResumable(CLI::App& cmd, const char* note_help, bool note_required,
                       Result<Task> (service::TaskService::*change)(std::string_view,
                                                                    const std::string&, bool)) {
  struct Args {
    std::string id, note;
    bool fresh = false;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  CLI::Option* note = NonEmpty(cmd.add_option("--note", a->note, note_help)->type_name("T"));
  if (note_required) note->required();
  cmd.add_flag("--fresh", a->fresh,
               "Start the agent's conversation over instead of resuming its last session");
  return [a, change](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_RETURN_IF_ERROR((tasks.*change)(a->id, a->note, a->fresh));
    return ShowTask(ctx, *store, a->id);
  };
}

}  // namespace

Handler SetupTaskRetry(CLI::App& cmd) {
  return SetupResumable(cmd, "Why, and what to do differently: the agent's next prompt", false,
                        &service::TaskService::Retry);
}

Handler SetupTaskApprove(CLI::App& cmd) {
  return SetupNoteCommand(cmd, "A comment (recorded in the event)", false,
                          &service::TaskService::Approve);
}

Handler SetupTaskChanges(CLI::App& cmd) {
  return SetupResumable(cmd, "What to change: the agent's next prompt", true,
                        &service::TaskService::RequestChanges);
}

}  // namespace tx::cli
