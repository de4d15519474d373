// tx init, tx migrate: a store made, and a SQLite store copied into PostgreSQL

#include <chrono>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/duration.h"
#include "core/ids.h"
#include "exec/atomic_file.h"
#include "service/orchestrator_service.h"
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
