// tx orchestrator start|stop|status|scale|reconcile

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <thread>

#include "api/server_options.h"
#include "cli/commands.h"
#include "cli/http_api.h"
#include "cli/print.h"
#include "cli/table.h"
#include "core/duration.h"
#include "core/json.h"
#include "core/pool_wire.h"
#include "exec/process_info.h"
#include "exec/program.h"
#include "log/process_log.h"
#include "notify/config.h"
#include "notify/sinks.h"
#include "orchestrator/agent_cleanup.h"
#include "orchestrator/config.h"
#include "orchestrator/control.h"
#include "orchestrator/daemon.h"
#include "orchestrator/process_liveness.h"
#include "orchestrator/runtime.h"
#include "orchestrator/singleton.h"
#include "service/agent_service.h"
#include "service/orchestrator_service.h"
#include "service/pool_status.h"
#include "service/reconciler.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"
#include "worker/config.h"
#include "worker/flags.h"
#include "worker/spawn_plan.h"

namespace tx::cli {

namespace fs = std::filesystem;

namespace {

// The profiles whose program this machine lacks: a warning for the workers' default agent, a
// note naming the others (their tasks are left to workers elsewhere).
void WarnMissingPrograms(const worker::WorkerConfig& config) {
  std::vector<std::string> env = worker::CurrentEnvironment();
  std::string others;
  for (const auto& [name, profile] : config.profiles) {
    if (profile.argv.empty() || exec::FindProgram(profile.argv[0], env).ok()) continue;
    if (name == config.agent) {
      std::fprintf(stderr,
                   "tx: warning: the workers' agent profile '%s' cannot run here: '%s' is not on "
                   "PATH\n",
                   name.c_str(), profile.argv[0].c_str());
    } else {
      others += (others.empty() ? "" : ", ") + name;
    }
  }
  if (!others.empty()) {
    std::fprintf(stderr, "tx: agent profiles whose program is not on PATH here: %s\n",
                 others.c_str());
  }
}

// Before detaching, the refusal OrchestratorService::Acquire would make later: another live
// orchestrator of this pool, or, on a store hosts do not share (SQLite), any other one.
Status RefuseIfRunning(store::Store& store, const std::string& id) {
  service::OrchestratorService rows(store, store.clock());
  TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> all, rows.List());
  for (const auto& o : all) {
    if (o.id != id && store.SharedByHosts()) continue;
    if (orchestrator::OrchestratorAlive(o, store.clock().NowMs()) && o.pid != ::getpid()) {
      return Error::Conflict("an orchestrator is already running on this store (pid " +
                             std::to_string(o.pid) + " on " + o.hostname + ", " + o.status + ")");
    }
  }
  return Ok();
}

// --id ID: the orchestrator a command addresses (default: this directory's, else the only one).
CLI::Option* AddIdOption(CLI::App& cmd, std::string& into) {
  return NonEmpty(
      cmd.add_option("--id", into,
                     "The orchestrator to address, as tx orchestrator status lists them "
                     "(default: this directory's, else the only one running)")
          ->type_name("ID"));
}

}  // namespace

namespace {

struct StartArgs {
  std::string workers, max_workers, reconcile, shutdown, config, max_restarts, restart_window,
      max_backoff, capacity_timeout, max_queue_depth, heartbeat_file, http, http_threads,
      log_format;
  worker::WorkerFlags worker;  // what every worker is started with
  bool daemon = false;
};

// What `tx orchestrator start` runs with: its config file, the command line's flags over it, and
// the workers' flags checked as `tx worker start` will check them (for every slot the config
// names, so a typo is refused now instead of crash-looping a pool of workers); `workers` gets the
// pool's worker configuration. What SIGHUP reads again, too.
Result<orchestrator::OrchestratorConfig> ReadStartConfig(const StartArgs& a,
                                                         const std::string& db_path,
                                                         worker::WorkerConfig* workers) {
  orchestrator::OrchestratorConfig c;
  c.db_path = store::AbsoluteLocation(db_path);
  c.store_dir = store::LocalDir(c.db_path);
  c.tx_binary = SelfExe();
  if (!a.config.empty() && !fs::exists(a.config)) {
    return Error::InvalidArgument("no config file at " + a.config);
  }
  if (!a.config.empty()) c.config_path = fs::absolute(a.config).string();
  std::string config_file =
      a.config.empty() ? (fs::path(c.store_dir) / "config.toml").string() : a.config;
  TX_RETURN_IF_ERROR(orchestrator::ApplyOrchestratorFile(config_file, c));
  TX_ASSIGN_OR_RETURN(c.notify, notify::ReadNotifyFile(config_file));

  auto count = [](std::string_view flag, const std::string& text, int lo, auto& out) -> Status {
    if (text.empty()) return Ok();
    int n = 0;
    if (text != "0" || lo != 0) {
      TX_ASSIGN_OR_RETURN(n, ParseCount(flag, text));
    }
    out = n;
    return Ok();
  };
  auto duration = [](const std::string& text, Millis& out) -> Status {
    if (text.empty()) return Ok();
    TX_ASSIGN_OR_RETURN(out, ParseDuration(text));
    if (out <= 0) return Error::InvalidArgument("durations must be positive: " + text);
    return Ok();
  };
  TX_RETURN_IF_ERROR(count("--workers", a.workers, 0, c.workers));
  TX_RETURN_IF_ERROR(count("--max-workers", a.max_workers, 1, c.policy.max_workers));
  TX_RETURN_IF_ERROR(count("--max-restarts", a.max_restarts, 0, c.policy.max_restarts));
  TX_RETURN_IF_ERROR(count("--max-queue-depth", a.max_queue_depth, 0, c.max_queue_depth));
  TX_RETURN_IF_ERROR(duration(a.reconcile, c.reconcile_interval_ms));
  TX_RETURN_IF_ERROR(duration(a.shutdown, c.shutdown_timeout_ms));
  TX_RETURN_IF_ERROR(duration(a.restart_window, c.policy.restart_window_ms));
  TX_RETURN_IF_ERROR(duration(a.max_backoff, c.policy.backoff_max_ms));
  TX_RETURN_IF_ERROR(duration(a.capacity_timeout, c.policy.capacity_timeout_ms));
  if (!a.heartbeat_file.empty()) c.heartbeat_file = fs::absolute(a.heartbeat_file).string();
  if (!a.log_format.empty()) {
    TX_ASSIGN_OR_RETURN(c.log_format, log::ParseLogFormat(a.log_format, "--log-format"));
  }
  c.policy.backoff_max_ms = std::max(c.policy.backoff_max_ms, c.policy.backoff_initial_ms);

  worker::WorkerFlags worker = a.worker;
  worker.config = a.config;
  worker.shutdown = std::to_string(c.shutdown_timeout_ms) + "ms";
  TX_ASSIGN_OR_RETURN(worker::WorkerConfig workers_config,
                      worker::BuildWorkerConfig(db_path, SelfExe(), worker));
  c.container_engines = worker::ContainerEngines(workers_config);
  for (const auto& [slot, args] : c.slot_args) {
    worker::WorkerFlags slotted = worker;
    TX_RETURN_IF_ERROR(worker::ApplyWorkerArgs(args, slotted));
    Result<worker::WorkerConfig> checked = worker::BuildWorkerConfig(db_path, SelfExe(), slotted);
    if (!checked.ok()) {
      return Error(checked.error().code(), slot + ": " + checked.error().message());
    }
    // A slot's own sandbox: its containers are removed with its engine too.
    for (auto& engine : worker::ContainerEngines(*checked)) {
      auto same = std::find_if(c.container_engines.begin(), c.container_engines.end(),
                               [&](const auto& e) { return e.command == engine.command; });
      if (same == c.container_engines.end()) {
        c.container_engines.push_back(std::move(engine));
      } else {
        same->configured = same->configured || engine.configured;
      }
    }
  }
  auto pass = [&](const char* flag, const std::string& value) {
    if (!value.empty()) c.worker_args.insert(c.worker_args.end(), {flag, value});
  };
  pass("--heartbeat-interval", worker.heartbeat);
  pass("--lease", worker.lease);
  pass("--stall-timeout", worker.stall);
  pass("--poll-interval", worker.poll);
  pass("--agent", worker.agent);
  pass("--capabilities", worker.capabilities);
  pass("--queues", worker.queues);
  pass("--memory-mb", worker.memory_mb);
  pass("--sandbox", worker.sandbox);
  pass("--cpu-percent", worker.cpu_percent);
  pass("--shutdown-timeout", worker.shutdown);
  if (workers != nullptr) *workers = std::move(workers_config);
  return c;
}

}  // namespace

Handler SetupOrchestratorStart(CLI::App& cmd) {
  auto a = std::make_shared<StartArgs>();
  auto opt = [&](const char* name, std::string& into, const char* help, const char* type) {
    NonEmpty(cmd.add_option(name, into, help)->type_name(type));
  };
  opt("--workers", a->workers, "Workers to keep running (default 2, or [orchestrator] workers)",
      "N");
  opt("--max-workers", a->max_workers,
      "Cap on worker processes; scaling past it waits (default 10)", "N");
  cmd.add_flag("--daemon", a->daemon,
               "Detach once running; log to orchestrator.log beside the store");
  opt("--heartbeat-interval", a->worker.heartbeat, "Workers' idle heartbeat interval (default 30s)",
      "DUR");
  opt("--lease", a->worker.lease, "Lease per claim (default 30m)", "DUR");
  opt("--reconcile-interval", a->reconcile, "Full reconcile pass every (default 60s)", "DUR");
  opt("--shutdown-timeout", a->shutdown,
      "On stop, how long workers may finish their tasks before SIGKILL (default 5m)", "DUR");
  opt("--agent", a->worker.agent, "Workers' agent profile or argv template", "PROFILE|'ARGV'");
  opt("--capabilities", a->worker.capabilities, "Workers' capabilities: a,b", "LIST");
  opt("--queues", a->worker.queues, "Queues the workers claim from", "LIST");
  opt("--config", a->config, "Config file (default: config.toml beside the store)", "PATH");
  opt("--max-restarts", a->max_restarts,
      "Exits before registering within --restart-window before a slot is marked failed and "
      "tried again after a cool-down (1m doubling to 15m) (default 5)",
      "N");
  opt("--restart-window", a->restart_window, "Window of --max-restarts (default 1m)", "DUR");
  opt("--max-backoff", a->max_backoff, "Longest wait before restarting a worker (default 30s)",
      "DUR");
  opt("--capacity-timeout", a->capacity_timeout,
      "How long workers wanted past --max-workers wait for room (default 30s)", "DUR");
  opt("--max-queue-depth", a->max_queue_depth,
      "Refuse tx task add (exit 5) beyond this many ready tasks", "N");
  opt("--heartbeat-file", a->heartbeat_file,
      "Mirror the pool's heartbeat document to this file (rewritten atomically)", "PATH");
  opt("--http", a->http,
      "Also serve the HTTP API and dashboard on this address (e.g. 127.0.0.1:8787)", "HOST:PORT");
  opt("--http-threads", a->http_threads,
      "Most threads serving the HTTP API at once (default 256, started as needed)", "N");
  opt("--stall-timeout", a->worker.stall, "Stop an agent silent for this long (default off)",
      "DUR");
  opt("--poll-interval", a->worker.poll, "Workers' fallback poll when idle (default 30s)", "DUR");
  opt("--memory-mb", a->worker.memory_mb, "Agent memory limit", "MB");
  opt("--sandbox", a->worker.sandbox, "Run agents in a sandbox: none, bwrap, podman or docker",
      "KIND");
  opt("--cpu-percent", a->worker.cpu_percent, "Agent CPU limit (100 = one core)", "N");
  opt("--log-format", a->log_format,
      "Log lines of the orchestrator and its workers as text or json, one object a line "
      "(default text, or [orchestrator] log_format)",
      "text|json");
  return [a](Context& ctx) -> Status {
    worker::WorkerConfig workers_config;
    TX_ASSIGN_OR_RETURN(orchestrator::OrchestratorConfig c,
                        ReadStartConfig(*a, ctx.DbPath(), &workers_config));
    // Webhooks are sent by the HTTP module: one that cannot be opened is said before anything
    // starts.
    if (notify::HasWebhooks(c.notify)) TX_RETURN_IF_ERROR(notify::CheckWebhooks());
    std::optional<std::pair<std::string, int>> http;
    if (!a->http.empty()) {
      TX_ASSIGN_OR_RETURN(http, ParseListenAddress(a->http));
      TX_RETURN_IF_ERROR(CheckHttpApi());
    }
    int http_threads = api::ServerOptions{}.threads;
    if (!a->http_threads.empty()) {
      TX_ASSIGN_OR_RETURN(http_threads, ParseCount("--http-threads", a->http_threads,
                                                   api::ServerOptions::kMaxThreads));
    }
    TX_RETURN_IF_ERROR(worker::CheckSandboxes(workers_config));

    // Errors a person must see happen here, before any detaching: the lock, the store, the row.
    std::error_code ec;
    fs::create_directories(fs::path(c.store_dir) / "logs" / "workers", ec);
    TX_ASSIGN_OR_RETURN(orchestrator::PidFileLock lock,
                        orchestrator::PidFileLock::Acquire(c.pid_path()));
    {
      TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::Open({c.db_path, false}));
      TX_RETURN_IF_ERROR(RefuseIfRunning(*store, PoolId(exec::Hostname(), c.store_dir)));
    }  // closed before a fork: an SQLite connection must not cross one
    // Said now, on the terminal: an agent the workers would run whose program is not on PATH.
    WarnMissingPrograms(workers_config);

    std::optional<orchestrator::DaemonHandshake> handshake;
    if (a->daemon) {
      int parent_code = 0;
      std::string said;
      TX_ASSIGN_OR_RETURN(handshake, orchestrator::Detach(c.log_path(), parent_code, said));
      if (!handshake) {
        // The parent: the daemon holds the lock now (our descriptor closes, its copy stays).
        if (parent_code == 0) {
          ctx.out() << said << '\n';
          return Ok();
        }
        for (ErrorCode code : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
                               ErrorCode::kConflict, ErrorCode::kBackpressure}) {
          if (ExitCode(code) == parent_code) return Error(code, said);
        }
        return Error::Unavailable(said);
      }
      TX_RETURN_IF_ERROR(lock.Rewrite());
    }

    // A daemon's log is its file (reopened on SIGHUP, rotated past the cap); in the foreground,
    // stderr as the caller made it.
    log::ProcessLog::Options log_options;
    log_options.format = c.log_format;
    TX_ASSIGN_OR_RETURN(log_options.max_bytes,
                        log::MaxBytesOfMb(c.log_max_mb, "[orchestrator] log_max_mb"));
    if (handshake) log_options.path = c.log_path();
    log_options.redirect_stdio = true;
    Result<std::shared_ptr<log::ProcessLog>> process_log = log::ProcessLog::Open(log_options);
    if (!process_log.ok()) {
      if (handshake) {
        handshake->Failed(ExitCode(process_log.error().code()), process_log.error().message());
      }
      lock.Release();
      return process_log.error();
    }
    (*process_log)->InstallAsDefault("tx-orchestrator");
    orchestrator::OrchestratorHooks hooks;
    hooks.log = *process_log;
    // SIGHUP: read as at start (the flags still win); a new webhook opens the HTTP module.
    hooks.read_config = [a, db = ctx.DbPath()]() -> Result<orchestrator::OrchestratorConfig> {
      TX_ASSIGN_OR_RETURN(orchestrator::OrchestratorConfig fresh, ReadStartConfig(*a, db, nullptr));
      if (notify::HasWebhooks(fresh.notify)) TX_RETURN_IF_ERROR(notify::CheckWebhooks());
      return fresh;
    };

    // The API is served from the daemon (threads do not survive the fork), before the pool
    // starts; a port that cannot be bound still reaches the terminal through the handshake.
    std::unique_ptr<HttpApi> server;
    if (http) {
      orchestrator::BlockOrchestratorSignals();  // the server's threads inherit the mask
      api::ServerOptions so;
      so.db_path = c.db_path;
      so.local_pool = PoolId(exec::Hostname(), c.store_dir);
      so.host = http->first;
      so.port = http->second;
      so.service = ctx.options();
      so.threads = http_threads;
      Result<std::unique_ptr<HttpApi>> started = StartHttpApi(std::move(so));
      if (!started.ok()) {
        if (handshake) {
          handshake->Failed(ExitCode(started.error().code()), started.error().message());
        }
        lock.Release();
        return started.error();
      }
      server = std::move(*started);
      std::string host =
          http->first.find(':') == std::string::npos ? http->first : "[" + http->first + "]";
      c.http = "http://" + host + ":" + std::to_string(server->port());
    }

    std::string config_log = c.log_path();
    std::string served = c.http.empty() ? "" : "; the HTTP API is on " + c.http;
    orchestrator::Orchestrator o(std::move(c), std::move(hooks));
    Result<int> code = o.Run([&](const std::string& message) {
      if (handshake) {
        handshake->Ready(message + served + "; its log is " + config_log);
      } else {
        spdlog::info("{}{}", message, served);
      }
    });
    if (server) server->Stop();
    if (!code.ok()) {
      if (handshake) handshake->Failed(ExitCode(code.error().code()), code.error().message());
      lock.Release();
      return code.error();
    }
    lock.Release();
    if (*code != 0) return Error::Unavailable("the orchestrator stopped with errors");
    return Ok();
  };
}

Handler SetupOrchestratorStop(CLI::App& cmd) {
  struct Args {
    bool graceful = false, force = false, no_wait = false;
    std::string id;
  };
  auto a = std::make_shared<Args>();
  auto* g = cmd.add_flag("--graceful", a->graceful,
                         "Let running tasks finish, up to the shutdown timeout (the default)");
  cmd.add_flag("--force", a->force,
               "Kill the workers and their agents now; their tasks are released")
      ->excludes(g);
  cmd.add_flag("--no-wait", a->no_wait, "Return once the stop is requested");
  AddIdOption(cmd, a->id);
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    TX_ASSIGN_OR_RETURN(std::string id, orchestrator::TargetOrchestrator(*store, ctx.options(),
                                                                         a->id, ctx.LocalPool()));
    TX_ASSIGN_OR_RETURN(OrchestratorState o, orchestrator::StopOrchestrator(
                                                 *store, ctx.options(), id, a->force, !a->no_wait));
    if (ctx.json()) {
      ctx.PrintJson(
          {{"stopped", !a->no_wait}, {"id", o.id}, {"pid", o.pid}, {"hostname", o.hostname}});
    } else {
      ctx.out() << "orchestrator pid " << o.pid << (a->no_wait ? " asked to stop" : " stopped")
                << '\n';
    }
    return Ok();
  };
}

Handler SetupOrchestratorScale(CLI::App& cmd) {
  auto n = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  cmd.add_option("n", *n, "Number of workers")->type_name("N")->required();
  AddIdOption(cmd, *id);
  return [n, id](Context& ctx) -> Status {
    int want = 0;
    if (*n != "0") {
      TX_ASSIGN_OR_RETURN(want, ParseCount("N", *n));
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    TX_ASSIGN_OR_RETURN(std::string target, orchestrator::TargetOrchestrator(*store, ctx.options(),
                                                                             *id, ctx.LocalPool()));
    TX_ASSIGN_OR_RETURN(PoolAnswer answer,
                        orchestrator::ScalePool(*store, ctx.options(), target, want));
    if (ctx.json()) {
      ctx.PrintJson(nlohmann::json(answer));
    } else {
      ctx.out() << "pool scaled to " << want << " worker(s)\n";
    }
    return Ok();
  };
}

Handler SetupOrchestratorStatus(CLI::App& cmd) {
  auto id = std::make_shared<std::string>();
  AddIdOption(cmd, *id);
  return [id](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    Millis now = ctx.now();
    TX_ASSIGN_OR_RETURN(nlohmann::json st,
                        service::PoolStatus(*store, ctx.options(), now, *id, ctx.LocalPool()));
    // The agents' limits and the day's budgets, as config.toml beside the store sets them.
    worker::WorkerConfig settings;
    TX_RETURN_IF_ERROR(worker::ApplyConfigFile(ctx.ConfigPath(), settings));
    TX_ASSIGN_OR_RETURN(
        st["agents"],
        service::AgentService(*store, ctx.clock(), ctx.options()).StatusOf(settings.budgets));
    if (ctx.json()) {
      ctx.PrintJson(st);
      return Ok();
    }
    const nlohmann::json& slots = st["slots"];
    const std::string state = st["status"];
    const bool alive = state != "stopped" && state != "dead";
    const std::int64_t pid = st["pid"];
    std::ostream& out = ctx.out();
    out << "orchestrator: " << state;
    if (pid > 0) out << " (pid " << pid << " on " << st["hostname"].get<std::string>();
    if (Millis up = st["uptime_ms"]; alive && up > 0) {
      out << ", up " << FormatDuration(up >= 10'000 ? up / 1000 * 1000 : up / 100 * 100);
    }
    if (pid > 0) out << ")";
    out << '\n';
    // Who leads the reconciler, and the other orchestrators of a shared store.
    const std::string leader = st["leader"];
    const nlohmann::json& all = st["orchestrators"];
    if (all.size() > 1 || store->SharedByHosts()) {
      out << "id: " << st["id"].get<std::string>() << '\n';
      out << "reconciler: "
          << (leader.empty() ? std::string("no orchestrator leads it")
              : st["leads"].get<bool>()
                  ? "led by this orchestrator (taken " + Age(st["leader_since"], now) + ")"
                  : "led by " + leader + " (taken " + Age(st["leader_since"], now) + ")")
          << '\n';
    }
    if (all.size() > 1) {
      Table t({"ID", "STATUS", "PID", "LEADS", "SEEN"});
      for (const auto& o : all) {
        Millis seen = o["seen_at"];
        t.Add({o["id"], o["status"], std::to_string(o["pid"].get<std::int64_t>()),
               o["leads"].get<bool>() && !leader.empty() ? "yes" : "-",
               seen > 0 ? Age(seen, now) : std::string("-")});
      }
      out << "orchestrators on this store:\n";
      t.Print(out);
    }
    const nlohmann::json& config = st["config"];
    if (alive && config.is_object() && !config.value("http", std::string()).empty()) {
      out << "http: " << config.value("http", std::string()) << '\n';
    }
    if (!slots.empty()) {
      out << "pool: " << st["live"].get<int>() << " running of " << st["desired"].get<int>()
          << " wanted (max " << st["max_workers"].get<int>() << ")\n";
      Table t({"SLOT", "STATE", "PID", "WORKER", "STATUS", "TASK", "HEARTBEAT", "RESTARTS",
               "LAST EXIT"});
      auto text = [](const nlohmann::json& s, const char* key) -> std::string {
        auto it = s.find(key);
        if (it == s.end() || !it->is_string() || it->get<std::string>().empty()) return "-";
        return it->get<std::string>();
      };
      for (const auto& s : slots) {
        std::string last = text(s, "failure");
        if (last == "-") last = text(s, "last_exit");
        const nlohmann::json& age = s["heartbeat_age_ms"];
        std::string state = text(s, "state");
        Millis next = s.value("next_start_at", Millis{0});
        if (next > 0 && (state == "failed" || state == "backoff")) {
          state += " (next try " +
                   (next > now ? "in " + FormatDuration((next - now) / 1000 * 1000)
                               : std::string("now")) +
                   ")";
        }
        t.Add({text(s, "slot"), state,
               s.value("pid", 0) > 0 ? std::to_string(s.value("pid", 0)) : "-",
               text(s, "worker_id"), text(s, "worker_status"), text(s, "task_id"),
               age.is_number() ? FormatDuration(age.get<Millis>()) + " ago" : "-",
               std::to_string(s.value("restarts", 0)), last});
      }
      t.Print(out);
    }
    const auto by_status = st["queue"].get<std::map<std::string, std::int64_t>>();
    out << "queue:";
    if (by_status.empty()) out << " empty";
    for (const auto& [status, n] : by_status) out << ' ' << status << ' ' << n;
    out << '\n';
    const Millis last_at = st["last_reconcile_at"];
    const nlohmann::json& report = st["last_report"];
    out << "last reconcile: " << (last_at > 0 ? Age(last_at, now) : std::string("never"));
    if (report.is_object() && !report.empty()) {
      out << " — dead workers " << report.value("dead_workers", 0) << ", expired leases "
          << report.value("expired_leases", 0) << ", orphaned tasks "
          << report.value("orphaned_tasks", 0) << ", fixed "
          << report.value("inconsistencies_fixed", 0);
    }
    out << '\n';
    PrintAgentStatus(out, st["agents"], now);
    return Ok();
  };
}

Handler SetupOrchestratorReconcile(CLI::App&) {
  return [](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    // The review and question timeouts are the [orchestrator] section's, as the running
    // orchestrator's.
    orchestrator::OrchestratorConfig config;
    TX_RETURN_IF_ERROR(orchestrator::ApplyOrchestratorFile(ctx.ConfigPath(), config));
    service::ServiceOptions options = ctx.options();
    options.review_timeout_ms = config.review_timeout_ms;
    options.question_timeout_ms = config.question_timeout_ms;
    service::Reconciler reconciler(*store, options);
    Moment now = ctx.clock().Now();
    // As the orchestrator does: the agents of this host's workers about to be declared dead are
    // killed first, so none of their children still runs when the task runs again.
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, workers.List(LiveWorkerStatuses()));
    int agents_killed = orchestrator::KillAgentsOfStaleWorkers(
        live, exec::Hostname(),
        [&](const Worker& w) { return reconciler.WouldDeclareDead(w, now); });
    TX_ASSIGN_OR_RETURN(ReconcileReport report, reconciler.RunOnce(now));
    if (ctx.json()) {
      nlohmann::json j = ToJson(report);
      j["agents_killed"] = agents_killed;
      ctx.PrintJson(j);
    } else {
      PrintReport(ctx.out(), report);
      if (agents_killed > 0) {
        ctx.out() << "killed the agents of " << agents_killed << " stale workers on this host\n";
      }
    }
    return Ok();
  };
}

}  // namespace tx::cli
