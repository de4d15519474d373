#include "store/sqlite/db.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

namespace tx::store::sqlite {

Stmt::~Stmt() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Stmt& Stmt::Bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Stmt& Stmt::Bind(int index, std::string_view value) {
  // A default string_view has a null data pointer, which SQLite would bind as NULL, not ''.
  const char* data = value.data() != nullptr ? value.data() : "";
  sqlite3_bind_text(stmt_, index, data, static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::Bind(int index, std::optional<int> value) {
  if (value) {
    sqlite3_bind_int64(stmt_, index, *value);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
  return *this;
}

Result<bool> Stmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->ToError(rc, sqlite3_sql(stmt_));
}

Status Stmt::Run() {
  for (;;) {
    TX_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Ok();
  }
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

Db::Db(sqlite3* db, std::chrono::milliseconds busy_timeout)
    : db_(db), busy_timeout_(busy_timeout) {}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create,
                                     std::chrono::milliseconds busy_timeout) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) flags |= SQLITE_OPEN_CREATE;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    if (rc == SQLITE_CANTOPEN && !create) {
      return Error::Unavailable("no tx store at " + path + " (run 'tx init' first, or pass --db)");
    }
    return Error::Unavailable("cannot open " + path + ": " + msg);
  }
  std::unique_ptr<Db> db(new Db(raw, busy_timeout));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_handler(raw, &Db::BusyHandler, db.get());
  return db;
}

// Waits for another connection's write lock to clear. SQLite's own handler sleeps whole
// milliseconds and up to 100 ms at a time, which caps a contended queue at a few hundred
// transactions a second; short sleeps that grow slowly keep hand-offs in the tens of microseconds.
int Db::BusyHandler(void* self_ptr, int count) {
  auto* self = static_cast<Db*>(self_ptr);
  auto now = std::chrono::steady_clock::now();
  if (count == 0) self->busy_since_ = now;
  if (now - self->busy_since_ >= self->busy_timeout_) return 0;
  if (count < 4) {
    sched_yield();
  } else {
    long micros = std::min<long>(20L * (count - 3), 2000L);
    timespec ts{0, micros * 1000L};
    nanosleep(&ts, nullptr);
  }
  return 1;
}

Error Db::ToError(int rc, std::string_view context) const {
  std::string msg = std::string(sqlite3_errmsg(db_)) + " (in: " + std::string(context) + ")";
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return Error::Unavailable("store busy for longer than the busy timeout: " + msg);
  }
  if (primary == SQLITE_CONSTRAINT) return Error::Conflict("constraint failed: " + msg);
  if (primary == SQLITE_FULL || primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
      primary == SQLITE_READONLY) {
    return Error::Unavailable("store I/O error: " + msg);
  }
  return Error::Internal("sqlite error " + std::to_string(rc) + ": " + msg);
}

Status Db::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    Error e = ToError(rc, sql);
    return Error(e.code(), msg + " (in: " + std::string(sql).substr(0, 80) + ")");
  }
  return Ok();
}

Result<Stmt> Db::Prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Stmt(this, it->second);
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return ToError(rc, sql);
  cache_.emplace(sql, stmt);
  return Stmt(this, stmt);
}

Result<std::int64_t> Db::QueryInt(const char* sql) {
  TX_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
  TX_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Error::Internal(std::string("no row from: ") + sql);
  return stmt.Int(0);
}

}  // namespace tx::store::sqlite
