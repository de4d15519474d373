#pragma once
// A thin RAII layer over one sqlite3 connection: cached prepared statements (keyed by the SQL
// literal's address, so SQL passed here must be a string literal), binding, stepping and error
// conversion. Not thread-safe: one Db per thread.
//
// The connection also owns the policies that decide how concurrent processes share the file:
// - a busy handler that waits for another connection's lock in short, slowly growing sleeps
//   (SQLite's own sleeps whole milliseconds and up to 100 ms at a time);
// - the WAL checkpoint policy (a wal hook; see Db::WalHook). A later `PRAGMA wal_autocheckpoint`
//   on this connection would replace it with SQLite's default, which lets the WAL grow without
//   bound under a continuous multi-process write load;
// - no checkpoint when the connection closes unless the WAL it last wrote holds
//   kCloseCheckpointFrames or more (see ~Db);
// - a VFS shim that writes each committed transaction's WAL frames with one system call instead
//   of two per frame, and reads the WAL back in large reads when it rebuilds the WAL index, not
//   one a frame (db.cc, namespace walbatch). The file format, locking and the bytes written are
//   SQLite's own, so other programs (the sqlite3 shell) can open the store as usual.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace tx::store::sqlite {

class Db;

// A cached statement, borrowed for one use: reset and unbound when it goes out of scope.
class Stmt {
 public:
  Stmt(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt();

  Stmt& Bind(int index, std::int64_t value);
  Stmt& Bind(int index, int value) { return Bind(index, static_cast<std::int64_t>(value)); }
  Stmt& Bind(int index, std::string_view value);
  Stmt& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Stmt& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  // Binds text without SQLite's copy of it: `value` must stay as it is while this Stmt lives
  // (its destructor clears the bindings). For the columns of a row the caller holds.
  Stmt& BindKept(int index, std::string_view value);
  Stmt& Bind(int index, std::optional<int> value);
  Stmt& Bind(int index, std::optional<std::int64_t> value);

  // Steps once: true when a row is ready, false when done.
  Result<bool> Step();
  // Steps to completion, for statements that return no rows.
  Status Run();

  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
};

class Db {
 public:
  // Opens (or creates) the database file; `path` may be ":memory:".
  static Result<std::unique_ptr<Db>> Open(const std::string& path, bool create,
                                          std::chrono::milliseconds busy_timeout);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status Exec(const char* sql);           // one or more statements, no results
  Result<Stmt> Prepare(const char* sql);  // `sql` must be a string literal (cached by address)
  Result<std::int64_t> QueryInt(const char* sql);  // first column of the first row
  std::int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* raw() const { return db_; }

  // Converts a SQLite result code into our Error, with context.
  Error ToError(int rc, std::string_view context) const;

 private:
  explicit Db(sqlite3* db, std::chrono::milliseconds busy_timeout);
  static int BusyHandler(void* self, int count);
  static int WalHook(void* self, sqlite3* db, const char* schema, int frames);

  sqlite3* db_;
  std::chrono::milliseconds busy_timeout_;
  std::chrono::steady_clock::time_point busy_since_;
  // While WalHook's blocking checkpoint waits for locks, the busy handler gives up at this time
  // instead of after busy_timeout_.
  std::optional<std::chrono::steady_clock::time_point> checkpoint_deadline_;
  // After a checkpoint that could not finish, the next attempt waits for this many WAL frames.
  int checkpoint_retry_at_ = 0;
  // The WAL's frames after this connection's last commit (0 if it wrote none, or restarted it).
  int wal_frames_ = 0;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

}  // namespace tx::store::sqlite
