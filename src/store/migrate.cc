#include "store/migrate.h"

#include <chrono>
#include <filesystem>

#include "store/location.h"
#include "store/postgres/libpq.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_conn.h"
#include "store/sqlite/db.h"
#include "store/store.h"

namespace tx::store {

namespace {

// Rows sent between two waits for the server's answers: bounds what the pipeline holds.
constexpr int kBatch = 2'000;

// One table's copy: the same columns, in the same order, read from SQLite and written to
// PostgreSQL. Values travel as text (PostgreSQL reads each as its column's type); NULL stays NULL.
struct Table {
  const char* name;
  const char* select;  // from SQLite, in the order rows are to be inserted
  const char* insert;  // into PostgreSQL: $1..$n, n = the select's columns
  int columns;
};

#define TASK_COLUMNS                                                                             \
  "seq, id, title, description, instructions, deliverables, steps, priority, queue, requires, "  \
  "after, owner, workdir, command, agent, timeout_ms, max_attempts, review, repo, base_branch, " \
  "metadata, result, error, status, attempt, run_after, created_at, updated_at, started_at, "    \
  "finished_at"
#define WORKER_COLUMNS                                                                   \
  "id, name, slot, hostname, pid, capabilities, queues, status, heartbeat_interval_ms, " \
  "registered_at, last_heartbeat_at, current_task_id, reason, metadata, request, pool, " \
  "busy_heartbeat_interval_ms"
#define CLAIM_COLUMNS                                                            \
  "token, task_id, worker_id, attempt, claimed_at, lease_ms, lease_expires_at, " \
  "renewed_count, status, ended_at, end_reason, exit_code"

#define USAGE_COLUMNS                                                                            \
  "token, task_id, attempt, worker_id, agent, account, queue, session_id, model, input_tokens, " \
  "output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, cost_estimated, "       \
  "turns, denials, started_at, updated_at"
#define LIMIT_COLUMNS "profile, account, until, since, reason, task_id, strikes, resumed"
#define DELIVERY_COLUMNS                                                                        \
  "seq, id, sink, event_id, event_type, task_id, body, status, attempts, created_at, next_at, " \
  "last_at, last_error"

// In dependency order (claims name tasks and workers). Workers keep their registration order
// (PostgreSQL numbers them anew as they come).
constexpr Table kTables[] = {
    {"tasks", "SELECT " TASK_COLUMNS " FROM tasks ORDER BY seq",
     "INSERT INTO tasks (" TASK_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
     "$12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, "
     "$30)",
     30},
    {"task_deps", "SELECT task_id, depends_on FROM task_deps ORDER BY task_id, depends_on",
     "INSERT INTO task_deps (task_id, depends_on) VALUES ($1, $2)", 2},
    {"workers", "SELECT " WORKER_COLUMNS " FROM workers ORDER BY rowid",
     "INSERT INTO workers (" WORKER_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
     "$11, $12, $13, $14, $15, $16, $17)",
     17},
    {"claims", "SELECT " CLAIM_COLUMNS " FROM claims ORDER BY token",
     "INSERT INTO claims (" CLAIM_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
     "$11, $12)",
     12},
    {"events", "SELECT id, type, at, task_id, worker_id, data FROM events ORDER BY id",
     "INSERT INTO events (id, type, at, task_id, worker_id, data) VALUES ($1, $2, $3, $4, $5, $6)",
     6},
    {"attempt_usage", "SELECT " USAGE_COLUMNS " FROM attempt_usage ORDER BY token",
     "INSERT INTO attempt_usage (" USAGE_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
     "$10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
     19},
    {"agent_limits", "SELECT " LIMIT_COLUMNS " FROM agent_limits ORDER BY profile, account",
     "INSERT INTO agent_limits (" LIMIT_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", 8},
    {"notices", "SELECT key, at FROM notices ORDER BY key",
     "INSERT INTO notices (key, at) VALUES ($1, $2)", 2},
    {"notify_deliveries", "SELECT " DELIVERY_COLUMNS " FROM notify_deliveries ORDER BY seq",
     "INSERT INTO notify_deliveries (" DELIVERY_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, "
     "$8, $9, $10, $11, $12, $13)",
     13},
};

Result<std::int64_t> CopyTable(sqlite::Db& from, postgres::Conn& to, const Table& t) {
  TX_ASSIGN_OR_RETURN(sqlite::Stmt rows, from.Prepare(t.select));
  std::int64_t n = 0;
  for (;;) {
    TX_ASSIGN_OR_RETURN(bool row, rows.Step());
    if (!row) break;
    postgres::Params p;
    for (int c = 0; c < t.columns; ++c) {
      if (rows.IsNull(c)) {
        p.AddNull();
      } else {
        p.Add(rows.Text(c));
      }
    }
    to.Queue(t.insert, p);
    if (++n % kBatch == 0) TX_RETURN_IF_ERROR(to.Sync());
  }
  TX_RETURN_IF_ERROR(to.Sync());
  return n;
}

Status CopyAll(sqlite::Db& from, postgres::Conn& to, MigrateReport& report) {
  TX_ASSIGN_OR_RETURN(postgres::Rows held,
                      to.Exec("SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM "
                              "workers) + (SELECT count(*) FROM events)"));
  if (held.Int(0, 0) > 0) {
    return Error::Conflict("the destination " + Describe(to.url()) + " already holds " +
                           std::to_string(held.Int(0, 0)) +
                           " tasks, workers and events: migrate into an empty database");
  }
  std::int64_t* counts[] = {&report.tasks,  &report.dependencies, &report.workers,
                            &report.claims, &report.events,       &report.usage,
                            &report.limits, &report.notices,      &report.deliveries};
  static_assert(std::size(counts) == std::size(kTables));
  for (std::size_t i = 0; i < std::size(kTables); ++i) {
    Result<std::int64_t> n = CopyTable(from, to, kTables[i]);
    if (!n.ok()) {
      return Error(n.error().code(),
                   std::string("copying ") + kTables[i].name + ": " + n.error().message());
    }
    *counts[i] = *n;
  }
  // The reconciler's record: its count of passes and the last one. No SQLite orchestrator leads
  // here.
  TX_ASSIGN_OR_RETURN(sqlite::Stmt record,
                      from.Prepare("SELECT last_reconcile_at, last_report FROM orchestrator "
                                   "WHERE id = 1"));
  TX_ASSIGN_OR_RETURN(bool row, record.Step());
  if (row) {
    to.Queue("UPDATE orchestrator SET last_reconcile_at = $1, last_report = $2 WHERE id = 1",
             postgres::Params().Add(record.Int(0)).Add(record.Text(1)));
  }
  // Notifications go on from the same event.
  TX_ASSIGN_OR_RETURN(sqlite::Stmt cursor,
                      from.Prepare("SELECT event_id FROM notify_cursor WHERE id = 1"));
  TX_ASSIGN_OR_RETURN(bool has_cursor, cursor.Step());
  if (has_cursor) {
    to.Queue("UPDATE notify_cursor SET event_id = $1 WHERE id = 1",
             postgres::Params().Add(cursor.Int(0)));
  }
  // New numbers continue after the copied ones: a token is never handed out twice.
  for (const char* sql : {"SELECT setval(pg_get_serial_sequence('tasks', 'seq'), "
                          "greatest((SELECT max(seq) FROM tasks), 1))",
                          "SELECT setval(pg_get_serial_sequence('claims', 'token'), "
                          "greatest((SELECT max(token) FROM claims), 1))",
                          "SELECT setval(pg_get_serial_sequence('events', 'id'), "
                          "greatest((SELECT max(id) FROM events), 1))",
                          "SELECT setval(pg_get_serial_sequence('notify_deliveries', 'seq'), "
                          "greatest((SELECT max(seq) FROM notify_deliveries), 1))"}) {
    to.Queue(sql, {});
  }
  return to.Sync();
}

}  // namespace

Result<MigrateReport> CopySqliteToPostgres(const std::string& from, const std::string& to) {
  if (IsPostgresUrl(from) || from == ":memory:") {
    return Error::InvalidArgument("tx migrate copies a SQLite store; " + from + " is not one");
  }
  if (!IsPostgresUrl(to)) {
    return Error::InvalidArgument("--to must be a postgresql:// URL, not '" + to + "'");
  }
  if (!std::filesystem::exists(from)) {
    return Error::NotFound("no store at " + from + " (run tx init)");
  }
  // Both at the current schema: the source upgraded in place (as any tx would), the destination
  // created if new.
  TX_RETURN_IF_ERROR(Open({from, false}));
  TX_RETURN_IF_ERROR(Open({to, true}));

  TX_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Db> source,
                      sqlite::Db::Open(from, false, std::chrono::seconds(10)));
  TX_RETURN_IF_ERROR(postgres::pq::Load());
  TX_ASSIGN_OR_RETURN(std::unique_ptr<postgres::Conn> dest,
                      postgres::Conn::Open(to, /*reconnect_timeout_ms=*/0));
  MigrateReport report;
  TX_RETURN_IF_ERROR(source->Exec("BEGIN"));  // one snapshot of the source (WAL)
  dest->Queue("BEGIN", {});
  Status copied = CopyAll(*source, *dest, report);
  (void)source->Exec("COMMIT");
  if (!copied.ok()) {
    dest->Rollback();
    return copied.error();
  }
  TX_RETURN_IF_ERROR(dest->Commit());
  return report;
}

}  // namespace tx::store
