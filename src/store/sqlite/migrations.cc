#include "store/sqlite/migrations.h"

#include <iterator>

namespace tx::store::sqlite {

namespace {
struct Migration {
  int version;
  const char* sql;
};

constexpr Migration kMigrations[] = {
    {1, R"sql(
-- Status checks are OR chains, not IN lists: SQLite builds an ephemeral index for "x IN (3 or
-- more constants)" on every execution of every INSERT or UPDATE that checks it (sqlite3BtreeOpen +
-- close per statement), which cost ~10% of the CPU of a claim-and-complete cycle.
CREATE TABLE tasks (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  instructions TEXT NOT NULL DEFAULT '',
  deliverables TEXT NOT NULL DEFAULT '',
  steps TEXT NOT NULL DEFAULT '[]',
  priority INTEGER NOT NULL DEFAULT 0,
  queue TEXT NOT NULL DEFAULT 'default',
  requires TEXT NOT NULL DEFAULT '[]',
  after TEXT NOT NULL DEFAULT '[]',
  owner TEXT NOT NULL DEFAULT '',
  workdir TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '[]',
  agent TEXT NOT NULL DEFAULT '',
  timeout_ms INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  review INTEGER NOT NULL DEFAULT 0,
  repo TEXT NOT NULL DEFAULT '',
  base_branch TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}',
  result TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status = 'blocked' OR status = 'ready' OR status = 'running' OR
         status = 'review' OR status = 'approved' OR status = 'done' OR
         status = 'failed' OR status = 'cancelled'),
  attempt INTEGER NOT NULL DEFAULT 0,
  run_after INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL DEFAULT 0,
  finished_at INTEGER NOT NULL DEFAULT 0
);
-- The claim path walks this partial index in (priority desc, seq) order: flat in queue size.
-- Indexes are kept few and partial: every page a transaction dirties is written to the WAL.
CREATE INDEX tasks_ready ON tasks(queue, priority DESC, seq) WHERE status = 'ready';

CREATE TABLE task_deps (
  task_id TEXT NOT NULL,
  depends_on TEXT NOT NULL,
  PRIMARY KEY (task_id, depends_on)
) WITHOUT ROWID;
CREATE INDEX task_deps_reverse ON task_deps(depends_on, task_id);

CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  slot TEXT NOT NULL DEFAULT '',
  hostname TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  capabilities TEXT NOT NULL DEFAULT '[]',
  queues TEXT NOT NULL DEFAULT '["default"]',
  status TEXT NOT NULL CHECK (status = 'starting' OR status = 'idle' OR status = 'busy' OR
         status = 'paused' OR status = 'stopping' OR status = 'stopped' OR
         status = 'dead'),
  heartbeat_interval_ms INTEGER NOT NULL,
  registered_at INTEGER NOT NULL,
  last_heartbeat_at INTEGER NOT NULL DEFAULT 0,
  current_task_id TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}'
);
-- No index on status: no query can use one (ListWorkers filters with "?1 = '[]' OR status IN
-- (...)"), and a worker's status changes (idle <-> busy) on every claim and completion.

-- token is the fencing token. Claims are never deleted (a trigger below refuses it), so the
-- rowid alone only grows; AUTOINCREMENT would add a sqlite_sequence write to
-- every claim.
CREATE TABLE claims (
  token INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL REFERENCES tasks(id),
  worker_id TEXT NOT NULL REFERENCES workers(id),
  attempt INTEGER NOT NULL,
  claimed_at INTEGER NOT NULL,
  lease_ms INTEGER NOT NULL,
  lease_expires_at INTEGER NOT NULL,
  renewed_count INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL CHECK (status = 'active' OR status = 'released' OR status = 'expired' OR
         status = 'completed'),
  ended_at INTEGER NOT NULL DEFAULT 0,
  end_reason TEXT NOT NULL DEFAULT '',
  exit_code INTEGER
);
-- At most one active claim per task. Active claims are few (one per busy worker), so the
-- reconciler's scans of them go through this index too.
CREATE UNIQUE INDEX claims_one_active ON claims(task_id) WHERE status = 'active';
CREATE INDEX claims_task ON claims(task_id, token);
-- Deleting a claim could let its token be handed out again (the rowid is max + 1), which would
-- break fencing: refuse it outright.
CREATE TRIGGER claims_never_deleted BEFORE DELETE ON claims
BEGIN SELECT RAISE(ABORT, 'claims are never deleted: their tokens fence'); END;

-- Events are never deleted out of order, so the rowid alone only grows.
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  worker_id TEXT NOT NULL DEFAULT '',
  data TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE orchestrator (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  status TEXT NOT NULL DEFAULT 'stopped'
    CHECK (status = 'stopped' OR status = 'starting' OR status = 'running' OR
         status = 'stopping'),
  pid INTEGER NOT NULL DEFAULT 0,
  hostname TEXT NOT NULL DEFAULT '',
  started_at INTEGER NOT NULL DEFAULT 0,
  last_reconcile_at INTEGER NOT NULL DEFAULT 0,
  last_report TEXT NOT NULL DEFAULT '{}',
  config TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO orchestrator (id) VALUES (1);
)sql"},
    {2, R"sql(
-- What an operator asked of a running worker (tx worker pause|resume|stop); the worker clears it
-- once it has acted.
ALTER TABLE workers ADD COLUMN request TEXT NOT NULL DEFAULT ''
  CHECK (request = '' OR request = 'pause' OR request = 'resume' OR request = 'stop' OR
         request = 'stop-now');
)sql"},
    {3, R"sql(
-- What an operator asked of the running orchestrator (tx orchestrator scale|stop), as a JSON
-- object it consumes; the pool it publishes for tx orchestrator status; and when it last
-- refreshed the row (a holder on another host that stops refreshing it is presumed dead).
ALTER TABLE orchestrator ADD COLUMN request TEXT NOT NULL DEFAULT '{}';
ALTER TABLE orchestrator ADD COLUMN pool TEXT NOT NULL DEFAULT '{}';
ALTER TABLE orchestrator ADD COLUMN seen_at INTEGER NOT NULL DEFAULT 0;
-- Live workers are few; stopped and dead ones pile up (every registration is a new row), and
-- registration, the reconciler and the orchestrator look only at the live ones.
CREATE INDEX workers_live ON workers(status) WHERE status <> 'stopped' AND status <> 'dead';
)sql"},
    {4, R"sql(
-- One row per orchestrator, keyed by its pool ("<host>:<.tx directory>"): a PostgreSQL store is
-- shared by orchestrators on many hosts, and the schema is the same on both backends. The old
-- singleton row keeps what is the store's alone: its reconciler's last pass and which
-- orchestrator leads it. A worker records the pool it belongs to, so that slots are the pool's.
CREATE TABLE orchestrators (
  id TEXT PRIMARY KEY,
  dir TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'stopped' CHECK (status = 'stopped' OR status = 'starting' OR
                                                status = 'running' OR status = 'stopping'),
  pid INTEGER NOT NULL DEFAULT 0,
  hostname TEXT NOT NULL DEFAULT '',
  started_at INTEGER NOT NULL DEFAULT 0,
  seen_at INTEGER NOT NULL DEFAULT 0,
  config TEXT NOT NULL DEFAULT '{}',
  request TEXT NOT NULL DEFAULT '{}',
  pool TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
ALTER TABLE orchestrator ADD COLUMN leader TEXT NOT NULL DEFAULT '';
ALTER TABLE orchestrator ADD COLUMN leader_since INTEGER NOT NULL DEFAULT 0;
UPDATE orchestrator SET status = 'stopped', request = '{}', pool = '{}';
ALTER TABLE workers ADD COLUMN pool TEXT NOT NULL DEFAULT '';
)sql"},
    {5, R"sql(
-- Claims refer to their task and worker by id, and neither is ever deleted. PostgreSQL's store
-- keeps the rule by these triggers alone (its foreign keys cost a lookup per claim); here the
-- foreign keys stay as well, and the triggers make the rule the same on both backends.
CREATE TRIGGER tasks_never_deleted BEFORE DELETE ON tasks
BEGIN SELECT RAISE(ABORT, 'tasks are never deleted: claims refer to them'); END;
CREATE TRIGGER workers_never_deleted BEFORE DELETE ON workers
BEGIN SELECT RAISE(ABORT, 'workers are never deleted: claims refer to them'); END;
)sql"},
    {6, R"sql(
-- The usage ledger: one row per agent attempt, keyed by its claim's token (docs/agents.md).
-- Costs are whole micro-dollars, so sums are exact and alike on both backends.
CREATE TABLE attempt_usage (
  token INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '',
  agent TEXT NOT NULL DEFAULT '',
  account TEXT NOT NULL DEFAULT '',
  queue TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd INTEGER NOT NULL DEFAULT 0,
  cost_estimated INTEGER NOT NULL DEFAULT 0,
  turns INTEGER NOT NULL DEFAULT 0,
  denials TEXT NOT NULL DEFAULT '[]',
  started_at INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX attempt_usage_task ON attempt_usage(task_id);
-- Daily budgets sum the costs of one day.
CREATE INDEX attempt_usage_updated ON attempt_usage(updated_at);
-- Agent profiles (or accounts of one) limited until a reset time, fleet-wide.
CREATE TABLE agent_limits (
  profile TEXT NOT NULL,
  account TEXT NOT NULL DEFAULT '',
  until INTEGER NOT NULL,
  since INTEGER NOT NULL DEFAULT 0,
  reason TEXT NOT NULL DEFAULT '',
  task_id TEXT NOT NULL DEFAULT '',
  strikes INTEGER NOT NULL DEFAULT 0,
  resumed INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (profile, account)
) WITHOUT ROWID;
-- What has been announced once (a daily budget reached, by scope and day).
CREATE TABLE notices (
  key TEXT PRIMARY KEY,
  at INTEGER NOT NULL
) WITHOUT ROWID;
)sql"},
    {7, R"sql(
-- Steady-clock readings (core/clock.h): milliseconds of this machine's CLOCK_BOOTTIME, which a
-- step of the wall clock does not move, valid for the boot that steady_boot names; silence is
-- judged on them. NULL: judged on the wall clock.
ALTER TABLE workers ADD COLUMN beat_steady INTEGER;
ALTER TABLE claims ADD COLUMN lease_expires_steady INTEGER;
CREATE TABLE steady_boot (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  boot TEXT NOT NULL
);
)sql"},
    {8, R"sql(
-- A task may wait for a person's answer (status 'waiting', tx task ask). Widening a CHECK
-- changes no row, so the table's SQL is edited in place (sqlite.org/lang_altertable.html, "other
-- kinds of table schema changes"); the CREATE TABLE below bumps the schema cookie, so every
-- other connection reloads the schema.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'status = ''failed'' OR status = ''cancelled'')',
                     'status = ''failed'' OR status = ''cancelled'' OR status = ''waiting'')')
 WHERE type = 'table' AND name = 'tasks';
PRAGMA writable_schema = RESET;
-- Notifications (docs/notifications.md): the event log is the outbox. notify_cursor is the last
-- event fanned out to the sinks; each delivery of an event to a sink is a row here, retried until
-- it is delivered or its 24 hours run out. A new store starts at its first event; an older one
-- at its newest, so turning notifications on does not replay history.
CREATE TABLE notify_cursor (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  event_id INTEGER NOT NULL
);
INSERT INTO notify_cursor (id, event_id) SELECT 1, coalesce(max(id), 0) FROM events;
CREATE TABLE notify_deliveries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  sink TEXT NOT NULL,
  event_id INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status = 'pending' OR status = 'delivered' OR status = 'failed'),
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  next_at INTEGER NOT NULL,
  last_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notify_due ON notify_deliveries(next_at) WHERE status = 'pending';
)sql"},
    {9, R"sql(
-- The heartbeat interval a worker promises while busy (core/worker.h); 0 = its heartbeat
-- interval, as every worker registered before this version promised.
ALTER TABLE workers ADD COLUMN busy_heartbeat_interval_ms INTEGER NOT NULL DEFAULT 0;
)sql"},
};
}  // namespace

int LatestSchemaVersion() { return std::prev(std::end(kMigrations))->version; }

Status Migrate(Db& db, const std::string& path) {
  TX_ASSIGN_OR_RETURN(std::int64_t current, db.QueryInt("PRAGMA user_version"));
  if (current > LatestSchemaVersion()) {
    return Error::Unavailable("the store at " + path + " has schema version " +
                              std::to_string(current) + ", newer than this tx knows (" +
                              std::to_string(LatestSchemaVersion()) + "); upgrade tx");
  }
  for (const auto& m : kMigrations) {
    if (m.version <= current) continue;
    TX_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
    // Another process may have migrated while we waited for the write lock.
    auto again = db.QueryInt("PRAGMA user_version");
    if (!again.ok() || *again >= m.version) {
      TX_RETURN_IF_ERROR(db.Exec("ROLLBACK"));
      if (!again.ok()) return again.error();
      continue;
    }
    Status s = db.Exec(m.sql);
    if (s.ok()) {
      std::string bump = "PRAGMA user_version = " + std::to_string(m.version);
      s = db.Exec(bump.c_str());
    }
    if (!s.ok()) {
      (void)db.Exec("ROLLBACK");
      return Error(s.error().code(), "migration " + std::to_string(m.version) + " of " + path +
                                         " failed: " + s.error().message());
    }
    TX_RETURN_IF_ERROR(db.Exec("COMMIT"));
  }
  return Ok();
}

}  // namespace tx::store::sqlite
