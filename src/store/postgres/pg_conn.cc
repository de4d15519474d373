#include "store/postgres/pg_conn.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "store/location.h"

namespace tx::store::postgres {

namespace {

std::string OneLine(std::string m) {
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  std::replace(m.begin(), m.end(), '\n', ' ');
  return m;
}

std::string ConnError(PGconn* c) {
  return OneLine(c != nullptr ? pq::PQerrorMessage(c) : "out of memory");
}

// SQLSTATE classes that mean the session is gone, not the statement wrong: connection
// exceptions (08), and the server ending the session (57P01 terminated by an administrator,
// 57P02 crash shutdown, 57P03 cannot connect now).
bool ConnectionState(std::string_view state) {
  return state.substr(0, 2) == "08" || state == "57P01" || state == "57P02" || state == "57P03";
}

// Connects so that a peer gone without closing the connection (a host lost, a partition) is
// noticed in seconds, not after the kernels' two hours or fifteen minutes: TCP keepalives and a
// bound on unacknowledged data (tcp_user_timeout) here; on the server, keepalives of its own,
// which free the locks of a client host that vanished mid-transaction, and an end to sessions
// idle inside a transaction for a minute (no tx transaction waits on anything but the store).
// The URL's own settings win over these.
PGconn* ConnectWithKeepalives(const std::string& url) {
  static constexpr const char* keys[] = {"application_name",
                                         "connect_timeout",
                                         "keepalives",
                                         "keepalives_idle",
                                         "keepalives_interval",
                                         "keepalives_count",
                                         "tcp_user_timeout",
                                         "options",
                                         "dbname",
                                         nullptr};
  const char* values[] = {"tx",
                          "10",
                          "1",
                          "10",
                          "5",
                          "2",
                          "20000",
                          "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 "
                          "-c tcp_keepalives_count=3 -c idle_in_transaction_session_timeout=60000",
                          url.c_str(),
                          nullptr};
  return pq::PQconnectdbParams(keys, values, /*expand_dbname=*/1);
}

}  // namespace

namespace {

// Microseconds since the epoch from the monotonic clock, aligned with the wall clock once.
std::int64_t MonotonicEpochUs() {
  using namespace std::chrono;
  static const auto steady_origin = steady_clock::now();
  static const std::int64_t wall_origin =
      duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  return wall_origin + duration_cast<microseconds>(steady_clock::now() - steady_origin).count();
}

}  // namespace

Millis MonotonicEpochMs() { return MonotonicEpochUs() / 1000; }

std::string Rows::Text(int row, int col) const { return std::string(View(row, col)); }

std::string_view Rows::View(int row, int col) const {
  return {pq::PQgetvalue(result_.get(), row, col),
          static_cast<std::size_t>(pq::PQgetlength(result_.get(), row, col))};
}

std::int64_t Rows::Int(int row, int col) const {
  std::string_view v = View(row, col);
  std::int64_t out = 0;
  std::from_chars(v.data(), v.data() + v.size(), out);
  return out;
}

std::int64_t Rows::Affected() const {
  const char* n = pq::PQcmdTuples(result_.get());
  std::int64_t out = 0;
  std::from_chars(n, n + std::strlen(n), out);
  return out;
}

Params& Params::Add(std::int64_t v) {
  values_.push_back(std::to_string(v));
  null_.push_back(false);
  return *this;
}

Params& Params::Add(std::string_view v) {
  values_.emplace_back(v);
  null_.push_back(false);
  return *this;
}

Params& Params::Add(std::optional<int> v) { return v ? Add(*v) : AddNull(); }

Params& Params::AddNull() {
  values_.emplace_back();
  null_.push_back(true);
  return *this;
}

std::vector<const char*> Params::Pointers() const {
  std::vector<const char*> out(values_.size());
  for (std::size_t i = 0; i < values_.size(); ++i) {
    out[i] = null_[i] ? nullptr : values_[i].c_str();
  }
  return out;
}

Result<PgConnPtr> Connect(const std::string& url) {
  PgConnPtr c(ConnectWithKeepalives(url));
  if (!c || pq::PQstatus(c.get()) != CONNECTION_OK) {
    return Error::Unavailable("cannot connect to PostgreSQL at " + Describe(url) + ": " +
                              ConnError(c.get()));
  }
  pq::PQsetNoticeProcessor(
      c.get(), [](void*, const char*) {}, nullptr);
  return c;
}

Result<std::unique_ptr<Conn>> Conn::Open(const std::string& url, Millis reconnect_timeout_ms) {
  TX_ASSIGN_OR_RETURN(PgConnPtr c, Connect(url));
  std::unique_ptr<Conn> conn(new Conn(url, std::move(c), reconnect_timeout_ms));
  TX_RETURN_IF_ERROR(conn->AfterConnect());
  return conn;
}

// Quiets notices (a migration's "already exists" would print to stderr), enters pipeline mode,
// prices this session's reads by index as what they are, and measures the server's clock.
//
// random_page_cost: every statement of ours reads a few rows by key from tables that live in
// memory, and the default (4, a spinning disk's seek) lets the planner prefer a scan of a table it
// takes for small. A table never analyzed counts as 10 pages, so a prepared statement planned in a
// store's first seconds (claims looked up by `token = ANY($1)`) kept a sequential scan while the
// table grew to thousands of rows, until autovacuum's next analyze: a batch of claims cost three
// scans of every claim. At 1.1 (the usual figure for data in memory or on SSD) the index wins from
// the first row. Only this session's planning changes.
Status Conn::AfterConnect() {
  pq::PQsetNoticeProcessor(
      conn_.get(), [](void*, const char*) {}, nullptr);
  prepared_.clear();
  pending_.clear();
  send_error_.reset();
  if (pq::PQpipelineStatus(conn_.get()) == PQ_PIPELINE_OFF &&
      pq::PQenterPipelineMode(conn_.get()) != 1) {
    return Error::Unavailable("cannot enter pipeline mode: " + ConnError(conn_.get()));
  }
  Queue("SET random_page_cost = 1.1", {});  // goes with the clock's first round trip
  return MeasureClock();
}

// The offset is the server's time minus the midpoint of a round trip, good to half of it: of
// three tries, the shortest round trip's (as NTP does), so that one delayed answer on a busy
// machine does not skew every time this connection writes.
Status Conn::MeasureClock() {
  std::int64_t best_rtt_us = -1;
  for (int i = 0; i < 3; ++i) {
    std::int64_t before = MonotonicEpochUs();
    TX_ASSIGN_OR_RETURN(Rows r, Exec("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)"
                                     "::bigint"));
    std::int64_t after = MonotonicEpochUs();
    if (best_rtt_us >= 0 && after - before >= best_rtt_us) continue;
    best_rtt_us = after - before;
    clock_offset_ms_ = (r.Int(0, 0) - (before + after) / 2) / 1000;
  }
  return Ok();
}

Error Conn::ToError(const PGresult* result, std::string_view context) {
  const char* state =
      result != nullptr ? pq::PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string_view sqlstate = state != nullptr ? state : "";
  std::string msg = result != nullptr && *pq::PQresultErrorMessage(result) != '\0'
                        ? OneLine(pq::PQresultErrorMessage(result))
                        : ConnError(conn_.get());
  std::string where = " (in: " + std::string(context.substr(0, 80)) + ")";
  Error e = Error::Internal("");
  if (sqlstate == "P0002" && result != nullptr) {
    // tx_expect_one: a write that must have changed one row; its message is the whole story.
    last_failure_ = Failure::kOther;
    const char* primary = pq::PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    last_error_ = Error::NotFound(primary != nullptr ? primary : msg);
    return last_error_;
  }
  if (sqlstate == "40001" || sqlstate == "40P01") {
    last_failure_ = Failure::kSerialization;
    e = Error::Unavailable("store busy: " + msg + where);
  } else if (sqlstate.empty() ? broken() : ConnectionState(sqlstate)) {
    last_failure_ = Failure::kConnection;
    e = Error::Unavailable("lost the connection to PostgreSQL at " + Describe(url_) + ": " + msg);
  } else {
    last_failure_ = Failure::kOther;
    if (sqlstate.substr(0, 2) == "23") {
      e = Error::Conflict("constraint failed: " + msg + where);
    } else if (sqlstate == "53100" || sqlstate == "53200" || sqlstate == "53300") {
      e = Error::Unavailable("store out of resources: " + msg + where);
    } else {
      e = Error::Internal("postgres error " + std::string(sqlstate) + ": " + msg + where);
    }
  }
  last_error_ = e;
  return e;
}

void Conn::SendFailed(const char* sql) {
  if (!send_error_) send_error_ = ToError(nullptr, sql);
}

void Conn::Send(const char* sql, const Params& params, Rows* out) {
  if (send_error_) return;  // a send failed: nothing more is sent until the next Drain
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "tx" + std::to_string(next_name_++);
    if (pq::PQsendPrepare(conn_.get(), name.c_str(), sql, 0, nullptr) != 1) return SendFailed(sql);
    pending_.push_back(Pending{sql, /*prepare=*/true, nullptr});
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values = params.Pointers();
  if (pq::PQsendQueryPrepared(conn_.get(), it->second.c_str(), params.size(), values.data(),
                              nullptr, nullptr, 0) != 1) {
    return SendFailed(sql);
  }
  pending_.push_back(Pending{sql, /*prepare=*/false, out});
}

void Conn::Queue(const char* sql, const Params& params, Rows* out) { Send(sql, params, out); }

// Only the first failure is classified and reported: the statements after it in the same sync
// were not run (PGRES_PIPELINE_ABORTED) or ran in an aborted transaction, and say nothing new.
// A prepare the server did not carry out (refused, or aborted by an earlier failure) is
// forgotten, so that the statement is prepared again at its next use.
Status Conn::Drain(Rows* last) {
  std::optional<Error> first = send_error_;
  send_error_.reset();
  if (pending_.empty()) return first ? Status(*first) : Ok();
  auto lost = [&](const char* context) -> Status {
    if (!first) first = ToError(nullptr, context);
    pending_.clear();
    prepared_.clear();  // the session, and every statement it had, is gone
    return *first;
  };
  if (broken()) return lost("sync");
  // A sync even after a failed send: without one the server never answers what was sent.
  if (pq::PQpipelineSync(conn_.get()) != 1) return lost("sync");
  while (!pending_.empty()) {
    Pending p = pending_.front();
    pending_.pop_front();
    PgResultPtr r(pq::PQgetResult(conn_.get()));
    if (!r) return lost(p.sql);
    // Each statement's results end with a null.
    while (PgResultPtr extra{pq::PQgetResult(conn_.get())}) {
    }
    ExecStatusType st = pq::PQresultStatus(r.get());
    bool ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
    if (p.prepare) {
      if (!ok) prepared_.erase(p.sql);
      if (!ok && st != PGRES_PIPELINE_ABORTED && !first) first = ToError(r.get(), p.sql);
      continue;
    }
    if (st == PGRES_PIPELINE_ABORTED) continue;
    if (!ok) {
      if (!first) first = ToError(r.get(), p.sql);
      continue;
    }
    if (p.out != nullptr) {
      *p.out = Rows(std::move(r));
    } else if (pending_.empty() && last != nullptr) {
      *last = Rows(std::move(r));
    }
  }
  // The sync's own result.
  PgResultPtr sync(pq::PQgetResult(conn_.get()));
  if (!sync || pq::PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) {
    if (!first) first = ToError(sync.get(), "sync");
    if (broken()) prepared_.clear();
  }
  return first ? Status(*first) : Ok();
}

Result<Rows> Conn::Exec(const char* sql, const Params& params) {
  Send(sql, params, nullptr);
  Rows rows;
  TX_RETURN_IF_ERROR(Drain(&rows));
  return rows;
}

Status Conn::Sync() { return Drain(nullptr); }

Status Conn::Simple(const std::string& sql) {
  TX_RETURN_IF_ERROR(Sync());
  if (pq::PQexitPipelineMode(conn_.get()) != 1) {
    return Error::Internal("cannot leave pipeline mode: " + ConnError(conn_.get()));
  }
  PgResultPtr r(pq::PQexec(conn_.get(), sql.c_str()));
  ExecStatusType st = pq::PQresultStatus(r.get());
  Status s = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK ? Ok() : Status(ToError(r.get(), sql));
  if (!broken() && pq::PQenterPipelineMode(conn_.get()) != 1) {
    return Error::Internal("cannot enter pipeline mode: " + ConnError(conn_.get()));
  }
  return s;
}

Status Conn::Commit() {
  TX_ASSIGN_OR_RETURN(Rows r, Exec("COMMIT"));
  // COMMIT of a transaction an error aborted answers ROLLBACK; that error was reported when it
  // happened, unless the caller went on past it.
  if (r.Command() == "ROLLBACK") return last_error_;
  return Ok();
}

void Conn::Rollback() {
  (void)Sync();
  if (broken()) return;
  Result<Rows> r = Exec("ROLLBACK");
  (void)r;
}

Status Conn::Reconnect() {
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::milliseconds(reconnect_timeout_ms_);
  auto wait = std::chrono::milliseconds(50);
  pending_.clear();
  send_error_.reset();
  for (;;) {
    pq::PQreset(conn_.get());
    if (pq::PQstatus(conn_.get()) == CONNECTION_OK) {
      last_failure_ = Failure::kNone;
      Status s = AfterConnect();
      if (s.ok() || !broken()) return s;
    }
    if (std::chrono::steady_clock::now() + wait > deadline) break;
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(2000));
  }
  auto gone =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  last_failure_ = Failure::kOther;  // no more retries
  return Error::Unavailable("PostgreSQL at " + Describe(url_) + " unreachable for " +
                            std::to_string(gone.count()) + " s (the reconnect timeout is " +
                            std::to_string(reconnect_timeout_ms_ / 1000) +
                            " s, TX_PG_RECONNECT_TIMEOUT): " + ConnError(conn_.get()));
}

}  // namespace tx::store::postgres
