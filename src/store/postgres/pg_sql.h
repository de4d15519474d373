#pragma once
// The SQL text of the PostgreSQL store. Macros, not constants: Conn prepares a statement once per
// connection, keyed by the address of its string literal (pg_conn.h), so a statement must reach
// Conn::Exec or Conn::Queue as one literal, which these pieces are concatenated into where it is
// sent. A column list fixes the order in which pg_rows.h reads a row and fills its parameters.
// A statement that locks what it reads has " FOR UPDATE" added by its caller in a write.

namespace tx::store::postgres {

// Taken once by a transaction before its first event (see tx_event_horizon in migrations.cc).
#define EVENT_FENCE                                                            \
  "SELECT pg_advisory_xact_lock_shared(1953890304 + (last_value >> 31)::int, " \
  "(last_value & 2147483647)::int) FROM events_id_seq"

// The tail of a `WITH u AS (UPDATE … RETURNING 1)` that must change exactly one row: the server
// raises (tx_expect_one, SQLSTATE P0002, read back as not found with message $n) and the
// transaction aborts there, before the COMMIT that may be queued behind it.
#define EXPECT_ONE(n) "SELECT tx_expect_one(count(*), " n ") FROM u"

// The columns of each table, in the order pg_rows.h reads them.
#define TASK_COLS                                                                                \
  "seq, id, title, description, instructions, deliverables, steps, priority, queue, requires, "  \
  "after, owner, workdir, command, agent, timeout_ms, max_attempts, review, repo, base_branch, " \
  "metadata, result, error, status, attempt, run_after, created_at, updated_at, started_at, "    \
  "finished_at"

#define CLAIM_COLS                                                               \
  "token, task_id, worker_id, attempt, claimed_at, lease_ms, lease_expires_at, " \
  "renewed_count, status, ended_at, end_reason, exit_code"

#define WORKER_COLS                                                                      \
  "id, name, slot, hostname, pid, capabilities, queues, status, heartbeat_interval_ms, " \
  "registered_at, last_heartbeat_at, current_task_id, reason, metadata, request, pool, " \
  "busy_heartbeat_interval_ms"

#define USAGE_COLS                                                                               \
  "token, task_id, attempt, worker_id, agent, account, queue, session_id, model, input_tokens, " \
  "output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, cost_estimated, "       \
  "turns, denials, started_at, updated_at"

#define LIMIT_COLS "profile, account, until, since, reason, task_id, strikes, resumed"

#define DELIVERY_COLS                                                                           \
  "seq, id, sink, event_id, event_type, task_id, body, status, attempts, created_at, next_at, " \
  "last_at, last_error"

#define ORCHESTRATOR_COLS \
  "id, dir, status, pid, hostname, started_at, seen_at, config, request, pool"

// Reads by key, and a claim read with the rows it names.
#define GET_TASK "SELECT " TASK_COLS " FROM tasks WHERE id = $1"
#define GET_CLAIM "SELECT " CLAIM_COLS " FROM claims WHERE token = $1"
// A claim with its task and its worker, all three rows locked: every caller that holds a token
// goes on to change the three (ClaimService::CheckToken, EndClaim).
#define CLAIM_AND_ROWS                                                                     \
  "SELECT c.token, c.task_id, c.worker_id, c.attempt, c.claimed_at, c.lease_ms, "          \
  "c.lease_expires_at, c.renewed_count, c.status, c.ended_at, c.end_reason, c.exit_code, " \
  "t.seq, t.id, t.title, t.description, t.instructions, t.deliverables, t.steps, "         \
  "t.priority, t.queue, t.requires, t.after, t.owner, t.workdir, t.command, t.agent, "     \
  "t.timeout_ms, t.max_attempts, t.review, t.repo, t.base_branch, t.metadata, t.result, "  \
  "t.error, t.status, t.attempt, t.run_after, t.created_at, t.updated_at, t.started_at, "  \
  "t.finished_at, "                                                                        \
  "w.id, w.name, w.slot, w.hostname, w.pid, w.capabilities, w.queues, w.status, "          \
  "w.heartbeat_interval_ms, w.registered_at, w.last_heartbeat_at, w.current_task_id, "     \
  "w.reason, w.metadata, w.request, w.pool, w.busy_heartbeat_interval_ms "                 \
  "FROM claims c JOIN tasks t ON t.id = c.task_id JOIN workers w ON w.id = c.worker_id "
#define GET_CLAIM_AND_ROWS CLAIM_AND_ROWS "WHERE c.token = $1 FOR UPDATE OF c, t, w"
// The dependents of a claim's task, sent right after GET_CLAIM_AND_ROWS in the same round trip:
// a statement of its own, so that it reads after the locks are held. (A subquery of the locking
// statement would read the snapshot taken before it waited for a lock, and could miss a
// dependent that the lock's holder had just added.)
#define DEPENDENTS_OF_TOKEN                                                         \
  "SELECT coalesce(json_agg(task_id ORDER BY task_id)::text, '[]') FROM task_deps " \
  "WHERE depends_on = (SELECT task_id FROM claims WHERE token = $1)"
// GET_CLAIM_AND_ROWS for several tokens ($1, an array literal), locked in token order (so that
// two such transactions take their locks in the same order), and the dependents of each claim's
// task, sent right after it (for the reason above).
#define GET_CLAIMS_AND_ROWS \
  CLAIM_AND_ROWS "WHERE c.token = ANY($1::bigint[]) ORDER BY c.token FOR UPDATE OF c, t, w"
#define DEPENDENTS_OF_TOKENS                                                           \
  "SELECT c.task_id, coalesce((SELECT json_agg(d.task_id ORDER BY d.task_id) "         \
  "FROM task_deps d WHERE d.depends_on = c.task_id)::text, '[]') FROM claims c WHERE " \
  "c.token = ANY($1::bigint[])"
// The columns of CLAIM_AND_ROWS: the claim's, then the task's, then the worker's.
inline constexpr int kClaimCols = 12;
inline constexpr int kTaskCols = 30;

// The pick, for a write: the best eligible row, locked (rows other claimers hold are skipped,
// not waited for), with what the claim that follows needs — the fencing token reserved for it,
// and, from PICKED_CLAIMS sent right after in the same round trip, how many claims the task had
// (the attempt number) — so that claiming costs one round trip for the pick and nothing more
// until the commit. The outer query works for the chosen row only, not for every row the scan
// skips; it leaves the row's id in a transaction-local setting for PICKED_CLAIMS, which counts
// in a snapshot of its own, taken once the row is locked (a subquery here would count in the
// snapshot taken before the pick, and miss a claim made meanwhile on a task since requeued).
#define PICK_WHERE                                \
  "status = 'ready' AND run_after <= $2 "         \
  "AND (owner = '' OR owner = $3 OR owner = $4) " \
  "AND (requires = '[]' OR requires::jsonb <@ $5::jsonb) "
#define PICK_ONE_QUEUE \
  "SELECT " TASK_COLS " FROM tasks WHERE queue = ($1::jsonb ->> 0) AND " PICK_WHERE
#define PICK_QUEUES             \
  "SELECT " TASK_COLS           \
  " FROM tasks WHERE queue IN " \
  "(SELECT jsonb_array_elements_text($1::jsonb)) AND " PICK_WHERE
#define PICK_ORDER "ORDER BY priority DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED"
// The agent tasks a gated pick passes over (PickCriteria::blocked_agents, $6, and
// blocked_agent_queues, $7, as JSON arrays): a separate statement, so the usual pick stays as is.
#define AGENT_GATE \
  "AND (command <> '[]' OR NOT ($6::jsonb ? agent OR $6::jsonb ? '*' OR $7::jsonb ? queue)) "
#define PICK_ONE_QUEUE_GATED PICK_ONE_QUEUE AGENT_GATE
#define PICK_QUEUES_GATED PICK_QUEUES AGENT_GATE
#define PICK_FOR_CLAIM(pick)                                                                  \
  "WITH picked AS (" pick PICK_ORDER                                                          \
  ") SELECT picked.*, nextval('claims_token_seq'), set_config('tx.picked', picked.id, true) " \
  "FROM picked"
#define PICKED_CLAIMS \
  "SELECT count(*) FROM claims WHERE task_id = current_setting('tx.picked', true)"
// The same for up to $6 rows (PickReady): the picked rows go into the setting
// as a JSON array of {id, token}, best first. When no row is picked the server need not evaluate
// `ids` at all, so the setting is emptied first (RESET_PICKED, in the same round trip) and an empty
// one reads as no rows. (`numbered` is read twice, so it is computed once: one token per row.)
#define RESET_PICKED "SELECT set_config('tx.picked', '', true)"
#define PICK_MANY_FOR_CLAIM(pick)                                                         \
  "WITH picked AS (" pick                                                                 \
  "ORDER BY priority DESC, seq LIMIT $6 FOR UPDATE SKIP LOCKED), "                        \
  "numbered AS (SELECT picked.*, nextval('claims_token_seq') AS token FROM picked), "     \
  "ids AS (SELECT set_config('tx.picked', coalesce(json_agg(json_build_object('id', id, " \
  "'token', token) ORDER BY priority DESC, seq), '[]')::text, true) FROM numbered) "      \
  "SELECT numbered.* FROM numbered, ids ORDER BY priority DESC, seq"
#define PICKED_ROWS                                                                         \
  "ROWS FROM (jsonb_to_recordset(coalesce(nullif(current_setting('tx.picked', true), ''), " \
  "'[]')::jsonb) AS (id text, token bigint)) WITH ORDINALITY AS p(id, token, ord)"
#define PICKED_MANY_CLAIMS \
  "SELECT p.id, (SELECT count(*) FROM claims c WHERE c.task_id = p.id) FROM " PICKED_ROWS

// ListTasks: a search reads every row it passes (no index holds titles), as on SQLite.
#define TASK_FILTER                                                                               \
  "WHERE ($1 = '' OR status::text = $1) AND ($2 = '' OR queue = $2) AND ($3 = '' OR owner = $3) " \
  "AND ($6::text = '' OR agent = $6::text) "                                                      \
  "AND ($7::text = '' OR left(id, length($7::text)) = $7::text "                                  \
  "     OR strpos(lower(title), lower($7::text)) > 0) "                                           \
  "AND ($8::bigint = 0 OR created_at >= $8::bigint) "                                             \
  "AND ($9::bigint = 0 OR created_at < $9::bigint) "

// The statements of one Txn method each.
#define ACTIVE_CLAIM "SELECT " CLAIM_COLS " FROM claims WHERE task_id = $1 AND status = 'active'"
#define ACTIVE_CLAIMS "SELECT " CLAIM_COLS " FROM claims WHERE status = 'active' ORDER BY token"
#define EXPIRED_CLAIMS                                               \
  "SELECT " CLAIM_COLS                                               \
  " FROM claims WHERE status = 'active' AND lease_expires_at <= $1 " \
  "ORDER BY token"

#define GET_WORKER "SELECT " WORKER_COLS " FROM workers WHERE id = $1"
// Live workers only (ListWorkers): the literal terms let the planner use the partial index
// workers_live.
#define LIVE_WORKERS                                                   \
  "SELECT " WORKER_COLS                                                \
  " FROM workers WHERE status <> 'stopped' AND status <> 'dead' "      \
  "AND status::text IN (SELECT jsonb_array_elements_text($1::jsonb)) " \
  "ORDER BY registered_at DESC, seq DESC"
#define SOME_WORKERS                                  \
  "SELECT " WORKER_COLS                               \
  " FROM workers WHERE $1 = '[]' OR status::text IN " \
  "(SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY registered_at DESC, seq DESC"
// = ANY(ARRAY(...)), not IN (SELECT ...): the array is built once and looked up in the primary
// key, where the semi-join planned a scan of the whole fleet's rows for every batch of beats.
#define SOME_WORKERS_BY_ID             \
  "SELECT " WORKER_COLS                \
  " FROM workers WHERE id = ANY(ARRAY" \
  "(SELECT jsonb_array_elements_text($1::jsonb))) ORDER BY id"
#define SLOT_WORKERS                                              \
  "SELECT " WORKER_COLS                                           \
  " FROM workers WHERE status <> 'stopped' AND status <> 'dead' " \
  "AND slot = $1 AND pool = $2 ORDER BY registered_at DESC, seq DESC"

#define LIST_LIMITS "SELECT " LIMIT_COLS " FROM agent_limits ORDER BY profile, account"
#define GET_DELIVERY "SELECT " DELIVERY_COLS " FROM notify_deliveries WHERE id = $1"
#define GET_ORCHESTRATOR "SELECT " ORCHESTRATOR_COLS " FROM orchestrators WHERE id = $1"
#define GET_RECONCILER \
  "SELECT leader, leader_since, last_reconcile_at, last_report FROM orchestrator WHERE id = 1"

}  // namespace tx::store::postgres
