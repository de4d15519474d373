// tx init, events, worker list|status, orchestrator reconcile

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/print.h"
#include "core/duration.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/validation.h"
#include "exec/atomic_file.h"
#include "exec/process_info.h"
#include "orchestrator/agent_cleanup.h"
#include "orchestrator/config.h"
#include "service/agent_service.h"
#include "service/event_log.h"
#include "service/orchestrator_service.h"
#include "service/reconciler.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/location.h"
#include "store/migrate.h"

namespace tx::cli {

namespace fs = std::filesystem;

namespace {

// Writes the API token beside the store, readable by its owner only (0600), so that a crash
// leaves no partial token. Kept if it exists.
Status WriteToken(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return Ok();
  return exec::WriteFileAtomically(path.string(), NewToken() + "\n", 0600);
}
}  // namespace

Handler SetupInit(CLI::App&) {
  return [](Context& ctx) -> Status {
    std::string db = ctx.DbPath();
    bool url = store::IsPostgresUrl(db);
    // This machine's directory: beside a SQLite file, or .tx/ here for a PostgreSQL store.
    fs::path dir = url ? fs::path(".tx") : fs::path(db).parent_path();
    std::error_code ec;
    if (!dir.empty() && !fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) return Error::Unavailable("cannot create " + dir.string() + ": " + ec.message());
    }
    // The store, its tokens and its logs are the owner's alone (docs/security.md): the directory
    // is 0700 and the store's files 0600, made so again by a tx init over an older store.
    if (!dir.empty()) fs::permissions(dir, fs::perms::owner_all, ec);
    // A SQLite store existed if its file did; a PostgreSQL one if it opens without creating.
    bool existed = url ? store::Open({db, /*create=*/false}).ok() : fs::exists(db, ec);
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store(/*create=*/true));
    if (!url) {
      for (const char* suffix : {"", "-wal", "-shm"}) {
        fs::path f = db + suffix;
        if (fs::is_regular_file(fs::symlink_status(f, ec))) {
          fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write, ec);
        }
      }
    }
    fs::path token = (dir.empty() ? fs::path(".") : dir) / "token";
    TX_RETURN_IF_ERROR(WriteToken(token));
    if (ctx.json()) {
      ctx.PrintJson({{"db", store->Describe()},
                     {"token_file", token.string()},
                     {"schema_version", store::SchemaVersion()},
                     {"created", !existed}});
    } else {
      ctx.out() << (existed ? "store already initialised at " : "initialised store at ")
                << store->Describe() << " (schema v" << store::SchemaVersion() << "); API token in "
                << token.string() << '\n';
    }
    return Ok();
  };
}

Handler SetupEvents(CLI::App& cmd) {
  struct Args {
    bool follow = false;
    std::string since, limit;
  };
  auto a = std::make_shared<Args>();
  cmd.add_flag("--follow,-f", a->follow, "Keep printing new events as they happen");
  NonEmpty(
      cmd.add_option("--since", a->since, "Only events after this event number")->type_name("N"));
  NonEmpty(
      cmd.add_option("--limit", a->limit, "At most this many (without --follow)")->type_name("N"));
  return [a](Context& ctx) -> Status {
    std::int64_t since = 0;
    int limit = 0;
    if (!a->since.empty()) {
      TX_ASSIGN_OR_RETURN(since, ParseInteger("--since", a->since));
    }
    if (!a->limit.empty()) {
      TX_ASSIGN_OR_RETURN(limit, ParseCount("--limit", a->limit));
    }
    if (since < 0) return Error::InvalidArgument("invalid --since '" + a->since + "': negative");
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::EventLog log(*store);
    auto print = [&](const std::vector<Event>& events) {
      for (const auto& e : events) {
        if (ctx.json() && a->follow) {
          ctx.out() << ToJson(e).dump() << '\n';
        } else if (!ctx.json()) {
          PrintEventLine(ctx.out(), e);
        }
      }
      ctx.out().flush();
    };
    if (!a->follow) {
      TX_ASSIGN_OR_RETURN(std::vector<Event> events, log.Since(since, limit));
      if (ctx.json()) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& e : events) arr.push_back(ToJson(e));
        ctx.PrintJson(arr);
      } else {
        print(events);
      }
      return Ok();
    }
    // Follow: print what is there, then poll the store's change counter (cheap) for more.
    std::int64_t seen = -1;
    for (;;) {
      TX_ASSIGN_OR_RETURN(std::int64_t counter, store->ChangeCounter());
      if (counter != seen) {
        seen = counter;
        for (;;) {
          TX_ASSIGN_OR_RETURN(std::vector<Event> events, log.Since(since, 1000));
          if (events.empty()) break;
          print(events);
          since = events.back().id;
        }
      }
      if (!ctx.out()) return Ok();  // the reader went away
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
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

Handler SetupMigrate(CLI::App& cmd) {
  auto to = std::make_shared<std::string>();
  NonEmpty(cmd.add_option("--to", *to, "The PostgreSQL store to copy into (an empty database)")
               ->type_name("postgresql://...")
               ->required());
  return [to](Context& ctx) -> Status {
    std::string from = ctx.DbPath();
    if (store::IsPostgresUrl(from)) {
      return Error::InvalidArgument("tx migrate copies a SQLite store (--db PATH), not " +
                                    store::AbsoluteLocation(from));
    }
    // A consistent copy needs a quiet source: no orchestrator, no worker still at work on it.
    TX_ASSIGN_OR_RETURN(store::Store * source, ctx.Store());
    TX_RETURN_IF_ERROR(service::CheckNothingRuns(*source, ctx.options(), ctx.now()));
    auto started = std::chrono::steady_clock::now();
    TX_ASSIGN_OR_RETURN(store::MigrateReport r,
                        store::CopySqliteToPostgres(store::AbsoluteLocation(from), *to));
    Millis took = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
    if (ctx.json()) {
      ctx.PrintJson({{"from", store::AbsoluteLocation(from)},
                     {"to", store::Describe(*to)},
                     {"tasks", r.tasks},
                     {"dependencies", r.dependencies},
                     {"workers", r.workers},
                     {"claims", r.claims},
                     {"events", r.events},
                     {"deliveries", r.deliveries},
                     {"took_ms", took}});
    } else {
      ctx.out() << "copied " << r.tasks << " tasks, " << r.claims << " claims, " << r.workers
                << " workers and " << r.events << " events into " << store::Describe(*to) << " in "
                << FormatDuration(took) << "; point every tx at it with --db URL or TX_DB\n";
    }
    return Ok();
  };
}

}  // namespace tx::cli
