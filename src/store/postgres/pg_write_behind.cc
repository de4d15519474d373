#include "store/postgres/pg_write_behind.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_sql.h"

namespace tx::store::postgres {

namespace {

// Kept-back writes of one kind (WriteBehind::Flush) go as one statement from this many rows; fewer
// go one statement each, which costs the server less than unpacking a JSON document (the one
// or two of a transaction that claims or reports a single task).
constexpr std::size_t kSetWriteRows = 3;

// The JSON array of `rows` (each made by `to_json`) for one set-wise write, or nullopt when
// they are too few to be worth one (kSetWriteRows) or some text is not valid UTF-8: the rows
// then go one statement each, and the server judges the text as it would have.
template <typename Row, typename ToJson>
std::optional<std::string> SetRows(const std::vector<Row>& rows, ToJson to_json) {
  if (rows.size() < kSetWriteRows) return std::nullopt;
  nlohmann::json array = nlohmann::json::array();
  for (const Row& r : rows) array.push_back(to_json(r));
  try {
    return array.dump();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// Every column of a claim, for its set-wise insert or update (an update reads only the
// columns it changes).
nlohmann::json ClaimRow(const Claim& c) {
  return {{"token", c.token},
          {"task_id", c.task_id},
          {"worker_id", c.worker_id},
          {"attempt", c.attempt},
          {"claimed_at", c.claimed_at},
          {"lease_ms", c.lease_ms},
          {"lease_expires_at", c.lease_expires_at},
          {"renewed_count", c.renewed_count},
          {"status", ToString(c.status)},
          {"ended_at", c.ended_at},
          {"end_reason", ToString(c.end_reason)},
          {"exit_code", c.exit_code ? nlohmann::json(*c.exit_code) : nullptr}};
}

// The tail of a set-wise UPDATE … RETURNING 1 named u that must change `n` rows: the server
// raises (as EXPECT_ONE does) when fewer were found, naming the kind of row.
Params CountedRows(std::string rows, std::size_t n, const char* kind) {
  Params p;
  p.Add(rows).Add(static_cast<std::int64_t>(n));
  p.Add("of " + std::to_string(n) + " " + kind + " to update, some were not found");
  return p;
}

}  // namespace

void WriteBehind::UpdateTaskState(const Task& t) {
  TaskState state{t.id,    t.status,     t.attempt,    t.run_after,  t.result,
                  t.error, t.updated_at, t.started_at, t.finished_at};
  if (auto at = pending_state_at_.find(t.id); at != pending_state_at_.end()) {
    pending_states_[at->second] = std::move(state);
  } else {
    pending_state_at_.emplace(t.id, pending_states_.size());
    pending_states_.push_back(std::move(state));
  }
}

void WriteBehind::InsertClaim(const Claim& c) {
  pending_claim_at_[c.token] = {true, pending_inserts_.size()};
  pending_inserts_.push_back(c);
}

void WriteBehind::UpdateClaim(const Claim& c) {
  if (auto at = pending_claim_at_.find(c.token); at != pending_claim_at_.end()) {
    (at->second.inserted ? pending_inserts_ : pending_updates_)[at->second.index] = c;
  } else {
    pending_claim_at_[c.token] = {false, pending_updates_.size()};
    pending_updates_.push_back(c);
  }
}

void WriteBehind::AppendEvent(const std::string& type, Millis at, const std::string& task_id,
                              const std::string& worker_id, std::string_view data) {
  pending_events_.push_back({type, at, task_id, worker_id, std::string(data)});
}

void WriteBehind::Flush() {
  FlushClaimUpdates();
  FlushClaimInserts();
  FlushTaskStates();
  FlushEvents();
  pending_claim_at_.clear();
}

void WriteBehind::FlushClaimUpdates() {
  std::vector<Claim> claims;
  claims.swap(pending_updates_);
  if (claims.empty()) return;
  std::optional<std::string> rows = SetRows(claims, ClaimRow);
  if (rows) {
    c_.Queue(
        "WITH v AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(token bigint, "
        "lease_ms bigint, lease_expires_at bigint, renewed_count integer, status text, "
        "ended_at bigint, end_reason text, exit_code integer)), "
        "u AS (UPDATE claims c SET lease_ms = v.lease_ms, "
        "lease_expires_at = v.lease_expires_at, renewed_count = v.renewed_count, "
        "status = v.status::tx_claim_status, ended_at = v.ended_at, "
        "end_reason = v.end_reason, exit_code = v.exit_code FROM v "
        "WHERE c.token = v.token AND c.token = ANY(ARRAY(SELECT token FROM v)) RETURNING 1) "
        "SELECT tx_expect_one((count(*) = $2)::int, $3) FROM u",
        CountedRows(std::move(*rows), claims.size(), "claims"));
    return;
  }
  for (const Claim& c : claims) {
    Params p;
    p.Add(c.token)
        .Add(c.lease_ms)
        .Add(c.lease_expires_at)
        .Add(c.renewed_count)
        .Add(ToString(c.status))
        .Add(c.ended_at)
        .Add(ToString(c.end_reason))
        .Add(c.exit_code)
        .Add("claim " + std::to_string(c.token) + " not found");
    c_.Queue(
        "WITH u AS (UPDATE claims SET lease_ms = $2, lease_expires_at = $3, "
        "renewed_count = $4, status = $5, ended_at = $6, end_reason = $7, "
        "exit_code = $8 WHERE token = $1 RETURNING 1) " EXPECT_ONE("$9"),
        p);
  }
}

void WriteBehind::FlushClaimInserts() {
  std::vector<Claim> claims;
  claims.swap(pending_inserts_);
  if (claims.empty()) return;
  std::optional<std::string> rows = SetRows(claims, ClaimRow);
  if (rows) {
    c_.Queue(
        "INSERT INTO claims (task_id, worker_id, attempt, claimed_at, lease_ms, "
        "lease_expires_at, renewed_count, status, ended_at, end_reason, exit_code, token) "
        "SELECT task_id, worker_id, attempt, claimed_at, lease_ms, lease_expires_at, "
        "renewed_count, status::tx_claim_status, ended_at, end_reason, exit_code, token "
        "FROM jsonb_to_recordset($1::jsonb) AS v(token bigint, task_id text, worker_id text, "
        "attempt integer, claimed_at bigint, lease_ms bigint, lease_expires_at bigint, "
        "renewed_count integer, status text, ended_at bigint, end_reason text, "
        "exit_code integer) ORDER BY token",
        Params().Add(*rows));
    return;
  }
  for (const Claim& c : claims) {
    Params p = ClaimInsertParams(c);
    p.Add(c.token);
    c_.Queue(
        "INSERT INTO claims (task_id, worker_id, attempt, claimed_at, lease_ms, "
        "lease_expires_at, renewed_count, status, ended_at, end_reason, exit_code, "
        "token) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        p);
  }
}

void WriteBehind::FlushTaskStates() {
  std::vector<TaskState> states;
  states.swap(pending_states_);
  pending_state_at_.clear();
  if (states.empty()) return;
  std::optional<std::string> rows = SetRows(states, [](const TaskState& t) {
    return nlohmann::json{{"id", t.id},
                          {"status", ToString(t.status)},
                          {"attempt", t.attempt},
                          {"run_after", t.run_after},
                          {"result", t.result},
                          {"error", t.error},
                          {"updated_at", t.updated_at},
                          {"started_at", t.started_at},
                          {"finished_at", t.finished_at}};
  });
  if (rows) {
    c_.Queue(
        "WITH v AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(id text, status text, "
        "attempt integer, run_after bigint, result text, error text, updated_at bigint, "
        "started_at bigint, finished_at bigint)), "
        "u AS (UPDATE tasks t SET status = v.status::tx_task_status, attempt = v.attempt, "
        "run_after = v.run_after, result = v.result, error = v.error, "
        "updated_at = v.updated_at, started_at = v.started_at, finished_at = v.finished_at "
        "FROM v WHERE t.id = v.id AND t.id = ANY(ARRAY(SELECT id FROM v)) RETURNING 1) "
        "SELECT tx_expect_one((count(*) = $2)::int, $3) FROM u",
        CountedRows(std::move(*rows), states.size(), "tasks"));
    return;
  }
  for (const TaskState& t : states) {
    Params p;
    p.Add(t.id)
        .Add(ToString(t.status))
        .Add(t.attempt)
        .Add(t.run_after)
        .Add(t.result)
        .Add(t.error)
        .Add(t.updated_at)
        .Add(t.started_at)
        .Add(t.finished_at)
        .Add("task " + t.id + " not found");
    c_.Queue(
        "WITH u AS (UPDATE tasks SET status = $2, attempt = $3, run_after = $4, "
        "result = $5, error = $6, updated_at = $7, started_at = $8, "
        "finished_at = $9 WHERE id = $1 RETURNING 1) " EXPECT_ONE("$10"),
        p);
  }
}

void WriteBehind::FlushEvents() {
  std::vector<PendingEvent> events;
  events.swap(pending_events_);
  if (events.empty()) return;
  std::optional<std::string> rows = SetRows(events, [](const PendingEvent& e) {
    return nlohmann::json{{"type", e.type},
                          {"at", e.at},
                          {"task_id", e.task_id},
                          {"worker_id", e.worker_id},
                          {"data", e.data}};
  });
  if (rows) {
    // Numbered in the order they were appended.
    c_.Queue(
        "INSERT INTO events (type, at, task_id, worker_id, data) "
        "SELECT type, at, task_id, worker_id, data FROM ROWS FROM (jsonb_to_recordset($1::jsonb) "
        "AS (type text, at bigint, task_id text, worker_id text, data text)) WITH ORDINALITY "
        "AS v(type, at, task_id, worker_id, data, n) ORDER BY n",
        Params().Add(*rows));
    return;
  }
  for (const PendingEvent& e : events) {
    c_.Queue("INSERT INTO events (type, at, task_id, worker_id, data) VALUES ($1, $2, $3, $4, $5)",
             Params().Add(e.type).Add(e.at).Add(e.task_id).Add(e.worker_id).Add(e.data));
  }
}

}  // namespace tx::store::postgres
