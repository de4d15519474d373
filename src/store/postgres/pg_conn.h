#pragma once
// A thin RAII layer over one libpq connection in pipeline mode: statements prepared once per
// connection (keyed by the SQL literal's address, so SQL passed here must be a string literal),
// text parameters and results, and errors classified by SQLSTATE so that the store knows what to
// retry. Not thread-safe: one Conn per thread.
//
// Why a pipeline: over TCP, each round trip to the server costs more CPU (in both kernels) than
// the statement itself. A statement whose result the caller does not need at once is Queue()d:
// it is sent with the next statement that must be answered (Exec) or with the COMMIT, in one
// packet, and its result is checked then. A transaction that reads three times therefore costs
// three round trips however many rows it writes. A write that must change exactly one row says
// so in its SQL (tx_expect_one, migrations.cc): the server raises, and the transaction aborts
// there, before any COMMIT queued behind it.
//
// Reconnecting: when the server ends the connection (restart, pg_terminate_backend, a network
// blip), Reconnect() opens a new one, with backoff, until the reconnect timeout; the prepared
// statements are prepared again on first use.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "store/postgres/libpq.h"

namespace tx::store::postgres {

struct PgConnDeleter {
  void operator()(PGconn* c) const { pq::PQfinish(c); }
};
struct PgResultDeleter {
  void operator()(PGresult* r) const { pq::PQclear(r); }
};
using PgConnPtr = std::unique_ptr<PGconn, PgConnDeleter>;
using PgResultPtr = std::unique_ptr<PGresult, PgResultDeleter>;

// Why the last statement failed, for the store's retry decision.
enum class Failure {
  kNone,
  kSerialization,  // 40001 or 40P01: roll back and run the transaction again
  kConnection,     // the connection is gone: reconnect, then run it again
  kOther,          // anything else: the transaction fails with this error
};

// The rows of one statement's result, read as text.
class Rows {
 public:
  Rows() = default;
  explicit Rows(PgResultPtr result) : result_(std::move(result)) {}
  int size() const { return result_ ? pq::PQntuples(result_.get()) : 0; }
  bool empty() const { return size() == 0; }
  bool IsNull(int row, int col) const { return pq::PQgetisnull(result_.get(), row, col) != 0; }
  std::string Text(int row, int col) const;
  std::string_view View(int row, int col) const;
  std::int64_t Int(int row, int col) const;
  // Rows changed by an INSERT, UPDATE or DELETE.
  std::int64_t Affected() const;
  // The command tag: "COMMIT", or "ROLLBACK" for a COMMIT of an aborted transaction.
  std::string_view Command() const { return result_ ? pq::PQcmdStatus(result_.get()) : ""; }

 private:
  PgResultPtr result_;
};

// Text parameters $1, $2, ... in order of Add().
class Params {
 public:
  Params& Add(std::int64_t v);
  Params& Add(int v) { return Add(static_cast<std::int64_t>(v)); }
  Params& Add(std::string_view v);
  Params& Add(const std::string& v) { return Add(std::string_view(v)); }
  Params& Add(const char* v) { return Add(std::string_view(v)); }
  Params& Add(std::optional<int> v);
  Params& AddNull();

  int size() const { return static_cast<int>(values_.size()); }
  // Pointers into the values, NULL for a null; valid while this object lives unchanged.
  std::vector<const char*> Pointers() const;

 private:
  std::vector<std::string> values_;
  std::vector<bool> null_;
};

class Conn {
 public:
  // Connects to `url` (a postgresql:// URL or a libpq connection string). The reconnect timeout
  // bounds how long Reconnect() keeps trying.
  static Result<std::unique_ptr<Conn>> Open(const std::string& url, Millis reconnect_timeout_ms);
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Sends a statement (prepared on first use; `sql` must be a string literal) without waiting
  // for its result, which is checked at the next Exec() or Sync(): an error there is theirs.
  // With `out`, the statement's rows are stored there then (it must outlive that call).
  void Queue(const char* sql, const Params& params, Rows* out = nullptr);
  // Sends a statement and returns its rows, after the results of everything queued before it.
  // The first failure among those is returned instead.
  Result<Rows> Exec(const char* sql, const Params& params = {});
  // Waits for the results of everything queued; the first failure among them.
  Status Sync();
  // Runs SQL text as is (no parameters, maybe several statements), outside the pipeline:
  // migrations. Nothing may be queued.
  Status Simple(const std::string& sql);

  // Queues COMMIT and syncs: ok only if it committed. A transaction that an earlier error
  // aborted "commits" as a rollback in PostgreSQL; that is reported as the error it is.
  Status Commit();
  // Syncs, ignoring failures, then rolls back whatever transaction is open. For error paths.
  void Rollback();

  Failure last_failure() const { return last_failure_; }
  // The error of the last failed statement (internal if none failed).
  Error last_error() const { return last_error_; }
  void ClearFailure() { last_failure_ = Failure::kNone; }
  bool broken() const { return pq::PQstatus(conn_.get()) != CONNECTION_OK; }
  // Connects again, retrying with backoff until the reconnect timeout; unavailable, naming how
  // long the server has been unreachable, after it.
  Status Reconnect();

  // The database server's clock minus this machine's monotonic clock (in ms since the epoch),
  // measured at the last (re)connect or MeasureClock().
  Millis clock_offset_ms() const { return clock_offset_ms_; }
  // Measures the offset again: one round trip.
  Status MeasureClock();
  const std::string& url() const { return url_; }

 private:
  // A statement sent whose result is still to be read.
  struct Pending {
    const char* sql;  // the literal: for messages, and the key of prepared_
    bool prepare;     // the Prepare of `sql`, not its execution
    Rows* out;        // where its rows go, if anywhere
  };

  Conn(std::string url, PgConnPtr conn, Millis reconnect_timeout_ms)
      : url_(std::move(url)), conn_(std::move(conn)), reconnect_timeout_ms_(reconnect_timeout_ms) {}
  Status AfterConnect();
  // Sends `sql` with `params`, preparing it first if this connection has not; records it pending.
  void Send(const char* sql, const Params& params, Rows* out);
  // Sends a sync and reads every pending result; the rows of the last one when `want_last`.
  Status Drain(Rows* last);
  // Records a failure to send (the connection is gone) so that Drain reports it.
  void SendFailed(const char* sql);
  // Classifies and records the failure of a statement.
  Error ToError(const PGresult* result, std::string_view context);

  std::string url_;
  PgConnPtr conn_;
  Millis reconnect_timeout_ms_;
  Millis clock_offset_ms_ = 0;
  Failure last_failure_ = Failure::kNone;
  Error last_error_ = Error::Internal("the transaction was aborted");
  // SQL literal → statement name: sent for preparing (the server may still refuse it: Drain then
  // forgets it). Names are never reused on a session: a name the server kept is never re-sent.
  std::unordered_map<const char*, std::string> prepared_;
  std::uint64_t next_name_ = 0;
  std::deque<Pending> pending_;
  std::optional<Error> send_error_;  // a send that failed since the last Drain
};

// Connects once (no retry), outside pipeline mode: for the change watch and the leader lock,
// which reconnect on their own schedule.
Result<PgConnPtr> Connect(const std::string& url);

// Milliseconds since the epoch, from this machine's monotonic clock (steady, whatever is done
// to the wall clock), aligned with the wall clock at the process's first call.
Millis MonotonicEpochMs();

}  // namespace tx::store::postgres
