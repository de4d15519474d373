// tx backup PATH, tx restore PATH (docs/operations.md, "Backup and restore")

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/duration.h"
#include "orchestrator/singleton.h"
#include "service/orchestrator_service.h"
#include "store/backup.h"
#include "store/location.h"

namespace tx::cli {

namespace fs = std::filesystem;

namespace {

// How long tx restore waits for another process to let go of the store before it refuses.
constexpr Millis kRestoreLockWaitMs = 2'000;

// "2.1 MiB", "812 KiB", "512 bytes".
std::string Size(std::int64_t n) {
  char buf[32];
  if (n >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= (1 << 10)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / (1 << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(n));
  }
  return buf;
}

Millis Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

// Removes the orchestrator's pid file that tx restore holds, however the handler returns.
struct ReleaseOnExit {
  orchestrator::PidFileLock& lock;
  ~ReleaseOnExit() { lock.Release(); }
};

}  // namespace

Handler SetupBackup(CLI::App& cmd) {
  struct Args {
    std::string path;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  NonEmpty(cmd.add_option("path", a->path, "The file to write the copy to")->type_name("PATH"))
      ->required();
  cmd.add_flag("--force", a->force, "Replace PATH if it exists");
  return [a](Context& ctx) -> Status {
    auto started = std::chrono::steady_clock::now();
    TX_ASSIGN_OR_RETURN(store::BackupReport r,
                        store::BackupSqlite(ctx.DbPath(), a->path, a->force));
    Millis took = Since(started);
    if (ctx.json()) {
      ctx.PrintJson({{"db", store::AbsoluteLocation(ctx.DbPath())},
                     {"path", Absolute(r.path)},
                     {"bytes", r.bytes},
                     {"tasks", r.tasks},
                     {"events", r.events},
                     {"schema_version", r.schema_version},
                     {"took_ms", took}});
    } else {
      ctx.out() << "backed up " << ctx.DbPath() << " to " << r.path << ": " << r.tasks << " tasks, "
                << r.events << " events, " << Size(r.bytes) << " (schema v" << r.schema_version
                << ") in " << FormatDuration(took) << '\n';
    }
    return Ok();
  };
}

Handler SetupRestore(CLI::App& cmd) {
  auto path = std::make_shared<std::string>();
  NonEmpty(cmd.add_option("path", *path, "A backup made by tx backup (or a copy of a tx store)")
               ->type_name("PATH"))
      ->required();
  return [path](Context& ctx) -> Status {
    auto started = std::chrono::steady_clock::now();
    const std::string db = ctx.DbPath();
    if (store::IsPostgresUrl(db)) {
      return Error::InvalidArgument(
          "tx restore restores a SQLite store, not " + store::Describe(db) +
          "; for PostgreSQL use pg_restore (docs/operations.md, Backup and restore)");
    }
    // The file first: a tx store this tx can run on, held in one snapshot from here on.
    TX_ASSIGN_OR_RETURN(store::BackupFile file, store::BackupFile::Open(*path));

    // No orchestrator may run on the store, nor start while it is replaced: its pid-file lock is
    // held until the end (refused, naming its holder, while one runs on this host).
    const std::string dir = store::LocalDir(db);
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) return Error::Unavailable("cannot create " + dir + ": " + ec.message());
      fs::permissions(dir, fs::perms::owner_all, ec);
    }
    TX_ASSIGN_OR_RETURN(orchestrator::PidFileLock lock,
                        orchestrator::PidFileLock::Acquire(dir + "/orchestrator.pid"));
    ReleaseOnExit release{lock};
    // Nor any worker whose process runs, nor an orchestrator on another host (its row). A store
    // that does not open (damaged, or of a newer schema) has no rows to judge: the exclusive
    // lock below is then the only guard, and it suffices, since every process at work on the
    // store holds it open.
    if (fs::exists(db, ec)) {
      Result<std::unique_ptr<store::Store>> current = store::Open({db, false});
      if (current.ok()) {
        TX_RETURN_IF_ERROR(
            service::CheckNothingRuns(**current, ctx.options(), (*current)->clock().Now()));
      }
    }  // closed: the restore needs the store alone

    TX_ASSIGN_OR_RETURN(store::BackupReport r, file.RestoreInto(db, kRestoreLockWaitMs));
    // Opened as every tx opens it: an older schema is brought to this tx's now.
    TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> restored, store::Open({db, false}));
    restored.reset();
    Millis took = Since(started);
    const store::BackupReport& from = file.report();
    if (ctx.json()) {
      ctx.PrintJson({{"db", store::AbsoluteLocation(db)},
                     {"path", Absolute(from.path)},
                     {"bytes", from.bytes},
                     {"tasks", r.tasks},
                     {"events", r.events},
                     {"schema_version", from.schema_version},
                     {"store_schema_version", store::SchemaVersion()},
                     {"took_ms", took}});
    } else {
      ctx.out() << "restored " << db << " from " << from.path << ": " << r.tasks << " tasks, "
                << r.events << " events, " << Size(from.bytes) << " (schema v"
                << from.schema_version;
      if (from.schema_version != store::SchemaVersion()) {
        ctx.out() << ", migrated to v" << store::SchemaVersion();
      }
      ctx.out() << ") in " << FormatDuration(took) << '\n';
    }
    return Ok();
  };
}

}  // namespace tx::cli
