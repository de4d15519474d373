#include "store/sqlite/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include "store/row_codec.h"
#include "store/sqlite/change_watch.h"
#include "store/sqlite/db.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/small_alloc.h"

namespace tx::store::sqlite {

namespace {

using nlohmann::json;

#define TASK_COLS                                                                                \
  "seq, id, title, description, instructions, deliverables, steps, priority, queue, requires, "  \
  "after, owner, workdir, command, agent, timeout_ms, max_attempts, review, repo, base_branch, " \
  "metadata, result, error, status, attempt, run_after, created_at, updated_at, started_at, "    \
  "finished_at"

// The row readers fill a caller's object in place: a Task has 30 fields, and every move of one
// on the claim path costs about as much as reading a column.
Status ReadTask(const Stmt& s, Task& t) {
  t.seq = s.Int(0);
  t.id = s.Text(1);
  t.title = s.Text(2);
  t.description = s.Text(3);
  t.instructions = s.Text(4);
  t.deliverables = s.Text(5);
  t.steps = StringList(s.Text(6));
  t.priority = s.Int(7);
  t.queue = s.Text(8);
  t.requires_caps = StringList(s.Text(9));
  t.after = StringList(s.Text(10));
  t.owner = s.Text(11);
  t.workdir = s.Text(12);
  t.command = StringList(s.Text(13));
  t.agent = s.Text(14);
  t.timeout_ms = s.Int(15);
  t.max_attempts = static_cast<int>(s.Int(16));
  t.review = s.Int(17) != 0;
  t.repo = s.Text(18);
  t.base_branch = s.Text(19);
  t.metadata = Object(s.Text(20));
  t.result = s.Text(21);
  t.error = s.Text(22);
  TX_ASSIGN_OR_RETURN(t.status, ParseTaskStatus(s.Text(23)));
  t.attempt = static_cast<int>(s.Int(24));
  t.run_after = s.Int(25);
  t.created_at = s.Int(26);
  t.updated_at = s.Int(27);
  t.started_at = s.Int(28);
  t.finished_at = s.Int(29);
  return Ok();
}

// Binds every task column but seq, starting at parameter 1 with id.
// `t` must outlive `s` (its text columns are bound without a copy); the lists and metadata are
// written as JSON text made here, which SQLite copies.
void BindTask(Stmt& s, const Task& t) {
  s.BindKept(1, t.id)
      .BindKept(2, t.title)
      .BindKept(3, t.description)
      .BindKept(4, t.instructions)
      .BindKept(5, t.deliverables)
      .Bind(6, ListText(t.steps))
      .Bind(7, t.priority)
      .BindKept(8, t.queue)
      .Bind(9, ListText(t.requires_caps))
      .Bind(10, ListText(t.after))
      .BindKept(11, t.owner)
      .BindKept(12, t.workdir)
      .Bind(13, ListText(t.command))
      .BindKept(14, t.agent)
      .Bind(15, t.timeout_ms)
      .Bind(16, t.max_attempts)
      .Bind(17, t.review ? 1 : 0)
      .BindKept(18, t.repo)
      .BindKept(19, t.base_branch)
      .Bind(20, t.metadata.dump())
      .BindKept(21, t.result)
      .BindKept(22, t.error)
      .BindKept(23, ToString(t.status))
      .Bind(24, t.attempt)
      .Bind(25, t.run_after)
      .Bind(26, t.created_at)
      .Bind(27, t.updated_at)
      .Bind(28, t.started_at)
      .Bind(29, t.finished_at);
}

#define CLAIM_COLS                                                               \
  "token, task_id, worker_id, attempt, claimed_at, lease_ms, lease_expires_at, " \
  "renewed_count, status, ended_at, end_reason, exit_code, lease_expires_steady"

Status ReadClaim(const Stmt& s, Claim& c) {
  c.token = s.Int(0);
  c.task_id = s.Text(1);
  c.worker_id = s.Text(2);
  c.attempt = static_cast<int>(s.Int(3));
  c.claimed_at = s.Int(4);
  c.lease_ms = s.Int(5);
  c.lease_expires_at = s.Int(6);
  c.renewed_count = static_cast<int>(s.Int(7));
  TX_ASSIGN_OR_RETURN(c.status, ParseClaimStatus(s.Text(8)));
  c.ended_at = s.Int(9);
  TX_ASSIGN_OR_RETURN(c.end_reason, ParseEndReason(s.Text(10)));
  if (!s.IsNull(11)) c.exit_code = static_cast<int>(s.Int(11));
  if (!s.IsNull(12)) c.lease_expires_steady = s.Int(12);
  return Ok();
}

#define WORKER_COLS                                                                      \
  "id, name, slot, hostname, pid, capabilities, queues, status, heartbeat_interval_ms, " \
  "registered_at, last_heartbeat_at, current_task_id, reason, metadata, request, pool, " \
  "beat_steady, busy_heartbeat_interval_ms"

Status ReadWorker(const Stmt& s, Worker& w) {
  w.id = s.Text(0);
  w.name = s.Text(1);
  w.slot = s.Text(2);
  w.hostname = s.Text(3);
  w.pid = s.Int(4);
  w.capabilities = StringList(s.Text(5));
  w.queues = StringList(s.Text(6));
  TX_ASSIGN_OR_RETURN(w.status, ParseWorkerStatus(s.Text(7)));
  w.heartbeat_interval_ms = s.Int(8);
  w.registered_at = s.Int(9);
  w.last_heartbeat_at = s.Int(10);
  w.current_task_id = s.Text(11);
  w.reason = s.Text(12);
  w.metadata = Object(s.Text(13));
  TX_ASSIGN_OR_RETURN(w.request, ParseWorkerRequest(s.Text(14)));
  w.pool = s.Text(15);
  if (!s.IsNull(16)) w.beat_steady = s.Int(16);
  w.busy_heartbeat_interval_ms = s.Int(17);
  return Ok();
}

// `w` must outlive the statement's run: its strings are bound without a copy.
void BindWorker(Stmt& s, const Worker& w) {
  s.BindKept(1, w.id)
      .BindKept(2, w.name)
      .BindKept(3, w.slot)
      .BindKept(4, w.hostname)
      .Bind(5, w.pid)
      .Bind(6, ListText(w.capabilities))
      .Bind(7, ListText(w.queues))
      .BindKept(8, ToString(w.status))
      .Bind(9, w.heartbeat_interval_ms)
      .Bind(10, w.registered_at)
      .Bind(11, w.last_heartbeat_at)
      .BindKept(12, w.current_task_id)
      .BindKept(13, w.reason)
      .Bind(14, w.metadata.dump())
      .BindKept(15, ToString(w.request))
      .BindKept(16, w.pool)
      .Bind(17, w.beat_steady)
      .Bind(18, w.busy_heartbeat_interval_ms);
}

#define USAGE_COLS                                                                               \
  "token, task_id, attempt, worker_id, agent, account, queue, session_id, model, input_tokens, " \
  "output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, cost_estimated, "       \
  "turns, denials, started_at, updated_at"

Status ReadUsage(const Stmt& s, AttemptUsage& u) {
  u.token = s.Int(0);
  u.task_id = s.Text(1);
  u.attempt = static_cast<int>(s.Int(2));
  u.worker_id = s.Text(3);
  u.agent = s.Text(4);
  u.account = s.Text(5);
  u.queue = s.Text(6);
  u.session_id = s.Text(7);
  u.model = s.Text(8);
  u.tokens = {s.Int(9), s.Int(10), s.Int(11), s.Int(12)};
  u.cost_usd = MicroToUsd(s.Int(13));
  u.cost_estimated = s.Int(14) != 0;
  u.turns = static_cast<int>(s.Int(15));
  u.denials = JsonArray(s.Text(16));
  u.started_at = s.Int(17);
  u.updated_at = s.Int(18);
  return Ok();
}

// A sum of rows in columns 1 to 8: count(*), the four token kinds, cost, estimated, turns.
UsageTotal UsageTotalOf(const Stmt& s) {
  UsageTotal t;
  t.attempts = static_cast<int>(s.Int(1));
  t.tokens = {s.Int(2), s.Int(3), s.Int(4), s.Int(5)};
  t.cost_usd = MicroToUsd(s.Int(6));
  t.estimated = s.Int(7) != 0;
  t.turns = static_cast<int>(s.Int(8));
  return t;
}

#define LIMIT_COLS "profile, account, until, since, reason, task_id, strikes, resumed"

Status ReadLimit(const Stmt& s, AgentLimit& l) {
  l.profile = s.Text(0);
  l.account = s.Text(1);
  l.until = s.Int(2);
  l.since = s.Int(3);
  l.reason = s.Text(4);
  l.task_id = s.Text(5);
  l.strikes = static_cast<int>(s.Int(6));
  l.resumed = s.Int(7) != 0;
  return Ok();
}

#define DELIVERY_COLS                                                                           \
  "seq, id, sink, event_id, event_type, task_id, body, status, attempts, created_at, next_at, " \
  "last_at, last_error"

Status ReadDelivery(const Stmt& s, Delivery& d) {
  d.seq = s.Int(0);
  d.id = s.Text(1);
  d.sink = s.Text(2);
  d.event_id = s.Int(3);
  d.event_type = s.Text(4);
  d.task_id = s.Text(5);
  d.body = s.Text(6);
  TX_ASSIGN_OR_RETURN(d.status, ParseDeliveryStatus(s.Text(7)));
  d.attempts = static_cast<int>(s.Int(8));
  d.created_at = s.Int(9);
  d.next_at = s.Int(10);
  d.last_at = s.Int(11);
  d.last_error = s.Text(12);
  return Ok();
}

Status ReadOrchestrator(const Stmt& s, OrchestratorState& o) {
  o.id = s.Text(0);
  o.dir = s.Text(1);
  o.status = s.Text(2);
  o.pid = s.Int(3);
  o.hostname = s.Text(4);
  o.started_at = s.Int(5);
  o.seen_at = s.Int(6);
  o.config = Object(s.Text(7));
  o.request = Object(s.Text(8));
  o.pool = Object(s.Text(9));
  return Ok();
}

// `read` either returns a Result<T> or fills a T in place: Status read(const Stmt&, T&).
template <typename T, typename Reader>
Result<std::vector<T>> ReadAll(Stmt& s, Reader read) {
  std::vector<T> out;
  for (;;) {
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    if constexpr (std::is_invocable_v<Reader, const Stmt&, T&>) {
      TX_RETURN_IF_ERROR(read(s, out.emplace_back()));
    } else {
      TX_ASSIGN_OR_RETURN(T item, read(s));
      out.push_back(std::move(item));
    }
  }
}

template <typename T, typename Reader>
Result<std::optional<T>> ReadOne(Stmt& s, Reader read) {
  TX_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<T>();
  Result<std::optional<T>> out(std::in_place, std::in_place);
  TX_RETURN_IF_ERROR(read(s, **out));
  return out;
}

Status ExpectChange(Db& db, std::string_view what) {
  if (sqlite3_changes(db.raw()) == 1) return Ok();
  return Error::NotFound(std::string(what) + " not found");
}

class SqliteTxn final : public Txn {
 public:
  explicit SqliteTxn(Db& db) : db_(db) {}

  Result<std::optional<Task>> GetTask(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " TASK_COLS " FROM tasks WHERE id = ?1"));
    s.BindKept(1, id);
    return ReadOne<Task>(s, ReadTask);
  }

  Result<std::vector<Task>> ListTasks(const TaskFilter& f) override {
    // Two statements, so that each pages along the rowid in its own direction. A search reads
    // every row it passes (no index holds titles): some milliseconds for thousands of tasks.
#define TASK_FILTER                                                                         \
  "WHERE (?1 = '' OR status = ?1) AND (?2 = '' OR queue = ?2) AND (?3 = '' OR owner = ?3) " \
  "AND (?6 = '' OR agent = ?6) "                                                            \
  "AND (?7 = '' OR substr(id, 1, length(?7)) = ?7 OR instr(lower(title), lower(?7)) > 0) "  \
  "AND (?8 = 0 OR created_at >= ?8) AND (?9 = 0 OR created_at < ?9) "
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare(f.newest_first ? "SELECT " TASK_COLS " FROM tasks " TASK_FILTER
                                             "AND (?5 = 0 OR seq < ?5) ORDER BY seq DESC LIMIT ?4"
                                           : "SELECT " TASK_COLS " FROM tasks " TASK_FILTER
                                             "AND seq > ?5 ORDER BY seq LIMIT ?4"));
#undef TASK_FILTER
    s.Bind(1, f.status ? ToString(*f.status) : std::string_view())
        .Bind(2, f.queue.value_or(""))
        .Bind(3, f.owner.value_or(""))
        .Bind(4, f.limit > 0 ? std::int64_t{f.limit} : std::int64_t{-1})
        .Bind(5, f.cursor)
        .Bind(6, f.agent.value_or(""))
        .Bind(7, f.search)
        .Bind(8, f.created_since)
        .Bind(9, f.created_until);
    return ReadAll<Task>(s, ReadTask);
  }

  // True once this transaction inserted a ready task or moved one to ready: after the commit,
  // idle workers are woken (ChangeWatch).
  bool made_ready() const { return made_ready_; }

  void WakeWatchersOnCommit() override { made_ready_ = true; }

  Result<bool> InsertNewTask(Task& t) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("INSERT INTO tasks (" TASK_COLS ") VALUES (NULL, ?1, ?2, ?3, ?4, ?5, "
                            "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
                            "?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29) "
                            "ON CONFLICT (id) DO NOTHING"));
    BindTask(s, t);
    TX_RETURN_IF_ERROR(s.Run());
    if (sqlite3_changes(db_.raw()) == 0) return false;
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    t.seq = db_.LastInsertRowid();
    if (!t.after.empty()) TX_RETURN_IF_ERROR(ReplaceDependencies(t.id, t.after));
    return true;
  }

  Status UpdateTask(const Task& t) override {
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("UPDATE tasks SET title = ?2, description = ?3, instructions = ?4, "
                            "deliverables = ?5, steps = ?6, priority = ?7, queue = ?8, "
                            "requires = ?9, after = ?10, owner = ?11, workdir = ?12, "
                            "command = ?13, agent = ?14, timeout_ms = ?15, max_attempts = ?16, "
                            "review = ?17, repo = ?18, base_branch = ?19, metadata = ?20, "
                            "result = ?21, error = ?22, status = ?23, attempt = ?24, "
                            "run_after = ?25, created_at = ?26, updated_at = ?27, "
                            "started_at = ?28, finished_at = ?29 WHERE id = ?1"));
    BindTask(s, t);
    TX_RETURN_IF_ERROR(s.Run());
    return ExpectChange(db_, "task " + t.id);
  }

  Status UpdateTaskState(const Task& t) override {
    made_ready_ = made_ready_ || t.status == TaskStatus::kReady;
    // A task read from the store carries its seq, the rowid: finding the row by it skips a
    // descent of the id index (random ids, so a likely cache miss in a big queue).
#define TASK_STATE_SET                                                                    \
  "UPDATE tasks SET status = ?2, attempt = ?3, run_after = ?4, result = ?5, error = ?6, " \
  "updated_at = ?7, started_at = ?8, finished_at = ?9 "
    const char* by_seq = TASK_STATE_SET "WHERE seq = ?10 AND id = ?1";
    const char* by_id = TASK_STATE_SET "WHERE id = ?1";
#undef TASK_STATE_SET
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare(t.seq > 0 ? by_seq : by_id));
    if (t.seq > 0) s.Bind(10, t.seq);
    s.BindKept(1, t.id)
        .BindKept(2, ToString(t.status))
        .Bind(3, t.attempt)
        .Bind(4, t.run_after)
        .BindKept(5, t.result)
        .BindKept(6, t.error)
        .Bind(7, t.updated_at)
        .Bind(8, t.started_at)
        .Bind(9, t.finished_at);
    TX_RETURN_IF_ERROR(s.Run());
    return ExpectChange(db_, "task " + t.id);
  }

  Status ReplaceDependencies(const std::string& task_id,
                             const std::vector<std::string>& after) override {
    {
      TX_ASSIGN_OR_RETURN(Stmt del, db_.Prepare("DELETE FROM task_deps WHERE task_id = ?1"));
      del.Bind(1, task_id);
      TX_RETURN_IF_ERROR(del.Run());
    }
    for (const auto& dep : after) {
      TX_ASSIGN_OR_RETURN(Stmt ins,
                          db_.Prepare("INSERT OR IGNORE INTO task_deps (task_id, depends_on) "
                                      "VALUES (?1, ?2)"));
      ins.Bind(1, task_id).Bind(2, dep);
      TX_RETURN_IF_ERROR(ins.Run());
    }
    return Ok();
  }

  Result<std::optional<Task>> PickNextReady(const PickCriteria& c) override {
    if (c.gated()) return PickGated(c);
    std::string caps = ListText(c.capabilities);
    std::optional<Task> best;
    for (const auto& queue : c.queues) {
      // Walks tasks_ready in (priority desc, seq) order and stops at the first eligible row.
      TX_ASSIGN_OR_RETURN(
          Stmt s,
          db_.Prepare("SELECT " TASK_COLS " FROM tasks INDEXED BY tasks_ready "
                      "WHERE status = 'ready' AND queue = ?1 AND run_after <= ?2 "
                      "AND (owner = '' OR owner = ?3 OR owner = ?4) "
                      "AND (requires = '[]' OR NOT EXISTS (SELECT 1 FROM json_each(requires) r "
                      "     WHERE r.value NOT IN (SELECT value FROM json_each(?5)))) "
                      "ORDER BY priority DESC, seq LIMIT 1"));
      s.Bind(1, queue)
          .Bind(2, c.now)
          .Bind(3, c.worker_name.empty() ? std::string("\x01") : c.worker_name)
          .Bind(4, c.worker_slot.empty() ? std::string("\x01") : c.worker_slot)
          .Bind(5, caps);
      TX_ASSIGN_OR_RETURN(std::optional<Task> t, ReadOne<Task>(s, ReadTask));
      if (!t) continue;
      if (!best || t->priority > best->priority ||
          (t->priority == best->priority && t->seq < best->seq)) {
        best = std::move(t);
      }
    }
    return best;
  }

  // PickNextReady passing over the agent tasks the criteria rule out (a separate statement, so
  // the usual pick stays as it is).
  Result<std::optional<Task>> PickGated(const PickCriteria& c) {
    std::string caps = ListText(c.capabilities);
    std::string blocked = ListText(c.blocked_agents);
    std::optional<Task> best;
    for (const auto& queue : c.queues) {
      bool all = std::find(c.blocked_agent_queues.begin(), c.blocked_agent_queues.end(), queue) !=
                 c.blocked_agent_queues.end();
      TX_ASSIGN_OR_RETURN(
          Stmt s,
          db_.Prepare("SELECT " TASK_COLS " FROM tasks INDEXED BY tasks_ready "
                      "WHERE status = 'ready' AND queue = ?1 AND run_after <= ?2 "
                      "AND (owner = '' OR owner = ?3 OR owner = ?4) "
                      "AND (requires = '[]' OR NOT EXISTS (SELECT 1 FROM json_each(requires) r "
                      "     WHERE r.value NOT IN (SELECT value FROM json_each(?5)))) "
                      "AND (command <> '[]' OR NOT EXISTS (SELECT 1 FROM json_each(?6) b "
                      "     WHERE b.value = agent OR b.value = '*')) "
                      "ORDER BY priority DESC, seq LIMIT 1"));
      s.Bind(1, queue)
          .Bind(2, c.now)
          .Bind(3, c.worker_name.empty() ? std::string("\x01") : c.worker_name)
          .Bind(4, c.worker_slot.empty() ? std::string("\x01") : c.worker_slot)
          .Bind(5, caps)
          .Bind(6, all ? std::string("[\"*\"]") : blocked);
      TX_ASSIGN_OR_RETURN(std::optional<Task> t, ReadOne<Task>(s, ReadTask));
      if (!t) continue;
      if (!best || t->priority > best->priority ||
          (t->priority == best->priority && t->seq < best->seq)) {
        best = std::move(t);
      }
    }
    return best;
  }

  Result<std::optional<Millis>> NextReadyAt(const PickCriteria& c) override {
    std::optional<Millis> best;
    for (const auto& queue : c.queues) {
      TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT min(run_after) FROM tasks INDEXED BY "
                                              "tasks_ready WHERE status = 'ready' AND queue = ?1 "
                                              "AND run_after > ?2"));
      s.Bind(1, queue).Bind(2, c.now);
      TX_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row || s.IsNull(0)) continue;
      Millis at = s.Int(0);
      if (!best || at < *best) best = at;
    }
    return best;
  }

  Result<std::vector<std::string>> ListDependents(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT task_id FROM task_deps WHERE depends_on = ?1 "
                                            "ORDER BY task_id"));
    s.BindKept(1, task_id);
    return ReadAll<std::string>(s,
                                [](const Stmt& st) -> Result<std::string> { return st.Text(0); });
  }

  Result<std::vector<std::string>> ListRunningTasksWithoutActiveClaim() override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT id FROM tasks t WHERE status = 'running' AND NOT EXISTS "
                            "(SELECT 1 FROM claims c WHERE c.task_id = t.id AND "
                            "c.status = 'active') ORDER BY seq"));
    return ReadAll<std::string>(s,
                                [](const Stmt& st) -> Result<std::string> { return st.Text(0); });
  }

  Result<std::vector<StatusCount>> CountTasks() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT status, queue, count(*) FROM tasks "
                                            "GROUP BY status, queue ORDER BY queue, status"));
    return ReadAll<StatusCount>(s, [](const Stmt& st) -> Result<StatusCount> {
      TX_ASSIGN_OR_RETURN(TaskStatus status, ParseTaskStatus(st.Text(0)));
      return StatusCount{status, st.Text(1), st.Int(2)};
    });
  }

  Result<std::int64_t> CountReadyTasks() override {
    // The literal status lets SQLite count the partial index tasks_ready.
    return db_.QueryInt("SELECT count(*) FROM tasks WHERE status = 'ready'");
  }

  Status InsertClaim(Claim& c) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("INSERT INTO claims (task_id, worker_id, attempt, claimed_at, "
                            "lease_ms, lease_expires_at, renewed_count, status, ended_at, "
                            "end_reason, exit_code, lease_expires_steady) VALUES (?1, ?2, ?3, "
                            "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
    s.BindKept(1, c.task_id)
        .BindKept(2, c.worker_id)
        .Bind(3, c.attempt)
        .Bind(4, c.claimed_at)
        .Bind(5, c.lease_ms)
        .Bind(6, c.lease_expires_at)
        .Bind(7, c.renewed_count)
        .BindKept(8, ToString(c.status))
        .Bind(9, c.ended_at)
        .BindKept(10, ToString(c.end_reason))
        .Bind(11, c.exit_code)
        .Bind(12, c.lease_expires_steady);
    TX_RETURN_IF_ERROR(s.Run());
    c.token = db_.LastInsertRowid();
    return Ok();
  }

  Status UpdateClaim(const Claim& c) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("UPDATE claims SET lease_ms = ?2, lease_expires_at = ?3, "
                            "renewed_count = ?4, status = ?5, ended_at = ?6, end_reason = ?7, "
                            "exit_code = ?8, lease_expires_steady = ?9 WHERE token = ?1"));
    s.Bind(1, c.token)
        .Bind(2, c.lease_ms)
        .Bind(3, c.lease_expires_at)
        .Bind(4, c.renewed_count)
        .BindKept(5, ToString(c.status))
        .Bind(6, c.ended_at)
        .BindKept(7, ToString(c.end_reason))
        .Bind(8, c.exit_code)
        .Bind(9, c.lease_expires_steady);
    TX_RETURN_IF_ERROR(s.Run());
    return ExpectChange(db_, "claim " + std::to_string(c.token));
  }

  Result<std::optional<Claim>> GetClaim(std::int64_t token) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " CLAIM_COLS " FROM claims WHERE token = ?1"));
    s.Bind(1, token);
    return ReadOne<Claim>(s, ReadClaim);
  }

  Result<std::optional<Claim>> GetActiveClaimForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " CLAIM_COLS " FROM claims "
                                            "WHERE task_id = ?1 AND status = 'active'"));
    s.BindKept(1, task_id);
    return ReadOne<Claim>(s, ReadClaim);
  }

  Result<std::vector<Claim>> ListClaimsForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " CLAIM_COLS " FROM claims "
                                            "WHERE task_id = ?1 ORDER BY token"));
    s.Bind(1, task_id);
    return ReadAll<Claim>(s, ReadClaim);
  }

  Result<std::vector<WorkerAttempt>> ListAttemptsOfWorker(std::string_view worker_id,
                                                          std::int64_t before_token,
                                                          int limit) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("SELECT c.*, coalesce(t.title, ''), u.cost_micro_usd, "
                                    "u.cost_estimated FROM (SELECT " CLAIM_COLS " FROM claims "
                                    "WHERE worker_id = ?1 AND (?2 = 0 OR token < ?2) "
                                    "ORDER BY token DESC LIMIT ?3) c "
                                    "LEFT JOIN tasks t ON t.id = c.task_id "
                                    "LEFT JOIN attempt_usage u ON u.token = c.token "
                                    "ORDER BY c.token DESC"));
    s.Bind(1, worker_id).Bind(2, before_token).Bind(3, std::int64_t{limit > 0 ? limit : -1});
    std::vector<WorkerAttempt> out;
    for (;;) {
      TX_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      WorkerAttempt& a = out.emplace_back();
      TX_RETURN_IF_ERROR(ReadClaim(s, a.claim));
      a.task_title = s.Text(13);
      a.has_usage = !s.IsNull(14);
      if (a.has_usage) {
        a.cost_usd = MicroToUsd(s.Int(14));
        a.cost_estimated = s.Int(15) != 0;
      }
    }
  }

  Result<std::vector<Claim>> ListActiveClaims() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " CLAIM_COLS " FROM claims "
                                            "WHERE status = 'active' ORDER BY token"));
    return ReadAll<Claim>(s, ReadClaim);
  }

  Result<std::vector<Claim>> ListActiveClaimsExpiredAt(const Moment& now) override {
    // On the steady clock where both sides have a reading, as IsExpired judges.
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " CLAIM_COLS " FROM claims "
                                            "WHERE status = 'active' AND CASE WHEN "
                                            "lease_expires_steady IS NOT NULL AND ?2 IS NOT NULL "
                                            "THEN lease_expires_steady <= ?2 "
                                            "ELSE lease_expires_at <= ?1 END ORDER BY token"));
    s.Bind(1, now.wall).Bind(2, now.steady);
    return ReadAll<Claim>(s, ReadClaim);
  }

  Result<int> CountClaimsForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT count(*) FROM claims WHERE task_id = ?1"));
    s.BindKept(1, task_id);
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    return row ? static_cast<int>(s.Int(0)) : 0;
  }

  Status InsertWorker(const Worker& w) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("INSERT INTO workers (" WORKER_COLS ") VALUES (?1, ?2, "
                                    "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                                    "?16, ?17, ?18)"));
    BindWorker(s, w);
    TX_RETURN_IF_ERROR(s.Run());
    RememberStatus(w.id, w.status);
    return Ok();
  }

  Status UpdateWorker(const Worker& w) override {
    // A worker's status is the key and the filter of workers_live: an UPDATE that sets it makes
    // SQLite rewrite the index entry (one more B-tree page in the WAL) even when it is unchanged,
    // as it is in a beat or between two tasks. When this transaction knows the stored status and
    // it stays, the status column is left out.
#define WORKER_SET_BUT_STATUS                                                               \
  "UPDATE workers SET name = ?2, slot = ?3, hostname = ?4, pid = ?5, capabilities = ?6, "   \
  "queues = ?7, heartbeat_interval_ms = ?9, registered_at = ?10, last_heartbeat_at = ?11, " \
  "current_task_id = ?12, reason = ?13, metadata = ?14, request = ?15, pool = ?16, "        \
  "beat_steady = ?17, busy_heartbeat_interval_ms = ?18"
    const char* keep_status = WORKER_SET_BUT_STATUS " WHERE id = ?1";
    const char* set_status = WORKER_SET_BUT_STATUS ", status = ?8 WHERE id = ?1";
#undef WORKER_SET_BUT_STATUS
    std::optional<WorkerStatus> stored = KnownStatus(w.id);
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare(stored == w.status ? keep_status : set_status));
    BindWorker(s, w);
    TX_RETURN_IF_ERROR(s.Run());
    TX_RETURN_IF_ERROR(ExpectChange(db_, "worker " + w.id));
    RememberStatus(w.id, w.status);
    return Ok();
  }

  Result<std::optional<Worker>> GetWorker(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " WORKER_COLS " FROM workers WHERE id = ?1"));
    s.BindKept(1, id);
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, ReadOne<Worker>(s, ReadWorker));
    if (w) RememberStatus(w->id, w->status);
    return w;
  }

  Result<std::vector<Worker>> ListWorkers(const std::vector<WorkerStatus>& statuses) override {
    std::vector<std::string> names;
    bool only_live = !statuses.empty();
    for (auto st : statuses) {
      names.emplace_back(ToString(st));
      only_live = only_live && IsLive(st);
    }
    // Every live worker (the reconciler's and an add's question): the partial index alone, no
    // list to match (json_each's IN made SQLite build and drop a temporary index each call, most of
    // the cost of a query that finds a handful of rows).
    if (only_live && std::set<WorkerStatus>(statuses.begin(), statuses.end()).size() ==
                         LiveWorkerStatuses().size()) {
      TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " WORKER_COLS " FROM workers WHERE status <> "
                                              "'stopped' AND status <> 'dead' "
                                              "ORDER BY registered_at DESC, rowid DESC"));
      return ReadAll<Worker>(s, ReadWorker);
    }
    // Live workers only: the literal terms let SQLite use the partial index workers_live instead
    // of scanning every worker ever registered.
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare(only_live ? "SELECT " WORKER_COLS " FROM workers WHERE status <> "
                                        "'stopped' AND status <> 'dead' AND status IN "
                                        "(SELECT value FROM json_each(?1)) "
                                        "ORDER BY registered_at DESC, rowid DESC"
                                      : "SELECT " WORKER_COLS " FROM workers WHERE ?1 = '[]' OR "
                                        "status IN (SELECT value FROM json_each(?1)) "
                                        "ORDER BY registered_at DESC, rowid DESC"));
    s.Bind(1, ListText(names));
    return ReadAll<Worker>(s, ReadWorker);
  }

  Result<std::vector<Worker>> GetWorkers(const std::vector<std::string>& ids) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " WORKER_COLS " FROM workers WHERE id IN "
                                            "(SELECT value FROM json_each(?1)) ORDER BY id"));
    s.Bind(1, ListText(ids));
    return ReadAll<Worker>(s, ReadWorker);
  }

  Result<std::vector<Worker>> ListLiveWorkersInSlot(std::string_view pool,
                                                    std::string_view slot) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " WORKER_COLS " FROM workers WHERE status <> "
                                            "'stopped' AND status <> 'dead' AND slot = ?1 AND "
                                            "pool = ?2 ORDER BY registered_at DESC, rowid DESC"));
    s.Bind(1, slot).Bind(2, pool);
    return ReadAll<Worker>(s, ReadWorker);
  }

  Status AppendEvent(Event& e) override {
    TX_RETURN_IF_ERROR(AppendEventData(e.type, e.at, e.task_id, e.worker_id, e.data.dump()));
    e.id = db_.LastInsertRowid();
    return Ok();
  }

  Status AppendEventData(const std::string& type, Millis at, const std::string& task_id,
                         const std::string& worker_id, std::string_view data) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("INSERT INTO events (type, at, task_id, worker_id, "
                                            "data) VALUES (?1, ?2, ?3, ?4, ?5)"));
    s.BindKept(1, type).Bind(2, at).BindKept(3, task_id).BindKept(4, worker_id).BindKept(5, data);
    return s.Run();
  }

  Result<std::vector<Event>> ListEvents(std::int64_t after_id, int limit) override {
    TX_ASSIGN_OR_RETURN(std::vector<StoredEvent> stored, ListStoredEvents(after_id, limit));
    return Parsed(std::move(stored));
  }

  Result<std::vector<StoredEvent>> ListStoredEvents(std::int64_t after_id, int limit) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT id, type, at, task_id, worker_id, data "
                                            "FROM events WHERE id > ?1 ORDER BY id LIMIT ?2"));
    s.Bind(1, after_id).Bind(2, limit > 0 ? std::int64_t{limit} : std::int64_t{-1});
    return ReadAll<StoredEvent>(s, [](const Stmt& st) -> Result<StoredEvent> {
      return StoredEvent{st.Int(0), st.Text(1), st.Int(2), st.Text(3), st.Text(4), st.Text(5)};
    });
  }

  Result<std::int64_t> LastEventId() override {
    return db_.QueryInt("SELECT coalesce(max(id), 0) FROM events");
  }

#define ORCHESTRATOR_COLS \
  "id, dir, status, pid, hostname, started_at, seen_at, config, request, pool"

  Status PutUsage(const AttemptUsage& u) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("INSERT OR REPLACE INTO attempt_usage (" USAGE_COLS
                                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                                            "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"));
    s.Bind(1, u.token)
        .Bind(2, u.task_id)
        .Bind(3, u.attempt)
        .Bind(4, u.worker_id)
        .Bind(5, u.agent)
        .Bind(6, u.account)
        .Bind(7, u.queue)
        .Bind(8, u.session_id)
        .Bind(9, u.model)
        .Bind(10, u.tokens.input)
        .Bind(11, u.tokens.output)
        .Bind(12, u.tokens.cache_read)
        .Bind(13, u.tokens.cache_write)
        .Bind(14, UsdToMicro(u.cost_usd))
        .Bind(15, u.cost_estimated ? 1 : 0)
        .Bind(16, u.turns)
        .Bind(17, u.denials.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .Bind(18, u.started_at)
        .Bind(19, u.updated_at);
    return s.Run();
  }

  Result<std::optional<AttemptUsage>> GetUsage(std::int64_t token) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("SELECT " USAGE_COLS " FROM attempt_usage WHERE token = ?1"));
    s.Bind(1, token);
    return ReadOne<AttemptUsage>(s, ReadUsage);
  }

  Result<std::vector<AttemptUsage>> ListUsageForTask(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " USAGE_COLS " FROM attempt_usage "
                                            "WHERE task_id = ?1 ORDER BY token"));
    s.Bind(1, task_id);
    return ReadAll<AttemptUsage>(s, ReadUsage);
  }

  Result<std::vector<AttemptUsage>> ListUsage(Millis since, Millis until) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " USAGE_COLS " FROM attempt_usage "
                                            "WHERE updated_at >= ?1 AND (?2 = 0 OR updated_at < "
                                            "?2) ORDER BY updated_at, token"));
    s.Bind(1, since).Bind(2, until);
    return ReadAll<AttemptUsage>(s, ReadUsage);
  }

  Result<double> SumCostSince(Millis since, std::string_view queue) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT coalesce(sum(cost_micro_usd), 0) FROM "
                                            "attempt_usage WHERE updated_at >= ?1 AND "
                                            "(?2 = '' OR queue = ?2)"));
    s.Bind(1, since).Bind(2, queue);
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    return row ? MicroToUsd(s.Int(0)) : 0.0;
  }

  Result<double> TaskCost(std::string_view task_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT coalesce(sum(cost_micro_usd), 0) FROM "
                                            "attempt_usage WHERE task_id = ?1"));
    s.Bind(1, task_id);
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    return row ? MicroToUsd(s.Int(0)) : 0.0;
  }

  Result<std::vector<std::pair<std::string, UsageTotal>>> SumUsageOfTasks(
      const std::vector<std::string>& task_ids) override {
    std::vector<std::pair<std::string, UsageTotal>> out;
    if (task_ids.empty()) return out;
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT task_id, count(*), sum(input_tokens), sum(output_tokens), "
                            "sum(cache_read_tokens), sum(cache_write_tokens), "
                            "sum(cost_micro_usd), max(cost_estimated), sum(turns) "
                            "FROM attempt_usage WHERE task_id IN (SELECT value FROM "
                            "json_each(?1)) GROUP BY task_id ORDER BY task_id"));
    s.Bind(1, ListText(task_ids));
    for (;;) {
      TX_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.emplace_back(s.Text(0), UsageTotalOf(s));
    }
  }

  Result<std::vector<std::pair<std::string, UsageTotal>>> UsageByAgent() override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT agent, count(*), sum(input_tokens), sum(output_tokens), "
                            "sum(cache_read_tokens), sum(cache_write_tokens), "
                            "sum(cost_micro_usd), max(cost_estimated), sum(turns) "
                            "FROM attempt_usage GROUP BY agent ORDER BY agent"));
    std::vector<std::pair<std::string, UsageTotal>> out;
    for (;;) {
      TX_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return out;
      out.emplace_back(s.Text(0), UsageTotalOf(s));
    }
  }

  Status PutAgentLimit(const AgentLimit& l) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("INSERT OR REPLACE INTO agent_limits (" LIMIT_COLS
                                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    s.Bind(1, l.profile)
        .Bind(2, l.account)
        .Bind(3, l.until)
        .Bind(4, l.since)
        .Bind(5, l.reason)
        .Bind(6, l.task_id)
        .Bind(7, l.strikes)
        .Bind(8, l.resumed ? 1 : 0);
    return s.Run();
  }

  Result<std::vector<AgentLimit>> ListAgentLimits() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " LIMIT_COLS " FROM agent_limits "
                                            "ORDER BY profile, account"));
    return ReadAll<AgentLimit>(s, ReadLimit);
  }

  Result<bool> NoteOnce(std::string_view key, Millis at) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("INSERT OR IGNORE INTO notices (key, at) VALUES (?1, ?2)"));
    s.Bind(1, key).Bind(2, at);
    TX_RETURN_IF_ERROR(s.Run());
    return sqlite3_changes(db_.raw()) == 1;
  }

  Result<std::int64_t> GetNotifyCursor() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT event_id FROM notify_cursor WHERE id = 1"));
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return Error::Internal("the store has no notification cursor");
    return s.Int(0);
  }

  Status SetNotifyCursor(std::int64_t event_id) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("UPDATE notify_cursor SET event_id = ?1 WHERE id = 1"));
    s.Bind(1, event_id);
    TX_RETURN_IF_ERROR(s.Run());
    return ExpectChange(db_, "the notification cursor");
  }

  Status InsertDelivery(Delivery& d) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("INSERT INTO notify_deliveries (id, sink, event_id, event_type, "
                            "task_id, body, status, attempts, created_at, next_at, last_at, "
                            "last_error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                            "?12)"));
    s.Bind(1, d.id)
        .Bind(2, d.sink)
        .Bind(3, d.event_id)
        .Bind(4, d.event_type)
        .Bind(5, d.task_id)
        .Bind(6, d.body)
        .Bind(7, ToString(d.status))
        .Bind(8, d.attempts)
        .Bind(9, d.created_at)
        .Bind(10, d.next_at)
        .Bind(11, d.last_at)
        .Bind(12, d.last_error);
    TX_RETURN_IF_ERROR(s.Run());
    d.seq = db_.LastInsertRowid();
    return Ok();
  }

  Status UpdateDelivery(const Delivery& d) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("UPDATE notify_deliveries SET status = ?2, attempts = ?3, "
                                    "next_at = ?4, last_at = ?5, last_error = ?6 WHERE id = ?1"));
    s.Bind(1, d.id)
        .Bind(2, ToString(d.status))
        .Bind(3, d.attempts)
        .Bind(4, d.next_at)
        .Bind(5, d.last_at)
        .Bind(6, d.last_error);
    TX_RETURN_IF_ERROR(s.Run());
    return ExpectChange(db_, "delivery " + d.id);
  }

  Result<std::optional<Delivery>> GetDelivery(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE id = ?1"));
    s.Bind(1, id);
    return ReadOne<Delivery>(s, ReadDelivery);
  }

  Result<std::vector<Delivery>> ListDueDeliveries(Millis now, int limit) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE status = "
                            "'pending' AND next_at <= ?1 ORDER BY next_at, seq LIMIT ?2"));
    s.Bind(1, now).Bind(2, limit);
    return ReadAll<Delivery>(s, ReadDelivery);
  }

  Result<std::optional<Millis>> NextDeliveryAt() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT min(next_at) FROM notify_deliveries "
                                            "WHERE status = 'pending'"));
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || s.IsNull(0)) return std::optional<Millis>();
    return std::optional<Millis>(s.Int(0));
  }

  Result<std::vector<Delivery>> ListDeliveries(std::optional<DeliveryStatus> status,
                                               int limit) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE ?1 = '' OR "
                            "status = ?1 ORDER BY seq DESC LIMIT ?2"));
    s.Bind(1, status ? ToString(*status) : std::string_view()).Bind(2, limit > 0 ? limit : -1);
    return ReadAll<Delivery>(s, ReadDelivery);
  }

  Result<std::optional<OrchestratorState>> GetOrchestrator(std::string_view id) override {
    TX_ASSIGN_OR_RETURN(
        Stmt s, db_.Prepare("SELECT " ORCHESTRATOR_COLS " FROM orchestrators WHERE id = ?1"));
    s.Bind(1, id);
    return ReadOne<OrchestratorState>(s, ReadOrchestrator);
  }

  Result<std::vector<OrchestratorState>> ListOrchestrators() override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("SELECT " ORCHESTRATOR_COLS " FROM orchestrators ORDER BY id"));
    return ReadAll<OrchestratorState>(s, ReadOrchestrator);
  }

  Status PutOrchestrator(const OrchestratorState& o) override {
    TX_ASSIGN_OR_RETURN(Stmt s,
                        db_.Prepare("INSERT OR REPLACE INTO orchestrators (" ORCHESTRATOR_COLS
                                    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    s.Bind(1, o.id)
        .Bind(2, o.dir)
        .Bind(3, o.status)
        .Bind(4, o.pid)
        .Bind(5, o.hostname)
        .Bind(6, o.started_at)
        .Bind(7, o.seen_at)
        .Bind(8, o.config.dump())
        .Bind(9, o.request.dump())
        .Bind(10, o.pool.dump());
    return s.Run();
  }

  Result<ReconcilerRecord> GetReconcilerRecord() override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT leader, leader_since, last_reconcile_at, "
                                            "last_report FROM orchestrator WHERE id = 1"));
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return Error::Internal("the reconciler's row is missing");
    return ReconcilerRecord{s.Text(0), s.Int(1), s.Int(2), Object(s.Text(3))};
  }

  Status PutReconcilerRecord(const ReconcilerRecord& r) override {
    TX_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("UPDATE orchestrator SET leader = ?1, leader_since = "
                                            "?2, last_reconcile_at = ?3, last_report = ?4 "
                                            "WHERE id = 1"));
    s.Bind(1, r.leader).Bind(2, r.leader_since).Bind(3, r.last_reconcile_at);
    s.Bind(4, r.last_report.dump());
    return s.Run();
  }

 private:
  // The status of a worker's row as this transaction last read or wrote it (only UpdateWorker
  // and InsertWorker change a worker's status), or nullopt when it has not.
  std::optional<WorkerStatus> KnownStatus(std::string_view id) const {
    for (const auto& [known_id, status] : worker_status_) {
      if (known_id == id) return status;
    }
    return std::nullopt;
  }
  void RememberStatus(const std::string& id, WorkerStatus status) {
    for (auto& [known_id, known] : worker_status_) {
      if (known_id == id) {
        known = status;
        return;
      }
    }
    worker_status_.emplace_back(id, status);
  }

  Db& db_;
  bool made_ready_ = false;
  std::vector<std::pair<std::string, WorkerStatus>> worker_status_;  // a transaction's few
};

// One orchestrator runs per SQLite store, so it always leads.
class SoleLeadership final : public Leadership {
 public:
  bool Held() override { return true; }
};

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<Db> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

  Status Write(const TxnFn& fn) override { return Run(fn, "BEGIN IMMEDIATE"); }
  Status Read(const TxnFn& fn) override { return Run(fn, "BEGIN"); }

  Result<std::int64_t> ChangeCounter() override { return db_->QueryInt("PRAGMA data_version"); }
  Result<std::unique_ptr<ChangeWatch>> Watch() override { return WatchFile(path_); }
  std::string Describe() const override { return path_; }
  const Clock& clock() const override { return clock_; }
  Result<std::unique_ptr<Leadership>> TryLead() override {
    return std::unique_ptr<Leadership>(new SoleLeadership());
  }
  bool SharedByHosts() const override { return false; }

 private:
  // Runs a cached statement that returns no rows (BEGIN, COMMIT, ROLLBACK).
  Status Simple(const char* sql) {
    TX_ASSIGN_OR_RETURN(Stmt s, db_->Prepare(sql));
    return s.Run();
  }

  Status Run(const TxnFn& fn, const char* begin) {
    TX_RETURN_IF_ERROR(Simple(begin));
    SqliteTxn txn(*db_);
    Status s = fn(txn);
    if (!s.ok()) {
      (void)Simple("ROLLBACK");
      return s;
    }
    Status c = Simple("COMMIT");
    if (!c.ok()) {
      (void)Simple("ROLLBACK");
      return c;
    }
    if (txn.made_ready()) wake_.Notify();
    return c;
  }

  std::unique_ptr<Db> db_;
  std::string path_;
  RealClock clock_;
  WakeNotifier wake_{path_};
};

// This boot's id, or "" where the kernel does not say.
std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Steady readings count from the machine's boot: those of an earlier boot are meaningless now
// (and would make a dead worker look as if it had just beaten), so the first opener after a
// boot clears them, and silence recorded before it is judged on the wall clock.
Status ForgetOtherBoots(Db& db) {
  std::string boot = BootId();
  auto current = [&]() -> Result<bool> {
    TX_ASSIGN_OR_RETURN(Stmt s, db.Prepare("SELECT boot FROM steady_boot WHERE id = 1"));
    TX_ASSIGN_OR_RETURN(bool row, s.Step());
    return row && s.Text(0) == boot;
  };
  TX_ASSIGN_OR_RETURN(bool same, current());
  if (same) return Ok();
  TX_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  Status s = [&]() -> Status {
    TX_ASSIGN_OR_RETURN(bool again, current());
    if (again) return Ok();
    TX_RETURN_IF_ERROR(db.Exec(
        "UPDATE workers SET beat_steady = NULL WHERE beat_steady IS NOT NULL; "
        "UPDATE claims SET lease_expires_steady = NULL WHERE lease_expires_steady IS NOT NULL"));
    TX_ASSIGN_OR_RETURN(Stmt put,
                        db.Prepare("INSERT OR REPLACE INTO steady_boot (id, boot) VALUES (1, ?1)"));
    put.Bind(1, boot);
    return put.Run();
  }();
  if (!s.ok()) {
    (void)db.Exec("ROLLBACK");
    return s;
  }
  return db.Exec("COMMIT");
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqlite(const OpenOptions& o) {
  // SQLite's allocation statistics take a global mutex on every malloc; tx never reads them.
  // Both settings only take before SQLite initializes, i.e. before the first open.
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    InstallSmallAlloc();
    return true;
  }();
  (void)configured;
  if (o.synchronous != "NORMAL" && o.synchronous != "FULL") {
    return Error::InvalidArgument("invalid synchronous '" + o.synchronous +
                                  "': expected NORMAL or FULL");
  }
  bool memory = o.url == ":memory:";
  TX_ASSIGN_OR_RETURN(
      std::unique_ptr<Db> db,
      Db::Open(o.url, o.create || memory, std::chrono::milliseconds(o.busy_timeout_ms)));
  if (!memory) {
    // 1 KiB pages: a claim or a completion dirties about a dozen B-tree pages and the WAL logs
    // each whole, so small pages cut the bytes written (and fsynced at checkpoints) per
    // transaction about fourfold. It only applies while the file is still empty, i.e. when
    // `tx init` creates it; existing stores keep their page size.
    if (o.create) TX_RETURN_IF_ERROR(db->Exec("PRAGMA page_size = 1024"));
    TX_ASSIGN_OR_RETURN(std::int64_t wal_ok, db->QueryInt("PRAGMA journal_mode = WAL"));
    (void)wal_ok;
  }
  std::string sync = "PRAGMA synchronous = " + o.synchronous;
  TX_RETURN_IF_ERROR(db->Exec(sync.c_str()));
  TX_RETURN_IF_ERROR(
      db->Exec("PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; "
               "PRAGMA cache_size = -16000"));
  TX_RETURN_IF_ERROR(Migrate(*db, o.url));
  TX_RETURN_IF_ERROR(ForgetOtherBoots(*db));
  return std::unique_ptr<Store>(new SqliteStore(std::move(db), o.url));
}

}  // namespace tx::store::sqlite
