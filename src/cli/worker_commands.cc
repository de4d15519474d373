// tx worker start (and --print-env), tx worker stop|pause|resume|list|status, tx task log

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/print.h"
#include "core/duration.h"
#include "core/json.h"
#include "log/process_log.h"
#include "service/agent_service.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"
#include "worker/config.h"
#include "worker/flags.h"
#include "worker/runtime.h"
#include "worker/spawn_plan.h"

namespace tx::cli {

namespace fs = std::filesystem;

namespace {

// The directory holding the store (.tx): its config.toml and logs/ live there.
fs::path StoreDir(const Context& ctx) { return store::LocalDir(ctx.DbPath()); }

// tx worker start --print-env TASK: the environment the task's next attempt's agent would get
// from a worker started with `config` here and now (PlanSpawn over this process's environment),
// under its profile's first account, with claim token 0, worker id "(print-env)" and the
// worker's socket as "/tmp/tx-agent-XXXXXX/tx.sock" (its name is made at the worker's first
// attempt) and the attempt's key as "(per attempt)". Without the
// variables of a worktree (TX_REPO, TX_WORKTREE, TX_BRANCH, TX_BASE_BRANCH and git's exclude
// file), which the worker adds once it has made one. Starts nothing and writes nothing.
// not_found: no such task.
Status PrintAgentEnvironment(Context& ctx, const worker::WorkerConfig& config,
                             const std::string& id) {
  TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
  service::TaskService tasks(*store, ctx.clock(), ctx.options());
  TX_ASSIGN_OR_RETURN(service::TaskDetail detail, tasks.Show(id));
  Task task = detail.task;
  ++task.attempt;  // as a claim counts it
  Claim claim;
  claim.token = 0;
  claim.task_id = task.id;
  claim.worker_id = "(print-env)";
  claim.attempt = static_cast<int>(detail.attempts.size()) + 1;
  worker::RunChoice choice;
  TX_ASSIGN_OR_RETURN(worker::AttemptPlan profile, worker::ProfileFor(config, task));
  if (!profile.is_command && !profile.profile.accounts.empty()) {
    choice.account = profile.profile.accounts.front().name;
  }
  TX_ASSIGN_OR_RETURN(worker::AttemptPlan plan,
                      worker::PlanSpawn(config, task, claim, worker::CurrentEnvironment(), nullptr,
                                        choice, {"/tmp/tx-agent-XXXXXX/tx.sock", "(per attempt)"}));
  std::map<std::string, std::string> env;
  for (const auto& kv : plan.spec.env) {
    std::size_t eq = kv.find('=');
    env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  if (ctx.json()) {
    ctx.PrintJson(nlohmann::json(env));
    return Ok();
  }
  for (const auto& [name, value] : env) ctx.out() << name << '=' << value << '\n';
  return Ok();
}

}  // namespace

Handler SetupWorkerStart(CLI::App& cmd) {
  auto a = std::make_shared<worker::WorkerFlags>();
  auto remote = std::make_shared<RemoteFleet>();
  auto print_env = std::make_shared<std::string>();
  struct LogFlags {
    std::string file, max_mb, format;
  };
  auto logs = std::make_shared<LogFlags>();
  NonEmpty(cmd.add_option("--server", remote->url,
                          "Reach the fleet over HTTP alone, at this tx server (no store here)")
               ->type_name("URL"));
  NonEmpty(cmd.add_option("--token", remote->token,
                          "The server's worker (or admin) token (default: $TX_API_TOKEN)")
               ->type_name("T"));
  NonEmpty(cmd.add_option("--name", a->name, "Worker name (default: the slot, else the id)")
               ->type_name("N"));
  NonEmpty(cmd.add_option("--slot", a->slot, "Pool slot; a new worker in a slot replaces the old")
               ->type_name("S"));
  NonEmpty(cmd.add_option("--capabilities", a->capabilities, "What this worker can do: a,b")
               ->type_name("LIST"));
  NonEmpty(cmd.add_option("--queues", a->queues, "Queues to claim from (default: default)")
               ->type_name("LIST"));
  NonEmpty(cmd.add_option("--agent", a->agent,
                          "Agent profile (claude, codex, aider, generic, or from config) or an "
                          "argv template such as 'my-agent --task {task_id} {prompt}'")
               ->type_name("PROFILE|'ARGV'"));
  NonEmpty(cmd.add_option("--config", a->config,
                          "Config file (default: config.toml beside the "
                          "store)")
               ->type_name("PATH"));
  NonEmpty(cmd.add_option("--allowed-commands", a->allowed,
                          "tx commands agents may run, e.g. task.show,task.done")
               ->type_name("LIST"));
  NonEmpty(
      cmd.add_option(
             "--sandbox", a->sandbox,
             "Run agents in a sandbox: none (default), bwrap, podman or docker (docs/sandbox.md)")
          ->type_name("KIND"));
  NonEmpty(cmd.add_option("--workdir", a->workdir,
                          "Where agents run when their task names no workdir (default: here)")
               ->type_name("DIR"));
  NonEmpty(cmd.add_option("--heartbeat-interval", a->heartbeat,
                          "Idle heartbeat interval (default 30s; half of it while running)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--lease", a->lease,
                          "Lease per claim, renewed while the agent runs "
                          "(default 30m)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--stall-timeout", a->stall,
                          "Stop an agent silent for this long (default off)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--task-timeout-cap", a->task_timeout_cap,
                          "Upper bound on any task's timeout (default 2h)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--shutdown-timeout", a->shutdown,
                          "On SIGTERM, how long to let the agent finish (default 5m)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--kill-grace", a->kill_grace,
                          "Between SIGTERM and SIGKILL when stopping an agent (default 10s)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--poll-interval", a->poll,
                          "Fallback poll when idle, with jitter (default 30s)")
               ->type_name("DUR"));
  NonEmpty(cmd.add_option("--memory-mb", a->memory_mb,
                          "Agent memory limit (cgroup, else "
                          "RLIMIT_AS)")
               ->type_name("MB"));
  NonEmpty(cmd.add_option("--cpu-percent", a->cpu_percent,
                          "Agent CPU limit (cgroup; 100 = one "
                          "core)")
               ->type_name("N"));
  NonEmpty(cmd.add_option("--open-files", a->open_files, "Agent RLIMIT_NOFILE")->type_name("N"));
  NonEmpty(cmd.add_option("--processes", a->processes, "Agent RLIMIT_NPROC")->type_name("N"));
  NonEmpty(cmd.add_option("--cpu-seconds", a->cpu_seconds, "Agent RLIMIT_CPU")->type_name("N"));
  NonEmpty(cmd.add_option("--log-file", logs->file,
                          "Append the worker's log (and its stdout and stderr) to this file; "
                          "reopened on SIGHUP, rotated past --log-max-mb")
               ->type_name("PATH"));
  NonEmpty(cmd.add_option("--log-max-mb", logs->max_mb,
                          "Rotate --log-file past this many MB, keeping 2 older files (default "
                          "64, decimals allowed; 0 = never)")
               ->type_name("MB"));
  NonEmpty(cmd.add_option("--log-format", logs->format,
                          "Log lines as text (default) or json (one object a line)")
               ->type_name("text|json"));
  NonEmpty(cmd.add_option("--print-env", *print_env,
                          "Start nothing: print the environment the task's next agent would get "
                          "from this worker (NAME=value lines, sorted)")
               ->type_name("TASK"));
  return [a, remote, print_env, logs](Context& ctx) -> Status {
    if (remote->url.empty() && !remote->token.empty()) {
      return Error::InvalidArgument("--token goes with --server");
    }
    if (!print_env->empty() && !remote->url.empty()) {
      return Error::InvalidArgument("--print-env reads the task from the store: not with --server");
    }
    log::ProcessLog::Options log_options;
    if (!logs->format.empty()) {
      TX_ASSIGN_OR_RETURN(log_options.format, log::ParseLogFormat(logs->format, "--log-format"));
    }
    if (!logs->max_mb.empty() && logs->file.empty()) {
      return Error::InvalidArgument("--log-max-mb goes with --log-file");
    }
    double max_mb = log::kDefaultMaxMb;
    if (!logs->max_mb.empty()) {
      TX_ASSIGN_OR_RETURN(max_mb, log::ParseMaxMb(logs->max_mb, "--log-max-mb"));
    }
    TX_ASSIGN_OR_RETURN(log_options.max_bytes, log::MaxBytesOfMb(max_mb, "--log-max-mb"));
    if (!logs->file.empty()) log_options.path = fs::absolute(logs->file).string();
    log_options.redirect_stdio = true;
    // A remote worker keeps its config.toml and its agents' logs in ./.tx, as a store would.
    std::string home = remote->url.empty() ? ctx.DbPath() : ".tx/tx.db";
    TX_ASSIGN_OR_RETURN(worker::WorkerConfig c, worker::BuildWorkerConfig(home, SelfExe(), *a));
    if (!print_env->empty()) return PrintAgentEnvironment(ctx, c, *print_env);
    TX_RETURN_IF_ERROR(worker::CheckSandboxes(c));
    if (!remote->url.empty()) {
      if (!remote->url.starts_with("http://") && !remote->url.starts_with("https://")) {
        return Error::InvalidArgument("--server must be an http:// or https:// URL, not '" +
                                      remote->url + "'");
      }
      c.db_path.clear();
      c.server_url = remote->url;
      while (c.server_url.ends_with("/")) c.server_url.pop_back();
      c.server_token = remote->token;
      if (c.server_token.empty()) {
        if (const char* env = std::getenv("TX_API_TOKEN"); env != nullptr) c.server_token = env;
      }
    }

    worker::WorkerHooks hooks;
    TX_ASSIGN_OR_RETURN(hooks.log, log::ProcessLog::Open(log_options));
    hooks.log->InstallAsDefault("tx-worker");
    // SIGHUP: the file and then the flags, as now (the flags still win).
    hooks.read_config = [a, home]() { return worker::BuildWorkerConfig(home, SelfExe(), *a); };
    worker::WorkerRuntime runtime(std::move(c), std::move(hooks));
    TX_ASSIGN_OR_RETURN(int code, runtime.Run());
    if (code != 0) return Error::Unavailable("worker stopped: it is no longer registered");
    return Ok();
  };
}

namespace {

// Records `request` for one worker and prints what was asked.
Status RequestOf(Context& ctx, service::WorkerService& workers, const std::string& id,
                 WorkerRequest request) {
  TX_ASSIGN_OR_RETURN(Worker w, workers.Request(id, request));
  if (ctx.json()) {
    ctx.out() << ToJson(w, ctx.now()).dump() << '\n';
  } else {
    ctx.out() << w.id << ": " << ToString(request) << " requested (" << ToString(w.status) << ")\n";
  }
  return Ok();
}

Handler SetupPauseOrResume(CLI::App& cmd, WorkerRequest request) {
  auto id = std::make_shared<std::string>();
  cmd.add_option("id", *id, "Worker id, name or slot")->type_name("")->required();
  return [id, request](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    return RequestOf(ctx, workers, *id, request);
  };
}

}  // namespace

Handler SetupWorkerPause(CLI::App& cmd) { return SetupPauseOrResume(cmd, WorkerRequest::kPause); }
Handler SetupWorkerResume(CLI::App& cmd) { return SetupPauseOrResume(cmd, WorkerRequest::kResume); }

Handler SetupWorkerStop(CLI::App& cmd) {
  struct Args {
    std::string id;
    bool all = false, graceful = false;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Worker id, name or slot")->type_name("");
  cmd.add_flag("--all", a->all, "Every live worker");
  cmd.add_flag("--graceful", a->graceful,
               "Let the running task finish first (otherwise its agent is stopped and the task "
               "released, the attempt not counted)");
  return [a](Context& ctx) -> Status {
    if (a->all == !a->id.empty()) {
      return Error::InvalidArgument("tx worker stop needs a worker id or --all (not both)");
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    WorkerRequest request = a->graceful ? WorkerRequest::kStop : WorkerRequest::kStopNow;
    if (!a->all) return RequestOf(ctx, workers, a->id, request);
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, workers.List({}));
    for (const auto& w : live) {
      if (!IsLive(w.status)) continue;
      TX_RETURN_IF_ERROR(RequestOf(ctx, workers, w.id, request));
    }
    return Ok();
  };
}

Handler SetupTaskLog(CLI::App& cmd) {
  struct Args {
    std::string id, attempt;
    bool follow = false, raw = false;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id")->type_name("")->required();
  NonEmpty(cmd.add_option("--attempt", a->attempt, "Attempt number (default: the latest)")
               ->type_name("N"));
  cmd.add_flag("--follow,-f", a->follow, "Keep printing while the attempt runs");
  cmd.add_flag("--raw", a->raw,
               "The agent's raw output (stream-json, JSON lines) rather than the readable log");
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(service::TaskDetail detail, tasks.Show(a->id));
    if (detail.attempts.empty()) {
      return Error::NotFound("task " + a->id + " has no attempts yet");
    }
    int n = detail.attempts.back().attempt;
    if (!a->attempt.empty()) {
      TX_ASSIGN_OR_RETURN(n, ParseCount("attempt", a->attempt));
      bool known = false;
      for (const auto& c : detail.attempts) known = known || c.attempt == n;
      if (!known) {
        return Error::NotFound("task " + a->id + " has no attempt " + std::to_string(n));
      }
    }
    std::string logs = (StoreDir(ctx) / "logs").string();
    std::string path = store::AttemptLogPath(logs, a->id, n);
    // A structured agent's raw output is kept beside its readable log; a plain one's log is
    // its raw output.
    if (a->raw) {
      std::string raw = store::AttemptRawLogPath(logs, a->id, n);
      if (fs::exists(raw) || !fs::exists(path)) path = raw;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in && !a->follow) {
      // A log is made at an attempt's first byte: none is an attempt that printed nothing.
      bool running = false;
      for (const auto& c : detail.attempts) {
        running = running || (c.attempt == n && c.status == ClaimStatus::kActive);
      }
      std::cerr << "tx: task " << a->id << " attempt " << n
                << (running ? " has printed nothing yet" : " printed nothing")
                << (store::IsPostgresUrl(ctx.DbPath()) ? " on this host" : "") << " (no " << path
                << ")\n";
      return Ok();
    }
    auto pump = [&] {
      if (!in.is_open()) in.open(path, std::ios::binary);
      if (!in) return;
      char buf[8192];
      while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        ctx.out().write(buf, in.gcount());
      }
      in.clear();  // at EOF; keep the position for the next round
      ctx.out().flush();
    };
    pump();
    if (!a->follow) return Ok();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      pump();
      TX_ASSIGN_OR_RETURN(detail, tasks.Show(a->id));
      bool running = false;
      for (const auto& c : detail.attempts) {
        running = running || (c.attempt == n && c.status == ClaimStatus::kActive);
      }
      if (!running) {
        pump();
        return Ok();
      }
    }
  };
}

Handler SetupWorkerList(CLI::App& cmd) {
  auto status = std::make_shared<std::string>();
  NonEmpty(cmd.add_option("--status", *status, "Only workers in this state")->type_name("S"));
  return [status](Context& ctx) -> Status {
    std::vector<WorkerStatus> filter;
    if (!status->empty()) {
      TX_ASSIGN_OR_RETURN(WorkerStatus s, ParseWorkerStatus(*status));
      filter.push_back(s);
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(std::vector<Worker> list, workers.List(filter));
    if (ctx.json()) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& w : list) arr.push_back(ToJson(w, ctx.now()));
      ctx.PrintJson(arr);
    } else {
      PrintWorkerTable(ctx.out(), list, ctx.now());
      // What keeps agents from running: programs missing on a worker's machine (or a refused
      // login there), and the fleet's limits.
      for (const auto& w : list) {
        auto missing = w.metadata.find("unavailable_agents");
        if (!IsLive(w.status) || missing == w.metadata.end() || !missing->is_object()) continue;
        for (const auto& [agent, why] : missing->items()) {
          ctx.out() << w.id << " cannot run " << agent << ": "
                    << (why.is_string() ? why.get<std::string>() : why.dump()) << '\n';
        }
      }
      TX_ASSIGN_OR_RETURN(
          nlohmann::json agents,
          service::AgentService(*store, ctx.clock(), ctx.options()).StatusOf(Budgets{}));
      PrintAgentStatus(ctx.out(), agents, ctx.now());
    }
    return Ok();
  };
}

Handler SetupWorkerStatus(CLI::App& cmd) {
  auto id = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("tx");
  cmd.add_option("id", *id, "Worker id, name or slot (default: every live worker)")->type_name("");
  cmd.add_option("--format", *format,
                 "tx (default), or heartbeats: the heartbeat document of the source notes, one "
                 "entry per slot, offline ones included (JSON)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"tx", "heartbeats"}));
  return [id, format](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    if (*format == "heartbeats") {
      TX_ASSIGN_OR_RETURN(std::vector<Worker> all, workers.List({}));
      if (!id->empty()) {
        TX_ASSIGN_OR_RETURN(Worker one, workers.Get(*id));
        std::erase_if(all, [&](const Worker& w) { return w.id != one.id; });
      }
      service::TaskService tasks(*store, ctx.clock(), ctx.options());
      TX_ASSIGN_OR_RETURN(auto titles, tasks.CurrentTitles(all));
      ctx.PrintJson(HeartbeatDocument(all, titles));
      return Ok();
    }
    if (!id->empty()) {
      TX_ASSIGN_OR_RETURN(Worker w, workers.Get(*id));
      if (ctx.json()) {
        ctx.PrintJson(ToJson(w, ctx.now()));
      } else {
        PrintWorkerDetail(ctx.out(), w, ctx.now());
      }
      return Ok();
    }
    TX_ASSIGN_OR_RETURN(
        std::vector<Worker> live,
        workers.List({WorkerStatus::kStarting, WorkerStatus::kIdle, WorkerStatus::kBusy,
                      WorkerStatus::kPaused, WorkerStatus::kStopping}));
    if (ctx.json()) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& w : live) arr.push_back(ToJson(w, ctx.now()));
      ctx.PrintJson({{"workers", arr}});
      return Ok();
    }
    int busy = 0, stale = 0;
    for (const auto& w : live) {
      busy += w.status == WorkerStatus::kBusy;
      stale += IsStale(w, ctx.now());
    }
    ctx.out() << live.size() << " live worker(s): " << busy << " busy, " << stale << " stale\n";
    if (!live.empty()) PrintWorkerTable(ctx.out(), live, ctx.now());
    return Ok();
  };
}

}  // namespace tx::cli
