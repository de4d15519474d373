// tx doctor: the checks that look at this machine (docs/operations.md), each a small function
// returning its findings; the report and its judgements are in doctor.h.

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "agent/profile.h"
#include "cli/commands.h"
#include "cli/doctor.h"
#include "core/orchestrator.h"
#include "exec/cgroup.h"
#include "exec/command.h"
#include "exec/process_info.h"
#include "exec/program.h"
#include "git/git.h"
#include "orchestrator/config.h"
#include "orchestrator/process_liveness.h"
#include "store/location.h"
#include "worker/config.h"
#include "worker/flags.h"
#include "worker/sandbox.h"
#include "worker/spawn_plan.h"

namespace tx::cli {

namespace fs = std::filesystem;

namespace {

// How long a program gets to print its version.
constexpr long long kVersionTimeoutMs = 10'000;
// The newest tasks whose repositories are looked at for leftover worktrees.
constexpr int kTasksForRepos = 10'000;

// The first non-empty line a program printed for --version (stdout first), or why there is none.
std::string VersionOf(const std::string& program) {
  Result<exec::CommandResult> ran =
      exec::RunCommand({program, "--version"}, "", {}, 1 << 14, kVersionTimeoutMs);
  if (!ran.ok()) return "--version: " + ran.error().message();
  if (ran->timed_out) return "--version did not answer within 10 s";
  std::string line;
  for (const std::string* text : {&ran->out, &ran->err}) {
    std::size_t start = 0;
    while (line.empty() && start < text->size()) {
      std::size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      line = text->substr(start, end - start);
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      start = end + 1;
    }
    if (!line.empty()) break;
  }
  if (!ran->ok()) {
    return "--version: exit " + std::to_string(ran->exit_code) + (line.empty() ? "" : ": " + line);
  }
  if (line.size() > 100) line = line.substr(0, 100) + "…";
  return line.empty() ? "--version printed nothing" : line;
}

// The store opens (at the current schema: opening applies pending migrations, as every command
// does, and refuses a newer schema). Sets `store` when it opened.
Finding CheckStore(Context& ctx, store::Store*& store) {
  store = nullptr;
  if (std::optional<RemoteFleet> remote = ctx.Remote()) {
    return {"store", Level::kOk,
            "none here: this shell reaches the fleet at " + remote->url + " ($TX_SERVER)", ""};
  }
  std::string where = store::Describe(ctx.DbPath());
  Result<store::Store*> opened = ctx.Store();
  if (!opened.ok()) {
    const std::string& why = opened.error().message();
    std::string fix = "check the store's path and its permissions (--db PATH or TX_DB)";
    if (why.find("upgrade tx") != std::string::npos) {
      fix = "run a tx at least as new as the one that last wrote the store";
    } else if (why.find("tx init") != std::string::npos) {
      fix = "tx init here, or point --db or TX_DB at the store";
    } else if (store::IsPostgresUrl(ctx.DbPath())) {
      fix = "check the URL, that the server runs and answers here, and the credentials";
    }
    return {"store", Level::kFail, where + " does not open: " + why, fix};
  }
  store = *opened;
  return {"store", Level::kOk,
          (*opened)->Describe() + " opens, schema " + std::to_string(store::SchemaVersion()) +
              " (current)",
          ""};
}

// config.toml beside the store: the worker's sections and the orchestrator's.
Finding CheckConfig(Context& ctx, std::optional<worker::WorkerConfig>& config) {
  Result<worker::WorkerConfig> built = worker::BuildWorkerConfig(ctx.DbPath(), SelfExe(), {});
  if (!built.ok()) {
    return {"config", Level::kFail, built.error().message(),
            "correct " + ctx.ConfigPath() + " (docs: README, Configuration and defaults)"};
  }
  config = std::move(built).value();
  orchestrator::OrchestratorConfig oc;
  if (Status s = orchestrator::ApplyOrchestratorFile(config->config_file, oc); !s.ok()) {
    return {"config", Level::kFail, s.error().message(),
            "correct the [orchestrator] section of " + config->config_file};
  }
  std::error_code ec;
  if (!fs::exists(config->config_file, ec)) {
    return {"config", Level::kOk, "no " + config->config_file + ": the defaults apply", ""};
  }
  return {"config", Level::kOk, config->config_file + " reads without an error", ""};
}

// .tx/token (made by tx init) and .tx/tokens (optional): their owner's alone.
std::vector<Finding> CheckTokens(const std::string& dir) {
  std::vector<Finding> out;
  for (const char* name : {"token", "tokens"}) {
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) {
        out.push_back({"token", Level::kWarn, "cannot look at " + path + ": " + std::strerror(err),
                       "check the permissions of " + dir});
      } else if (std::string(name) == "token") {
        out.push_back(
            {"token", Level::kWarn,
             "no API token at " + path +
                 ": an HTTP API served from here answers reads only, and on loopback only",
             "tx init (it keeps the store and writes the token)"});
      }
      continue;
    }
    out.push_back(TokenFileFinding(path, st.st_mode));
  }
  return out;
}

// Each profile's program on PATH, with its version. Missing: a warning for the workers' default
// profile (command tasks still run) and for a profile the config defines or changes; for a
// built-in profile nobody configured, a note (its tasks are left to workers elsewhere).
std::vector<Finding> CheckAgents(const worker::WorkerConfig& config) {
  std::vector<Finding> out;
  std::vector<std::string> env = worker::CurrentEnvironment();
  std::map<std::string, agent::AgentProfile> built_in = agent::BuiltInProfiles();
  // The default may be an argv template rather than a profile's name.
  std::map<std::string, agent::AgentProfile> profiles = config.profiles;
  if (!worker::IsProfileName(config.agent)) {
    if (Result<agent::AgentProfile> p = worker::ResolveAgent(config, config.agent); p.ok()) {
      profiles["(default)"] = *p;
    }
  }
  for (const auto& [name, profile] : profiles) {
    std::string check = "agent:" + name;
    if (profile.argv.empty()) continue;
    const std::string& program = profile.argv[0];
    const bool is_default = name == config.agent || name == "(default)";
    const std::string role = is_default ? " (the workers' default)" : "";
    if (!agent::ProgramCheckableAhead(profile)) {
      out.push_back({check, Level::kOk,
                     "'" + program + "'" + role +
                         " is found per task (a template, a path in its workdir or an account's "
                         "PATH): not looked for here",
                     ""});
      continue;
    }
    Result<std::string> found = exec::FindProgram(program, env, config.workdir);
    if (found.ok()) {
      // A generic program is not asked: it may take --version for a prompt and set to work.
      std::string version = profile.family == agent::Family::kGeneric
                                ? "version not asked of a generic program"
                                : VersionOf(*found);
      out.push_back({check, Level::kOk, *found + role + ": " + version, ""});
      continue;
    }
    auto stock = built_in.find(name);
    const bool untouched = stock != built_in.end() && stock->second == profile;
    // not_found: nowhere on PATH; else found but not executable (the message says so).
    const bool absent = found.error().code() == ErrorCode::kNotFound;
    std::string detail =
        "'" + program + "'" + role +
        (absent ? (program.find('/') == std::string::npos ? " is not on PATH" : " does not exist")
                : " cannot be run (" + found.error().message() + ")");
    if (untouched && !is_default && absent) {
      out.push_back({check, Level::kOk,
                     "'" + program + "' is not installed here: tasks naming --agent " + name +
                         " are left to workers that have it",
                     ""});
      continue;
    }
    std::string fix = absent ? "install " + program + " or put its directory on PATH"
                             : "make " + program + " executable (chmod +x), or install it again";
    if (name != "(default)") fix += ", or set [agents." + name + "] argv to where it is";
    if (is_default) {
      detail += ": tasks that name no agent wait for a worker that has it; command tasks still run";
      fix += "; or choose another default ([worker] agent, or --agent)";
    }
    out.push_back({check, Level::kWarn, detail, fix});
  }
  return out;
}

bool GitConfigured(const worker::WorkerConfig& config) {
  if (!config.git_repo.empty() || !config.git_repos.empty()) return true;
  for (const auto& [queue, q] : config.git_queues) {
    if (!q.repo.empty()) return true;
  }
  return false;
}

Finding CheckGit(const worker::WorkerConfig* config) {
  Result<std::string> git = exec::FindProgram("git", {});
  if (!git.ok()) {
    return GitFinding(std::nullopt, git.error().message(), config && GitConfigured(*config));
  }
  return GitFinding(VersionOf(*git), "", config && GitConfigured(*config));
}

Finding CheckCgroup() {
  exec::CgroupLayout layout = exec::CurrentCgroupLayout();
  exec::LimitsProbe probe = exec::ProbeLimits(layout);
  if (probe.memory && probe.cpu) {
    return {"cgroup", Level::kOk,
            probe.v2 ? "memory and CPU limits apply through cgroup v2 (" + layout.unified + ")"
                     : "memory and CPU limits apply through cgroup v1 (cgroup v2 offers them "
                       "no controllers here)",
            ""};
  }
  std::string falls_back;
  if (!probe.memory) falls_back += "a memory limit falls back to RLIMIT_AS (address space)";
  if (!probe.cpu) {
    falls_back += std::string(falls_back.empty() ? "" : ", ") + "a CPU % limit is not enforced";
  }
  return {"cgroup", Level::kWarn,
          "not every limit can use a cgroup from here: " + falls_back + " (" + probe.problem + ")",
          "run tx where cgroup v2 is mounted and delegates the memory and cpu controllers (a "
          "systemd unit with Delegate=yes); only memory and CPU % limits need it"};
}

// The sandbox of the workers and of each queue that asks for one: what a worker's start checks.
std::vector<Finding> CheckSandboxKinds(const worker::WorkerConfig& config) {
  std::map<worker::SandboxKind, std::string> kinds;  // kind → who asks for it
  if (config.sandbox.kind != worker::SandboxKind::kNone) kinds[config.sandbox.kind] = "[worker]";
  for (const auto& [queue, q] : config.git_queues) {
    // Its tasks run in the stricter of the workers' and its own (worker::SandboxFor).
    worker::SandboxKind kind = worker::Stricter(config.sandbox.kind, q.sandbox);
    if (kind == worker::SandboxKind::kNone || kinds.contains(kind)) continue;
    kinds[kind] = "queue " + queue;
  }
  if (kinds.empty()) {
    return {{"sandbox", Level::kOk,
             "none configured: agents run without one, as your user (docs/sandbox.md)", ""}};
  }
  std::vector<Finding> out;
  for (const auto& [kind, who] : kinds) {
    worker::SandboxSettings settings = config.sandbox;
    settings.kind = kind;
    const std::string name = worker::SandboxName(kind);
    Status checked = worker::CheckSandbox(settings);
    if (checked.ok()) {
      out.push_back(
          {"sandbox", Level::kOk,
           name + " (" + who + ") " +
               (worker::IsContainer(kind) ? "runs a container here" : "makes a sandbox here"),
           ""});
      continue;
    }
    const std::string& why = checked.error().message();
    std::string fix;
    if (kind == worker::SandboxKind::kBwrap) {
      fix = why.find("cannot be run here") != std::string::npos
                ? "install bubblewrap (apt-get install bubblewrap), or choose another sandbox"
                : "allow unprivileged user namespaces here (kernel.unprivileged_userns_clone=1, or "
                  "an AppArmor profile for bwrap), or choose another sandbox";
    } else if (checked.error().code() == ErrorCode::kInvalidArgument) {
      fix = "set [sandbox.images] default = \"IMAGE\" in " + config.config_file;
    } else if (why.find("cannot be run here") != std::string::npos) {
      fix = "install " + name + ", or choose another sandbox";
    } else {
      fix =
          "docs/sandbox.md: on hybrid cgroups, [sandbox] engine_args = [\"--runtime\", \"runc\", "
          "\"--cgroup-manager\", \"cgroupfs\"]";
    }
    out.push_back({"sandbox", Level::kFail,
                   why + (who == "[worker]" ? "" : " (asked for by " + who + ")"), fix});
  }
  return out;
}

Finding CheckDisk(const std::string& dir) {
  fs::path at = dir;
  std::error_code ec;
  while (!fs::exists(at, ec) && at.has_parent_path() && at != at.parent_path()) {
    at = at.parent_path();
  }
  struct statvfs vfs {};
  if (::statvfs(at.c_str(), &vfs) != 0) {
    const int err = errno;
    return {"disk", Level::kWarn,
            "cannot tell the free space under " + at.string() + ": " + std::strerror(err), ""};
  }
  return DiskFinding(at.string(), static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize);
}

Finding CheckClock(Context& ctx, store::Store* store) {
  if (!store::IsPostgresUrl(ctx.DbPath())) {
    return {"clock", Level::kOk, "n/a: a SQLite store keeps time by this machine's clock", ""};
  }
  if (store == nullptr) {
    return {"clock", Level::kWarn, "not compared: the PostgreSQL store did not open",
            "see the store's finding"};
  }
  RealClock local;
  return ClockSkewFinding(store->clock().NowMs() - local.NowMs());
}

// Worktrees under <repo>/.tx/worktrees of tasks that finished (or that this store does not know),
// in the repositories the config names and those of the newest tasks.
std::vector<Finding> CheckWorktrees(const worker::WorkerConfig* config, store::Store* store) {
  if (store == nullptr) return {};
  std::set<std::string> repos;
  if (config != nullptr) {
    if (!config->git_repo.empty()) repos.insert(config->git_repo);
    for (const auto& [repo, s] : config->git_repos) repos.insert(repo);
    for (const auto& [queue, q] : config->git_queues) {
      if (!q.repo.empty()) repos.insert(q.repo);
    }
  }
  store::TaskFilter newest;
  newest.newest_first = true;
  newest.limit = kTasksForRepos;
  Status listed = store->Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::vector<Task> tasks, txn.ListTasks(newest));
    for (const auto& t : tasks) {
      if (!t.repo.empty()) repos.insert(t.repo);
    }
    return Ok();
  });
  if (!listed.ok()) {
    return {{"worktrees", Level::kWarn, "cannot list the tasks: " + listed.error().message(), ""}};
  }
  std::set<std::string> tops;
  for (const auto& repo : repos) {
    Result<std::string> top = git::TopLevel(repo);
    tops.insert(top.ok() ? *top : repo);
  }
  std::vector<Finding> out;
  for (const auto& top : tops) {
    fs::path dir = fs::path(top) / ".tx" / "worktrees";
    std::error_code ec;
    std::vector<std::string> leftovers;
    std::string first;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string id = entry.path().filename().string();
      if (id.starts_with(".spare-") || !entry.is_directory(ec)) continue;
      std::optional<Task> task;
      Status read = store->Read([&](store::Txn& txn) -> Status {
        TX_ASSIGN_OR_RETURN(task, txn.GetTask(id));
        return Ok();
      });
      if (!read.ok()) continue;
      if (task && !IsTerminal(task->status)) continue;
      leftovers.push_back(id + " (" +
                          (task ? std::string(ToString(task->status)) : "not in this store") + ")");
      if (first.empty()) first = entry.path().string();
    }
    if (leftovers.empty()) continue;
    std::string list;
    for (std::size_t i = 0; i < leftovers.size() && i < 5; ++i) {
      list += (i ? ", " : "") + leftovers[i];
    }
    if (leftovers.size() > 5) list += ", and " + std::to_string(leftovers.size() - 5) + " more";
    out.push_back({"worktrees", Level::kWarn,
                   std::to_string(leftovers.size()) + " leftover worktree(s) in " + top +
                       " of tasks that no longer run: " + list,
                   "remove each with git -C " + top + " worktree remove --force PATH (e.g. " +
                       first + "); its branch tx/ID stays"});
  }
  if (out.empty()) {
    out.push_back({"worktrees", Level::kOk,
                   tops.empty() ? "no repository configured or named by a task"
                                : "no leftover worktree in " + std::to_string(tops.size()) +
                                      " repositor" + (tops.size() == 1 ? "y" : "ies"),
                   ""});
  }
  return out;
}

// The orchestrator's pid file: a file left by one that did not stop cleanly (kill -9, power
// loss) names a pid that no longer runs an orchestrator.
Finding CheckLocks(const std::string& dir, Millis now) {
  std::string path = dir + "/orchestrator.pid";
  std::ifstream in(path);
  if (!in) return {"locks", Level::kOk, "no orchestrator pid file (" + path + ")", ""};
  OrchestratorState o;
  o.status = "running";
  in >> o.pid >> o.hostname;
  if (o.pid <= 0) {
    return {"locks", Level::kWarn, path + " names no pid",
            "harmless: the next tx orchestrator start takes it over; or rm " + path};
  }
  std::string holder =
      "pid " + std::to_string(o.pid) + (o.hostname.empty() ? "" : " on " + o.hostname);
  if (!o.hostname.empty() && o.hostname != exec::Hostname()) {
    return {"locks", Level::kOk, path + " names " + holder + ": another host, not checked here",
            ""};
  }
  if (o.hostname.empty()) o.hostname = exec::Hostname();
  if (orchestrator::OrchestratorAlive(o, now)) {
    return {"locks", Level::kOk, path + " is held by the running orchestrator (" + holder + ")",
            ""};
  }
  return {"locks", Level::kWarn,
          path + " names " + holder + ", which runs no orchestrator: left by one that did not " +
              "stop cleanly",
          "harmless: the next tx orchestrator start takes it over; or rm " + path};
}

}  // namespace

Handler SetupDoctor(CLI::App& cmd) {
  (void)cmd;
  return [](Context& ctx) -> Status {
    std::vector<Finding> findings;
    auto add = [&](std::vector<Finding> more) {
      for (auto& f : more) findings.push_back(std::move(f));
    };
    store::Store* store = nullptr;
    findings.push_back(CheckStore(ctx, store));
    std::optional<worker::WorkerConfig> config;
    findings.push_back(CheckConfig(ctx, config));
    const std::string dir = store::LocalDir(ctx.DbPath());
    if (!ctx.Remote()) add(CheckTokens(dir));
    if (config) add(CheckAgents(*config));
    findings.push_back(CheckGit(config ? &*config : nullptr));
    findings.push_back(CheckCgroup());
    if (config) add(CheckSandboxKinds(*config));
    findings.push_back(CheckDisk(dir));
    findings.push_back(CheckClock(ctx, store));
    add(CheckWorktrees(config ? &*config : nullptr, store));
    findings.push_back(CheckLocks(dir, ctx.now()));
    if (ctx.json()) {
      ctx.PrintJson(DoctorJson(findings));
    } else {
      ctx.out() << FormatDoctorText(findings);
    }
    ctx.set_exit_code(DoctorExitCode(findings));
    return Ok();
  };
}

}  // namespace tx::cli
