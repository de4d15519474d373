#pragma once
// Rows of the PostgreSQL store's results read into tx's types, and tx's types written as the
// parameters of its statements. A Read… fills `out` from row i of a result whose columns come
// in the order of its table's column list (pg_sql.h), starting at column 0 unless `at` says
// otherwise; it fails only on an enum's text that this binary does not know (a newer schema's),
// leaving `out` partly filled. A …Params gives the columns in the order its statements number
// them ($1, $2, …).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/claim.h"
#include "core/error.h"
#include "core/notify.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"
#include "store/postgres/pg_conn.h"

namespace tx::store::postgres {

// Reads the task whose columns start at column `at` (TASK_COLS order).
Status ReadTask(const Rows& r, int i, Task& t, int at);
Status ReadTask(const Rows& r, int i, Task& t);
// Every task column but seq, as $1 (id) ... $29 (finished_at).
Params TaskParams(const Task& t);

Status ReadClaim(const Rows& r, int i, Claim& c);
// $1..$11 of a claim's insert: every column but the token.
Params ClaimInsertParams(const Claim& c);

// Reads the worker whose columns start at column `at` (WORKER_COLS order).
Status ReadWorker(const Rows& r, int i, Worker& w, int at);
Status ReadWorker(const Rows& r, int i, Worker& w);
Params WorkerParams(const Worker& w);

Status ReadUsage(const Rows& r, int i, AttemptUsage& u);
// A sum of rows in columns 1 to 8: count(*), the four token kinds, cost, estimated, turns.
UsageTotal UsageTotalOf(const Rows& r, int i);
Status ReadLimit(const Rows& r, int i, AgentLimit& l);
Status ReadDelivery(const Rows& r, int i, Delivery& d);
Status ReadOrchestrator(const Rows& r, int i, OrchestratorState& o);

// Every row of `r`, read with `read`; the first failure.
template <typename T>
Result<std::vector<T>> ReadAll(const Rows& r, Status (*read)(const Rows&, int, T&)) {
  std::vector<T> out(static_cast<std::size_t>(r.size()));
  for (int i = 0; i < r.size(); ++i) TX_RETURN_IF_ERROR(read(r, i, out[static_cast<size_t>(i)]));
  return out;
}

// Row 0 of `r`, read with `read`, or nullopt when `r` has no rows.
template <typename T>
Result<std::optional<T>> ReadOne(const Rows& r, Status (*read)(const Rows&, int, T&)) {
  if (r.empty()) return std::optional<T>();
  Result<std::optional<T>> out(std::in_place, std::in_place);
  TX_RETURN_IF_ERROR(read(r, 0, **out));
  return out;
}

// Column 0 of every row, as text.
std::vector<std::string> FirstColumn(const Rows& r);
// A JSON array of strings (a list column's text, or json_agg's) → the strings; else none.
std::vector<std::string> JsonList(std::string_view text);

}  // namespace tx::store::postgres
