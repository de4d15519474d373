#include "store/postgres/pg_store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "core/duration.h"
#include "store/location.h"
#include "store/postgres/change_watch.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_clock.h"
#include "store/postgres/pg_conn.h"
#include "store/postgres/pg_lead.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_sql.h"
#include "store/postgres/pg_write_behind.h"
#include "store/row_codec.h"

namespace tx::store::postgres {

namespace {

// How many times Write runs a transaction that keeps failing on a serialization conflict or a
// dropped connection before it gives up with that error.
constexpr int kMaxAttempts = 50;

// In a write transaction (READ COMMITTED) every task, claim and worker row that is read is
// locked FOR UPDATE until the commit: a service's read-modify-write of a row then runs as if
// alone, as under SQLite's single writer, while transactions on other rows go on in parallel.
// A statement that waits for a lock sees the row as its holder committed it.
//
// Round trips: writes are queued (Conn::Queue) and go with the next read or the commit. Rows
// this transaction has locked are kept here once read (and kept up to date by its own writes,
// the only ones that can change them until the commit), so reading one again, or one fetched
// along with another (a claim's task and worker, a picked task's claim count), costs nothing.
class PgTxn final : public Txn {
 public:
  PgTxn(Conn& conn, bool write) : c_(conn), write_(write), writes_(conn) {}

  bool made_ready() const { return made_ready_; }
  void WakeWatchersOnCommit() override { made_ready_ = true; }

  // Sends the writes kept back (WriteBehind::Flush).
  void FlushWrites() { writes_.Flush(); }

  Result<std::optional<Task>> GetTask(std::string_view id) override {
    if (write_) {
      if (auto it = tasks_.find(std::string(id)); it != tasks_.end()) return {it->second};
      TX_ASSIGN_OR_RETURN(Rows r, Exec(GET_TASK " FOR UPDATE", Params().Add(id)));
      TX_ASSIGN_OR_RETURN(std::optional<Task> t, ReadOne<Task>(r, ReadTask));
      if (t) tasks_[t->id] = *t;
      return t;
    }
    TX_ASSIGN_OR_RETURN(Rows r, Exec(GET_TASK, Params().Add(id)));
    return ReadOne<Task>(r, ReadTask);
  }

  Result<std::vector<Task>> ListTasks(const TaskFilter& f) override {
    Params p;
    p.Add(f.status ? ToString(*f.status) : std::string_view())
        .Add(f.queue.value_or(""))
        .Add(f.owner.value_or(""));
    if (f.limit > 0) {
      p.Add(f.limit);
    } else {
      p.AddNull();  // LIMIT NULL: no limit
    }
    p.Add(f.cursor)
        .Add(f.agent.value_or(""))
        .Add(f.search)
        .Add(f.created_since)
        .Add(f.created_until);
    TX_ASSIGN_OR_RETURN(Rows r, Exec(f.newest_first ? "SELECT " TASK_COLS " FROM tasks " TASK_FILTER
                                                      "AND ($5 = 0 OR seq < $5) "
                                                      "ORDER BY seq DESC LIMIT $4"
                                                    : "SELECT " TASK_COLS " FROM tasks " TASK_FILTER
                                                      "AND seq > $5 ORDER BY seq LIMIT $4",
                                     p));
    return ReadAll<Task>(r, ReadTask);
  }

  Result<bool> InsertNewTask(Task& t) override {
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("INSERT INTO tasks (" TASK_COLS ") VALUES (DEFAULT, $1, $2, $3, $4, $5, "
                     "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
                     "$21, $22, $23, $24, $25, $26, $27, $28, $29) "
                     "ON CONFLICT (id) DO NOTHING RETURNING seq",
                     TaskParams(t)));
    if (r.empty()) return false;
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    t.seq = r.Int(0, 0);
    if (write_) tasks_[t.id] = t;
    if (!t.after.empty()) TX_RETURN_IF_ERROR(ReplaceDependencies(t.id, t.after));
    return true;
  }

  Status UpdateTask(const Task& t) override {
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    Params p = TaskParams(t);
    p.Add("task " + t.id + " not found");
    Queue(
        "WITH u AS (UPDATE tasks SET title = $2, description = $3, instructions = $4, "
        "deliverables = $5, steps = $6, priority = $7, queue = $8, "
        "requires = $9, after = $10, owner = $11, workdir = $12, "
        "command = $13, agent = $14, timeout_ms = $15, max_attempts = $16, "
        "review = $17, repo = $18, base_branch = $19, metadata = $20, "
        "result = $21, error = $22, status = $23, attempt = $24, "
        "run_after = $25, created_at = $26, updated_at = $27, "
        "started_at = $28, finished_at = $29 WHERE id = $1 RETURNING 1) " EXPECT_ONE("$30"),
        p);
    if (auto it = tasks_.find(t.id); it != tasks_.end()) {
      std::int64_t seq = it->second.seq;
      it->second = t;
      it->second.seq = seq;
    }
    return Ok();
  }

  Status UpdateTaskState(const Task& t) override {
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    // Kept back (FlushWrites): a second write of the row replaces the first.
    writes_.UpdateTaskState(t);
    if (auto it = tasks_.find(t.id); it != tasks_.end()) {
      Task& cached = it->second;
      cached.status = t.status;
      cached.attempt = t.attempt;
      cached.run_after = t.run_after;
      cached.result = t.result;
      cached.error = t.error;
      cached.updated_at = t.updated_at;
      cached.started_at = t.started_at;
      cached.finished_at = t.finished_at;
    }
    return Ok();
  }

  Status ReplaceDependencies(const std::string& task_id,
                             const std::vector<std::string>& after) override {
    dependents_.clear();
    Queue("DELETE FROM task_deps WHERE task_id = $1", Params().Add(task_id));
    for (const auto& dep : after) {
      Queue(
          "INSERT INTO task_deps (task_id, depends_on) VALUES ($1, $2) "
          "ON CONFLICT DO NOTHING",
          Params().Add(task_id).Add(dep));
    }
    return Ok();
  }

  // One statement over all the worker's queues; the row it returns is locked, and rows other
  // transactions have locked (being claimed right now) are skipped, not waited for.
  Result<std::optional<Task>> PickNextReady(const PickCriteria& c) override {
    Params p = PickParams(c);
    // One queue (the usual case) walks tasks_ready in order and stops at the first row.
    bool one = c.queues.size() == 1;
    bool gated = c.gated();
    if (gated) p.Add(ListText(c.blocked_agents)).Add(ListText(c.blocked_agent_queues));
    if (!write_) {
      const char* sql = gated
                            ? (one ? PICK_ONE_QUEUE_GATED PICK_ORDER : PICK_QUEUES_GATED PICK_ORDER)
                            : (one ? PICK_ONE_QUEUE PICK_ORDER : PICK_QUEUES PICK_ORDER);
      TX_ASSIGN_OR_RETURN(Rows r, Exec(sql, p));
      return ReadOne<Task>(r, ReadTask);
    }
    Rows r, claims;
    if (gated) {
      Queue(one ? PICK_FOR_CLAIM(PICK_ONE_QUEUE_GATED) : PICK_FOR_CLAIM(PICK_QUEUES_GATED), p, &r);
    } else {
      Queue(one ? PICK_FOR_CLAIM(PICK_ONE_QUEUE) : PICK_FOR_CLAIM(PICK_QUEUES), p, &r);
    }
    Queue(PICKED_CLAIMS, {}, &claims);
    TX_RETURN_IF_ERROR(Sync());
    TX_ASSIGN_OR_RETURN(std::optional<Task> t, ReadOne<Task>(r, ReadTask));
    if (t) {
      tasks_[t->id] = *t;
      picked_[t->id] = Picked{claims.Int(0, 0), r.Int(0, kTaskCols)};
    }
    return t;
  }

  Result<std::vector<Task>> PickReady(const PickCriteria& c, int limit) override {
    if (!write_ || limit <= 1 || c.gated()) return Txn::PickReady(c, limit);
    Params p = PickParams(c);
    p.Add(limit);
    Rows r, claims;
    Queue(RESET_PICKED, {});
    Queue(c.queues.size() == 1 ? PICK_MANY_FOR_CLAIM(PICK_ONE_QUEUE)
                               : PICK_MANY_FOR_CLAIM(PICK_QUEUES),
          p, &r);
    Queue(PICKED_MANY_CLAIMS, {}, &claims);
    TX_RETURN_IF_ERROR(Sync());
    TX_ASSIGN_OR_RETURN(std::vector<Task> out, ReadAll<Task>(r, ReadTask));
    for (int i = 0; i < r.size(); ++i) picked_[out[i].id].token = r.Int(i, kTaskCols);
    for (int i = 0; i < claims.size(); ++i) picked_[claims.Text(i, 0)].claims = claims.Int(i, 1);
    for (const Task& t : out) tasks_[t.id] = t;
    return out;
  }

  Result<std::optional<Millis>> NextReadyAt(const PickCriteria& c) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT min(run_after) FROM tasks WHERE status = 'ready' "
                                     "AND queue IN (SELECT jsonb_array_elements_text($1::jsonb)) "
                                     "AND run_after > $2",
                                     Params().Add(ListText(c.queues)).Add(c.now)));
    if (r.empty() || r.IsNull(0, 0)) return std::optional<Millis>();
    return std::optional<Millis>(r.Int(0, 0));
  }

  Result<std::vector<std::string>> ListDependents(std::string_view task_id) override {
    if (auto it = dependents_.find(std::string(task_id)); it != dependents_.end()) {
      return it->second;
    }
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT task_id FROM task_deps WHERE depends_on = $1 "
                                     "ORDER BY task_id",
                                     Params().Add(task_id)));
    return FirstColumn(r);
  }

  Result<std::vector<std::string>> ListRunningTasksWithoutActiveClaim() override {
    TX_ASSIGN_OR_RETURN(Rows r,
                        Exec("SELECT id FROM tasks t WHERE status = 'running' AND NOT EXISTS "
                             "(SELECT 1 FROM claims c WHERE c.task_id = t.id AND "
                             "c.status = 'active') ORDER BY seq"));
    return FirstColumn(r);
  }

  Result<std::vector<StatusCount>> CountTasks() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT status, queue, count(*) FROM tasks "
                                     "GROUP BY status, queue ORDER BY queue, status::text"));
    std::vector<StatusCount> out;
    for (int i = 0; i < r.size(); ++i) {
      TX_ASSIGN_OR_RETURN(TaskStatus status, ParseTaskStatus(r.Text(i, 0)));
      out.push_back(StatusCount{status, r.Text(i, 1), r.Int(i, 2)});
    }
    return out;
  }

  Result<std::int64_t> CountReadyTasks() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT count(*) FROM tasks WHERE status = 'ready'"));
    return r.Int(0, 0);
  }

  Status InsertClaim(Claim& c) override {
    auto picked = picked_.find(c.task_id);
    if (picked != picked_.end() && picked->second.token > 0) {
      // The token the pick reserved: nothing to wait for.
      c.token = picked->second.token;
      picked->second.token = 0;
      ++picked->second.claims;
      // Kept back (FlushWrites), with the token it already has.
      writes_.InsertClaim(c);
      return Ok();
    }
    if (picked != picked_.end()) ++picked->second.claims;
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("INSERT INTO claims (task_id, worker_id, attempt, claimed_at, lease_ms, "
                     "lease_expires_at, renewed_count, status, ended_at, end_reason, "
                     "exit_code) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
                     "RETURNING token",
                     ClaimInsertParams(c)));
    c.token = r.Int(0, 0);
    return Ok();
  }

  Status UpdateClaim(const Claim& c) override {
    // Kept back (FlushWrites). A claim inserted in this transaction is still to be sent: its
    // insert takes the new values.
    writes_.UpdateClaim(c);
    if (auto it = claims_.find(c.token); it != claims_.end()) it->second = c;
    return Ok();
  }

  Result<std::optional<Claim>> GetClaim(std::int64_t token) override {
    if (!write_) {
      TX_ASSIGN_OR_RETURN(Rows r, Exec(GET_CLAIM, Params().Add(token)));
      return ReadOne<Claim>(r, ReadClaim);
    }
    if (auto it = claims_.find(token); it != claims_.end()) return {it->second};
    Rows r, dependents;
    Queue(GET_CLAIM_AND_ROWS, Params().Add(token), &r);
    Queue(DEPENDENTS_OF_TOKEN, Params().Add(token), &dependents);
    TX_RETURN_IF_ERROR(Sync());
    if (r.empty()) return std::optional<Claim>();
    TX_ASSIGN_OR_RETURN(const Claim* claim, KeepClaimRow(r, 0));
    dependents_[claim->task_id] = JsonList(dependents.View(0, 0));
    return std::optional<Claim>(*claim);
  }

  Status LockClaims(const std::vector<std::int64_t>& tokens) override {
    if (!write_ || tokens.empty()) return Ok();
    std::string list = "{";
    for (std::int64_t t : tokens) {
      if (list.size() > 1) list += ',';
      list += std::to_string(t);
    }
    list += '}';
    Rows r, dependents;
    Queue(GET_CLAIMS_AND_ROWS, Params().Add(list), &r);
    Queue(DEPENDENTS_OF_TOKENS, Params().Add(list), &dependents);
    TX_RETURN_IF_ERROR(Sync());
    for (int i = 0; i < r.size(); ++i) {
      Result<const Claim*> kept = KeepClaimRow(r, i);
      if (!kept.ok()) return kept.error();
    }
    for (int i = 0; i < dependents.size(); ++i) {
      dependents_[dependents.Text(i, 0)] = JsonList(dependents.View(i, 1));
    }
    return Ok();
  }

  Result<std::optional<Claim>> GetActiveClaimForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec(write_ ? ACTIVE_CLAIM " FOR UPDATE" : ACTIVE_CLAIM, Params().Add(task_id)));
    return ReadOne<Claim>(r, ReadClaim);
  }

  Result<std::vector<Claim>> ListClaimsForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " CLAIM_COLS " FROM claims "
                                     "WHERE task_id = $1 ORDER BY token",
                                     Params().Add(task_id)));
    return ReadAll<Claim>(r, ReadClaim);
  }

  Result<std::vector<WorkerAttempt>> ListAttemptsOfWorker(std::string_view worker_id,
                                                          std::int64_t before_token,
                                                          int limit) override {
    Params p;
    p.Add(worker_id).Add(before_token);
    if (limit > 0) {
      p.Add(limit);
    } else {
      p.AddNull();
    }
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("SELECT c.*, coalesce(t.title, ''), u.cost_micro_usd, u.cost_estimated "
                     "FROM (SELECT " CLAIM_COLS " FROM claims WHERE worker_id = $1 "
                     "AND ($2::bigint = 0 OR token < $2::bigint) "
                     "ORDER BY token DESC LIMIT $3) c "
                     "LEFT JOIN tasks t ON t.id = c.task_id "
                     "LEFT JOIN attempt_usage u ON u.token = c.token ORDER BY c.token DESC",
                     p));
    std::vector<WorkerAttempt> out(r.size());
    for (int i = 0; i < r.size(); ++i) {
      WorkerAttempt& a = out[i];
      TX_RETURN_IF_ERROR(ReadClaim(r, i, a.claim));
      a.task_title = r.Text(i, 12);
      a.has_usage = !r.IsNull(i, 13);
      if (a.has_usage) {
        a.cost_usd = MicroToUsd(r.Int(i, 13));
        a.cost_estimated = r.Int(i, 14) != 0;
      }
    }
    return out;
  }

  Result<std::vector<Claim>> ListActiveClaims() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? ACTIVE_CLAIMS " FOR UPDATE" : ACTIVE_CLAIMS));
    return ReadAll<Claim>(r, ReadClaim);
  }

  Result<std::vector<Claim>> ListActiveClaimsExpiredAt(const Moment& at) override {
    Millis now = at.wall;  // the server's clock: PostgreSQL rows have no steady readings
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec(write_ ? EXPIRED_CLAIMS " FOR UPDATE" : EXPIRED_CLAIMS, Params().Add(now)));
    return ReadAll<Claim>(r, ReadClaim);
  }

  Result<int> CountClaimsForTask(std::string_view task_id) override {
    if (auto it = picked_.find(std::string(task_id)); it != picked_.end()) {
      return static_cast<int>(it->second.claims);
    }
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("SELECT count(*) FROM claims WHERE task_id = $1", Params().Add(task_id)));
    return static_cast<int>(r.Int(0, 0));
  }

  Status InsertWorker(const Worker& w) override {
    Queue("INSERT INTO workers (" WORKER_COLS
          ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
          "$10, $11, $12, $13, $14, $15, $16, $17)",
          WorkerParams(w));
    if (write_) workers_[w.id] = w;
    return Ok();
  }

  Status UpdateWorker(const Worker& w) override {
    Params p = WorkerParams(w);
    p.Add("worker " + w.id + " not found");
    Queue(
        "WITH u AS (UPDATE workers SET name = $2, slot = $3, hostname = $4, pid = $5, "
        "capabilities = $6, queues = $7, status = $8, "
        "heartbeat_interval_ms = $9, registered_at = $10, "
        "last_heartbeat_at = $11, current_task_id = $12, reason = $13, "
        "metadata = $14, request = $15, pool = $16, busy_heartbeat_interval_ms = $17 "
        "WHERE id = $1 RETURNING 1) " EXPECT_ONE("$18"),
        p);
    if (auto it = workers_.find(w.id); it != workers_.end()) it->second = w;
    return Ok();
  }

  // One statement for the lot: the rows come as one JSON array (jsonb_to_recordset), so a batch
  // of beats costs one parse, plan and executor start instead of one per worker. The ANY(ARRAY())
  // term makes the planner find the rows by primary key rather than hash the whole table.
  Status UpdateWorkers(const std::vector<Worker>& workers) override {
    if (workers.empty()) return Ok();
    if (workers.size() == 1) return UpdateWorker(workers.front());
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& w : workers) {
      rows.push_back({{"id", w.id},
                      {"name", w.name},
                      {"slot", w.slot},
                      {"hostname", w.hostname},
                      {"pid", w.pid},
                      {"capabilities", ListText(w.capabilities)},
                      {"queues", ListText(w.queues)},
                      {"status", ToString(w.status)},
                      {"heartbeat_interval_ms", w.heartbeat_interval_ms},
                      {"registered_at", w.registered_at},
                      {"last_heartbeat_at", w.last_heartbeat_at},
                      {"current_task_id", w.current_task_id},
                      {"reason", w.reason},
                      {"metadata", w.metadata.dump()},
                      {"request", ToString(w.request)},
                      {"pool", w.pool},
                      {"busy_heartbeat_interval_ms", w.busy_heartbeat_interval_ms}});
    }
    Params p;
    p.Add(rows.dump()).Add(static_cast<std::int64_t>(workers.size()));
    p.Add("of " + std::to_string(workers.size()) + " workers to update, some were not found");
    Queue(
        "WITH v AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(id text, name text, "
        "slot text, hostname text, pid bigint, capabilities text, queues text, status text, "
        "heartbeat_interval_ms bigint, registered_at bigint, last_heartbeat_at bigint, "
        "current_task_id text, reason text, metadata text, request text, pool text, "
        "busy_heartbeat_interval_ms bigint)), "
        "u AS (UPDATE workers w SET name = v.name, slot = v.slot, hostname = v.hostname, "
        "pid = v.pid, capabilities = v.capabilities, queues = v.queues, "
        "status = v.status::tx_worker_status, heartbeat_interval_ms = v.heartbeat_interval_ms, "
        "registered_at = v.registered_at, last_heartbeat_at = v.last_heartbeat_at, "
        "current_task_id = v.current_task_id, reason = v.reason, metadata = v.metadata, "
        "request = v.request::tx_worker_request, pool = v.pool, "
        "busy_heartbeat_interval_ms = v.busy_heartbeat_interval_ms FROM v WHERE w.id = v.id "
        "AND w.id = ANY(ARRAY(SELECT id FROM v)) "
        "RETURNING 1) "
        "SELECT tx_expect_one((count(*) = $2)::int, $3) FROM u",
        p);
    for (const auto& w : workers) {
      if (auto it = workers_.find(w.id); it != workers_.end()) it->second = w;
    }
    return Ok();
  }

  Result<std::optional<Worker>> GetWorker(std::string_view id) override {
    if (write_) {
      if (auto it = workers_.find(std::string(id)); it != workers_.end()) return {it->second};
      TX_ASSIGN_OR_RETURN(Rows r, Exec(GET_WORKER " FOR UPDATE", Params().Add(id)));
      TX_ASSIGN_OR_RETURN(std::optional<Worker> w, ReadOne<Worker>(r, ReadWorker));
      if (w) workers_[w->id] = *w;
      return w;
    }
    TX_ASSIGN_OR_RETURN(Rows r, Exec(GET_WORKER, Params().Add(id)));
    return ReadOne<Worker>(r, ReadWorker);
  }

  Result<std::vector<Worker>> ListWorkers(const std::vector<WorkerStatus>& statuses) override {
    std::vector<std::string> names;
    bool only_live = !statuses.empty();
    for (auto st : statuses) {
      names.emplace_back(ToString(st));
      only_live = only_live && IsLive(st);
    }
    const char* sql = only_live ? (write_ ? LIVE_WORKERS " FOR UPDATE" : LIVE_WORKERS)
                                : (write_ ? SOME_WORKERS " FOR UPDATE" : SOME_WORKERS);
    TX_ASSIGN_OR_RETURN(Rows r, Exec(sql, Params().Add(ListText(names))));
    TX_ASSIGN_OR_RETURN(std::vector<Worker> out, ReadAll<Worker>(r, ReadWorker));
    if (write_) {
      for (const auto& w : out) workers_[w.id] = w;  // as this transaction left them: locked
    }
    return out;
  }

  Result<std::vector<Worker>> GetWorkers(const std::vector<std::string>& ids) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? SOME_WORKERS_BY_ID " FOR UPDATE" : SOME_WORKERS_BY_ID,
                                     Params().Add(ListText(ids))));
    TX_ASSIGN_OR_RETURN(std::vector<Worker> out, ReadAll<Worker>(r, ReadWorker));
    if (write_) {
      for (const auto& w : out) workers_[w.id] = w;
    }
    return out;
  }

  Result<std::vector<Worker>> ListLiveWorkersInSlot(std::string_view pool,
                                                    std::string_view slot) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? SLOT_WORKERS " FOR UPDATE" : SLOT_WORKERS,
                                     Params().Add(slot).Add(pool)));
    TX_ASSIGN_OR_RETURN(std::vector<Worker> out, ReadAll<Worker>(r, ReadWorker));
    if (write_) {
      for (const auto& w : out) workers_[w.id] = w;
    }
    return out;
  }

  Status AppendEvent(Event& e) override {
    FenceEvents();
    TX_ASSIGN_OR_RETURN(
        Rows r,
        Exec("INSERT INTO events (type, at, task_id, worker_id, data) "
             "VALUES ($1, $2, $3, $4, $5) RETURNING id",
             Params().Add(e.type).Add(e.at).Add(e.task_id).Add(e.worker_id).Add(e.data.dump())));
    e.id = r.Int(0, 0);
    return Ok();
  }

  Status AppendEventData(const std::string& type, Millis at, const std::string& task_id,
                         const std::string& worker_id, std::string_view data) override {
    FenceEvents();
    writes_.AppendEvent(type, at, task_id, worker_id, data);  // FlushWrites
    return Ok();
  }

  Result<std::vector<Event>> ListEvents(std::int64_t after_id, int limit) override {
    TX_ASSIGN_OR_RETURN(std::vector<StoredEvent> stored, ListStoredEvents(after_id, limit));
    return Parsed(std::move(stored));
  }

  Result<std::vector<StoredEvent>> ListStoredEvents(std::int64_t after_id, int limit) override {
    Params p;
    p.Add(after_id);
    if (limit > 0) {
      p.Add(limit);
    } else {
      p.AddNull();
    }
    // Only events older than the horizon (tx_event_horizon, migrations.cc): a follower never
    // steps past an id that is still to commit.
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT id, type, at, task_id, worker_id, data "
                                     "FROM events WHERE id > $1 AND id < "
                                     "(SELECT tx_event_horizon()) ORDER BY id LIMIT $2",
                                     p));
    std::vector<StoredEvent> out;
    out.reserve(static_cast<std::size_t>(r.size()));
    for (int i = 0; i < r.size(); ++i) {
      out.push_back(StoredEvent{r.Int(i, 0), r.Text(i, 1), r.Int(i, 2), r.Text(i, 3), r.Text(i, 4),
                                r.Text(i, 5)});
    }
    return out;
  }

  Result<std::int64_t> LastEventId() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT coalesce(max(id), 0) FROM events "
                                     "WHERE id < (SELECT tx_event_horizon())"));
    return r.Int(0, 0);
  }

  Status PutUsage(const AttemptUsage& u) override {
    Params p;
    p.Add(u.token)
        .Add(u.task_id)
        .Add(u.attempt)
        .Add(u.worker_id)
        .Add(u.agent)
        .Add(u.account)
        .Add(u.queue)
        .Add(u.session_id)
        .Add(u.model)
        .Add(u.tokens.input)
        .Add(u.tokens.output)
        .Add(u.tokens.cache_read)
        .Add(u.tokens.cache_write)
        .Add(UsdToMicro(u.cost_usd))
        .Add(u.cost_estimated ? 1 : 0)
        .Add(u.turns)
        .Add(u.denials.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .Add(u.started_at)
        .Add(u.updated_at);
    Queue("INSERT INTO attempt_usage (" USAGE_COLS
          ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
          "$18, $19) ON CONFLICT (token) DO UPDATE SET task_id = EXCLUDED.task_id, "
          "attempt = EXCLUDED.attempt, worker_id = EXCLUDED.worker_id, agent = EXCLUDED.agent, "
          "account = EXCLUDED.account, queue = EXCLUDED.queue, session_id = EXCLUDED.session_id, "
          "model = EXCLUDED.model, input_tokens = EXCLUDED.input_tokens, "
          "output_tokens = EXCLUDED.output_tokens, cache_read_tokens = EXCLUDED.cache_read_tokens, "
          "cache_write_tokens = EXCLUDED.cache_write_tokens, "
          "cost_micro_usd = EXCLUDED.cost_micro_usd, cost_estimated = EXCLUDED.cost_estimated, "
          "turns = EXCLUDED.turns, denials = EXCLUDED.denials, started_at = EXCLUDED.started_at, "
          "updated_at = EXCLUDED.updated_at",
          p);
    return Ok();
  }

  Result<std::optional<AttemptUsage>> GetUsage(std::int64_t token) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " USAGE_COLS " FROM attempt_usage WHERE token = $1",
                                     Params().Add(token)));
    return ReadOne<AttemptUsage>(r, ReadUsage);
  }

  Result<std::vector<AttemptUsage>> ListUsageForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " USAGE_COLS " FROM attempt_usage WHERE task_id = $1 "
                                     "ORDER BY token",
                                     Params().Add(task_id)));
    return ReadAll<AttemptUsage>(r, ReadUsage);
  }

  Result<std::vector<AttemptUsage>> ListUsage(Millis since, Millis until) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " USAGE_COLS " FROM attempt_usage WHERE updated_at "
                                     ">= $1 AND ($2::bigint = 0 OR updated_at < $2::bigint) "
                                     "ORDER BY updated_at, token",
                                     Params().Add(since).Add(until)));
    return ReadAll<AttemptUsage>(r, ReadUsage);
  }

  Result<double> SumCostSince(Millis since, std::string_view queue) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT coalesce(sum(cost_micro_usd), 0) FROM attempt_usage "
                                     "WHERE updated_at >= $1 AND ($2 = '' OR queue = $2)",
                                     Params().Add(since).Add(queue)));
    return MicroToUsd(r.empty() ? 0 : r.Int(0, 0));
  }

  Result<double> TaskCost(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT coalesce(sum(cost_micro_usd), 0) FROM attempt_usage "
                                     "WHERE task_id = $1",
                                     Params().Add(task_id)));
    return MicroToUsd(r.empty() ? 0 : r.Int(0, 0));
  }

  Result<std::vector<std::pair<std::string, UsageTotal>>> SumUsageOfTasks(
      const std::vector<std::string>& task_ids) override {
    std::vector<std::pair<std::string, UsageTotal>> out;
    if (task_ids.empty()) return out;
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT task_id, count(*), sum(input_tokens), "
                                     "sum(output_tokens), sum(cache_read_tokens), "
                                     "sum(cache_write_tokens), sum(cost_micro_usd), "
                                     "max(cost_estimated), sum(turns) FROM attempt_usage "
                                     "WHERE task_id = ANY(ARRAY(SELECT "
                                     "jsonb_array_elements_text($1::jsonb))) "
                                     "GROUP BY task_id ORDER BY task_id",
                                     Params().Add(ListText(task_ids))));
    for (int i = 0; i < r.size(); ++i) out.emplace_back(r.Text(i, 0), UsageTotalOf(r, i));
    return out;
  }

  Result<std::vector<std::pair<std::string, UsageTotal>>> UsageByAgent() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT agent, count(*), sum(input_tokens), "
                                     "sum(output_tokens), sum(cache_read_tokens), "
                                     "sum(cache_write_tokens), sum(cost_micro_usd), "
                                     "max(cost_estimated), sum(turns) FROM attempt_usage "
                                     "GROUP BY agent ORDER BY agent"));
    std::vector<std::pair<std::string, UsageTotal>> out;
    for (int i = 0; i < r.size(); ++i) out.emplace_back(r.Text(i, 0), UsageTotalOf(r, i));
    return out;
  }

  Status PutAgentLimit(const AgentLimit& l) override {
    Queue("INSERT INTO agent_limits (" LIMIT_COLS
          ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (profile, account) DO UPDATE "
          "SET until = EXCLUDED.until, since = EXCLUDED.since, reason = EXCLUDED.reason, "
          "task_id = EXCLUDED.task_id, strikes = EXCLUDED.strikes, resumed = EXCLUDED.resumed",
          Params()
              .Add(l.profile)
              .Add(l.account)
              .Add(l.until)
              .Add(l.since)
              .Add(l.reason)
              .Add(l.task_id)
              .Add(l.strikes)
              .Add(l.resumed ? 1 : 0));
    return Ok();
  }

  Result<std::vector<AgentLimit>> ListAgentLimits() override {
    // Locked in a write: the limit is read, then replaced, by the attempt that met it.
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? LIST_LIMITS " FOR UPDATE" : LIST_LIMITS));
    return ReadAll<AgentLimit>(r, ReadLimit);
  }

  Result<bool> NoteOnce(std::string_view key, Millis at) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("INSERT INTO notices (key, at) VALUES ($1, $2) "
                                     "ON CONFLICT (key) DO NOTHING",
                                     Params().Add(key).Add(at)));
    return r.Affected() == 1;
  }

  Result<std::int64_t> GetNotifyCursor() override {
    // Locked in a write: the fan-out that reads it moves it.
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? "SELECT event_id FROM notify_cursor WHERE id = 1 "
                                              "FOR UPDATE"
                                            : "SELECT event_id FROM notify_cursor WHERE id = 1"));
    if (r.empty()) return Error::Internal("the store has no notification cursor");
    return r.Int(0, 0);
  }

  Status SetNotifyCursor(std::int64_t event_id) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("UPDATE notify_cursor SET event_id = $1 WHERE id = 1",
                                     Params().Add(event_id)));
    if (r.Affected() != 1) return Error::NotFound("the notification cursor not found");
    return Ok();
  }

  Status InsertDelivery(Delivery& d) override {
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("INSERT INTO notify_deliveries (id, sink, event_id, event_type, task_id, "
                     "body, status, attempts, created_at, next_at, last_at, last_error) VALUES "
                     "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq",
                     Params()
                         .Add(d.id)
                         .Add(d.sink)
                         .Add(d.event_id)
                         .Add(d.event_type)
                         .Add(d.task_id)
                         .Add(d.body)
                         .Add(ToString(d.status))
                         .Add(d.attempts)
                         .Add(d.created_at)
                         .Add(d.next_at)
                         .Add(d.last_at)
                         .Add(d.last_error)));
    d.seq = r.Int(0, 0);
    return Ok();
  }

  Status UpdateDelivery(const Delivery& d) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("UPDATE notify_deliveries SET status = $2, attempts = $3, "
                                     "next_at = $4, last_at = $5, last_error = $6 WHERE id = $1",
                                     Params()
                                         .Add(d.id)
                                         .Add(ToString(d.status))
                                         .Add(d.attempts)
                                         .Add(d.next_at)
                                         .Add(d.last_at)
                                         .Add(d.last_error)));
    if (r.Affected() != 1) return Error::NotFound("delivery " + d.id + " not found");
    return Ok();
  }

  Result<std::optional<Delivery>> GetDelivery(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(Rows r,
                        Exec(write_ ? GET_DELIVERY " FOR UPDATE" : GET_DELIVERY, Params().Add(id)));
    return ReadOne<Delivery>(r, ReadDelivery);
  }

  Result<std::vector<Delivery>> ListDueDeliveries(Millis now, int limit) override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE "
                                     "status = 'pending' AND next_at <= $1 ORDER BY next_at, "
                                     "seq LIMIT $2",
                                     Params().Add(now).Add(limit)));
    return ReadAll<Delivery>(r, ReadDelivery);
  }

  Result<std::optional<Millis>> NextDeliveryAt() override {
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec("SELECT min(next_at) FROM notify_deliveries WHERE status = 'pending'"));
    if (r.empty() || r.IsNull(0, 0)) return std::optional<Millis>();
    return std::optional<Millis>(r.Int(0, 0));
  }

  Result<std::vector<Delivery>> ListDeliveries(std::optional<DeliveryStatus> status,
                                               int limit) override {
    Params p;
    p.Add(status ? ToString(*status) : std::string_view());
    if (limit > 0) {
      p.Add(limit);
    } else {
      p.AddNull();
    }
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE "
                                     "$1 = '' OR status = $1 ORDER BY seq DESC LIMIT $2",
                                     p));
    return ReadAll<Delivery>(r, ReadDelivery);
  }

  Result<std::optional<OrchestratorState>> GetOrchestrator(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(
        Rows r, Exec(write_ ? GET_ORCHESTRATOR " FOR UPDATE" : GET_ORCHESTRATOR, Params().Add(id)));
    return ReadOne<OrchestratorState>(r, ReadOrchestrator);
  }

  Result<std::vector<OrchestratorState>> ListOrchestrators() override {
    TX_ASSIGN_OR_RETURN(Rows r,
                        Exec("SELECT " ORCHESTRATOR_COLS " FROM orchestrators ORDER BY id"));
    return ReadAll<OrchestratorState>(r, ReadOrchestrator);
  }

  Status PutOrchestrator(const OrchestratorState& o) override {
    Params p;
    p.Add(o.id)
        .Add(o.dir)
        .Add(o.status)
        .Add(o.pid)
        .Add(o.hostname)
        .Add(o.started_at)
        .Add(o.seen_at)
        .Add(o.config.dump())
        .Add(o.request.dump())
        .Add(o.pool.dump());
    Queue("INSERT INTO orchestrators (" ORCHESTRATOR_COLS
          ") VALUES ($1, $2, $3, $4, $5, $6, "
          "$7, $8, $9, $10) ON CONFLICT (id) DO UPDATE SET dir = EXCLUDED.dir, "
          "status = EXCLUDED.status, pid = EXCLUDED.pid, hostname = EXCLUDED.hostname, "
          "started_at = EXCLUDED.started_at, seen_at = EXCLUDED.seen_at, "
          "config = EXCLUDED.config, request = EXCLUDED.request, pool = EXCLUDED.pool",
          p);
    return Ok();
  }

  Result<ReconcilerRecord> GetReconcilerRecord() override {
    TX_ASSIGN_OR_RETURN(Rows r, Exec(write_ ? GET_RECONCILER " FOR UPDATE" : GET_RECONCILER));
    if (r.empty()) return Error::Internal("the reconciler's row is missing");
    return ReconcilerRecord{r.Text(0, 0), r.Int(0, 1), r.Int(0, 2), Object(r.Text(0, 3))};
  }

  Status PutReconcilerRecord(const ReconcilerRecord& rec) override {
    Queue(
        "UPDATE orchestrator SET leader = $1, leader_since = $2, last_reconcile_at = $3, "
        "last_report = $4 WHERE id = 1",
        Params()
            .Add(rec.leader)
            .Add(rec.leader_since)
            .Add(rec.last_reconcile_at)
            .Add(rec.last_report.dump()));
    return Ok();
  }

 private:
  // $1..$5 of every pick: the queues, now, the worker's name and slot (\x01 when empty, so that
  // a task with no owner is matched by `owner = ''` alone) and its capabilities.
  static Params PickParams(const PickCriteria& c) {
    Params p;
    p.Add(ListText(c.queues))
        .Add(c.now)
        .Add(c.worker_name.empty() ? std::string("\x01") : c.worker_name)
        .Add(c.worker_slot.empty() ? std::string("\x01") : c.worker_slot)
        .Add(ListText(c.capabilities));
    return p;
  }

  // Keeps row i of a CLAIM_AND_ROWS result: the claim, and its task and worker unless this
  // transaction has already read them (and may have changed them), which are kept as they are.
  Result<const Claim*> KeepClaimRow(const Rows& r, int i) {
    Claim claim;
    TX_RETURN_IF_ERROR(ReadClaim(r, i, claim));
    if (!tasks_.count(claim.task_id)) {
      Task t;
      TX_RETURN_IF_ERROR(ReadTask(r, i, t, kClaimCols));
      tasks_.emplace(t.id, std::move(t));
    }
    if (!workers_.count(claim.worker_id)) {
      Worker w;
      TX_RETURN_IF_ERROR(ReadWorker(r, i, w, kClaimCols + kTaskCols));
      workers_.emplace(w.id, std::move(w));
    }
    std::int64_t token = claim.token;
    return &claims_.insert_or_assign(token, std::move(claim)).first->second;
  }

  // Every statement but the kept-back writes goes through these: the writes kept back go first.
  Result<Rows> Exec(const char* sql, const Params& params = {}) {
    FlushWrites();
    return c_.Exec(sql, params);
  }
  void Queue(const char* sql, const Params& params, Rows* out = nullptr) {
    FlushWrites();
    c_.Queue(sql, params, out);
  }
  Status Sync() {
    FlushWrites();
    return c_.Sync();
  }

  // Before this transaction's first event: the lock that keeps readers below its ids until it
  // ends (tx_event_horizon). Queued, so it costs no round trip; and queued without sending the
  // writes kept back first, which it does not read, so they can still go together with those
  // that follow (the events, kept back too, go after it).
  void FenceEvents() {
    if (fenced_) return;
    fenced_ = true;
    c_.Queue(EVENT_FENCE, {});
  }

  // What a pick learned about the task it locked, for the claim that follows.
  struct Picked {
    std::int64_t claims = 0;  // claims the task has had
    std::int64_t token = 0;   // reserved for its next claim; 0 once used
  };

  Conn& c_;
  bool write_;
  bool made_ready_ = false;
  bool fenced_ = false;
  std::unordered_map<std::string, Task> tasks_;      // locked rows, as this transaction has them
  std::unordered_map<std::string, Worker> workers_;  // locked rows, likewise
  std::unordered_map<std::string, std::vector<std::string>> dependents_;
  std::unordered_map<std::string, Picked> picked_;
  std::unordered_map<std::int64_t, Claim> claims_;  // locked rows, likewise (by token)
  WriteBehind writes_;
};

class PgStore final : public Store {
 public:
  explicit PgStore(std::unique_ptr<Conn> conn) : conn_(std::move(conn)) { ClockMeasured(); }

  // READ COMMITTED, with the rows it reads locked (PgTxn): the services' read-modify-write
  // transactions were written against SQLite, where writers run one at a time; the row locks
  // keep that true for every row a transaction touches, and claimers skip each other's rows.
  // (SERIALIZABLE aborted most claims under 16 concurrent claimers: every claimer reads the
  // ready index that every other one writes.) A deadlock (40P01) is run again.
  Status Write(const TxnFn& fn) override { return Run(fn, true); }
  // A snapshot: every read of the transaction sees the same committed state.
  Status Read(const TxnFn& fn) override { return Run(fn, false); }

  // Moves whenever a transaction commits a change that readers can see: the latest completed
  // transaction, the event horizon and the last event id, hashed together (any of them may stay
  // put while another moves).
  Result<std::int64_t> ChangeCounter() override {
    for (int attempt = 0;; ++attempt) {
      auto r = conn_->Exec(
          "SELECT hashtextextended(pg_snapshot_xmax(pg_current_snapshot())::text || ':' || "
          "(SELECT tx_event_horizon())::text || ':' || "
          "(SELECT last_value FROM events_id_seq)::text, 0)");
      if (r.ok()) return r->Int(0, 0);
      if (conn_->last_failure() != Failure::kConnection || attempt > 0) return r.error();
      TX_RETURN_IF_ERROR(Reconnect());
    }
  }

  Result<std::unique_ptr<ChangeWatch>> Watch() override { return WatchNotifications(conn_->url()); }
  std::string Describe() const override { return store::Describe(conn_->url()); }
  const Clock& clock() const override { return clock_; }
  bool SharedByHosts() const override { return true; }

  // On lead_conn_, kept between tries (pg_lead.h).
  Result<std::unique_ptr<Leadership>> TryLead() override {
    return TryAdvisoryLead(lead_conn_, conn_->url());
  }

 private:
  void ClockMeasured() {
    clock_.set_offset(conn_->clock_offset_ms());
    measured_at_ = MonotonicEpochMs();
  }

  Status Reconnect() {
    TX_RETURN_IF_ERROR(conn_->Reconnect());
    ClockMeasured();
    return Ok();
  }

  Status Run(const TxnFn& fn, bool write) {
    std::minstd_rand jitter(std::random_device{}());
    for (int attempt = 1;; ++attempt) {
      if (conn_->broken()) TX_RETURN_IF_ERROR(Reconnect());
      if (MonotonicEpochMs() - measured_at_ > kClockRemeasureMs && conn_->MeasureClock().ok()) {
        ClockMeasured();
      }
      Status s = Attempt(fn, write);
      if (s.ok()) return s;
      Failure why = conn_->last_failure();
      if (attempt >= kMaxAttempts ||
          (why != Failure::kSerialization && why != Failure::kConnection)) {
        return s;
      }
      if (why == Failure::kConnection) {
        if (committing_) return s;  // the outcome is unknown: never run it twice
        TX_RETURN_IF_ERROR(Reconnect());
        continue;
      }
      // A conflict: back off a little (0-2 ms, growing) so the winner finishes first.
      int cap = std::min(attempt, 10) * 200;
      std::this_thread::sleep_for(std::chrono::microseconds(jitter() % static_cast<unsigned>(cap)));
    }
  }

  Status Attempt(const TxnFn& fn, bool write) {
    committing_ = false;
    conn_->ClearFailure();
    // Sent with the transaction's first read.
    conn_->Queue(write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ", {});
    PgTxn txn(*conn_, write);
    Status s = fn(txn);
    if (s.ok()) txn.FlushWrites();
    if (s.ok() && txn.made_ready()) {
      // Delivered at commit, and only if it commits: exactly when a woken worker can see it.
      conn_->Queue("SELECT pg_notify('tx_wake', '')", {});  // kWakeChannel
    }
    if (!s.ok()) {
      conn_->Rollback();
      return s;
    }
    // The writes still queued go with the COMMIT: if the connection drops now, whether they
    // committed is unknown.
    committing_ = true;
    s = conn_->Commit();
    if (!s.ok()) conn_->Rollback();
    return s;
  }

  std::unique_ptr<Conn> conn_;
  PgConnPtr lead_conn_;  // TryLead's, while it has not been granted the lock
  ServerClock clock_;
  Millis measured_at_ = 0;
  bool committing_ = false;
};

Millis ReconnectTimeoutMs() {
  const char* env = std::getenv("TX_PG_RECONNECT_TIMEOUT");
  if (env == nullptr || *env == '\0') return 60'000;
  Result<Millis> d = ParseDuration(env);
  return d.ok() && *d > 0 ? *d : 60'000;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgres(const OpenOptions& o) {
  TX_RETURN_IF_ERROR(pq::Load());
  Millis reconnect = ReconnectTimeoutMs();
  TX_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn, Conn::Open(o.url, reconnect));
  TX_RETURN_IF_ERROR(Migrate(*conn, o.create));
  return std::unique_ptr<Store>(new PgStore(std::move(conn)));
}

}  // namespace tx::store::postgres
