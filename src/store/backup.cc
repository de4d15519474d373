#include "store/backup.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "store/location.h"
#include "store/sqlite/migrations.h"

namespace tx::store {

namespace fs = std::filesystem;

namespace {

using Handle = std::unique_ptr<sqlite3, void (*)(sqlite3*)>;

void CloseHandle(sqlite3* db) { sqlite3_close_v2(db); }

// Pages copied per sqlite3_backup_step: 4 MiB of the store's 1 KiB pages. The source's snapshot
// is held across steps, so their size changes nothing for the writers; it bounds the work done
// between two looks at a busy answer.
constexpr int kStepPages = 4096;
// A step SQLite answers busy or locked is tried again after this long, until the busy timeout.
constexpr auto kBusySleep = std::chrono::milliseconds(10);
constexpr auto kBusyTimeout = std::chrono::seconds(10);

const char kPostgresHint[] =
    "; for PostgreSQL use pg_dump -Fc and pg_restore (docs/operations.md, Backup and restore)";

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

// fsync of a file, or of a directory (what makes a rename in it durable).
Status SyncPath(const std::string& path, bool directory) {
  Fd fd(::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC));
  if (!fd.valid()) return PosixError("cannot open " + path, errno);
  if (::fsync(fd.get()) != 0) return PosixError("cannot fsync " + path, errno);
  return Ok();
}

Error SqlError(sqlite3* db, int rc, const std::string& context) {
  std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int primary = rc & 0xff;
  // Not a database, or a damaged one: said of the file, not of this machine.
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return Error::InvalidArgument(context + ": " + msg);
  }
  return Error::Unavailable(context + ": " + msg);
}

Result<Handle> OpenHandle(const std::string& path, int flags, Millis busy_ms) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  Handle db(raw, CloseHandle);
  if (rc != SQLITE_OK) return SqlError(raw, rc, "cannot open " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(busy_ms));
  return db;
}

Status Exec(sqlite3* db, const char* sql, const std::string& context) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqlError(db, rc, context);
  return Ok();
}

// The first column of the first row of `sql`, as text ("" when there is no row). `code`, when
// given, receives SQLite's result code.
Result<std::string> QueryText(sqlite3* db, const char* sql, const std::string& context,
                              int* code = nullptr) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  if (code != nullptr) *code = rc;
  if (rc != SQLITE_OK) return SqlError(db, rc, context);
  rc = sqlite3_step(raw);
  if (code != nullptr) *code = rc;
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return SqlError(db, rc, context);
  const unsigned char* text = sqlite3_column_text(raw, 0);
  return text != nullptr ? std::string(reinterpret_cast<const char*>(text)) : std::string();
}

Result<std::int64_t> QueryInt(sqlite3* db, const char* sql, const std::string& context) {
  TX_ASSIGN_OR_RETURN(std::string text, QueryText(db, sql, context));
  return text.empty() ? 0 : std::stoll(text);
}

// What the database open on `db` holds, checked to be a tx store (inside the caller's read
// transaction, so the numbers are of the snapshot copied). `path` names it in messages.
Result<BackupReport> Inspect(sqlite3* db, const std::string& path, bool integrity) {
  BackupReport r;
  r.path = path;
  Result<std::int64_t> version = QueryInt(db, "PRAGMA user_version", "reading " + path);
  if (!version.ok()) {
    if (version.error().code() == ErrorCode::kInvalidArgument) {
      return Error::InvalidArgument(path + " is not a tx store: " + sqlite3_errmsg(db));
    }
    return version.error();
  }
  r.schema_version = *version;
  TX_ASSIGN_OR_RETURN(std::int64_t tables,
                      QueryInt(db,
                               "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name "
                               "IN ('tasks', 'claims', 'workers', 'events')",
                               "reading " + path));
  if (r.schema_version <= 0 || tables != 4) {
    return Error::InvalidArgument(path + " is not a tx store: it has no tx schema");
  }
  if (r.schema_version > sqlite::LatestSchemaVersion()) {
    return Error::InvalidArgument(path + " has schema version " + std::to_string(r.schema_version) +
                                  ", newer than this tx knows (" +
                                  std::to_string(sqlite::LatestSchemaVersion()) +
                                  "): restore it with a newer tx");
  }
  if (integrity) {
    TX_ASSIGN_OR_RETURN(std::string check,
                        QueryText(db, "PRAGMA integrity_check(1)", "checking " + path));
    if (check != "ok") {
      return Error::InvalidArgument(path + " is damaged: integrity_check says " + check);
    }
  }
  TX_ASSIGN_OR_RETURN(r.tasks, QueryInt(db, "SELECT count(*) FROM tasks", "reading " + path));
  TX_ASSIGN_OR_RETURN(r.events, QueryInt(db, "SELECT count(*) FROM events", "reading " + path));
  return r;
}

// Copies every page of `from` into `to` (their "main" databases), stepping until done. Busy or
// locked steps are retried after kBusySleep until `patience` has passed: then unavailable, or
// conflict with `busy_message` when one is given.
Status CopyPages(sqlite3* from, sqlite3* to, int step_pages, std::chrono::milliseconds patience,
                 const std::string& context, const std::string& busy_message = "") {
  sqlite3_backup* raw = sqlite3_backup_init(to, "main", from, "main");
  if (raw == nullptr) return SqlError(to, sqlite3_errcode(to), context);
  auto busy_since = std::chrono::steady_clock::time_point::min();
  int rc = SQLITE_OK;
  for (;;) {
    rc = sqlite3_backup_step(raw, step_pages);
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_OK) {
      busy_since = std::chrono::steady_clock::time_point::min();
      continue;
    }
    int primary = rc & 0xff;
    if (primary != SQLITE_BUSY && primary != SQLITE_LOCKED) break;
    auto now = std::chrono::steady_clock::now();
    if (busy_since == std::chrono::steady_clock::time_point::min()) busy_since = now;
    if (now - busy_since >= patience) break;
    std::this_thread::sleep_for(kBusySleep);
  }
  int finished = sqlite3_backup_finish(raw);  // frees it; the error of a failed step, if any
  if (rc == SQLITE_DONE && finished == SQLITE_OK) return Ok();
  int code = rc != SQLITE_DONE ? rc : finished;
  int primary = code & 0xff;
  if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && !busy_message.empty()) {
    return Error::Conflict(busy_message);
  }
  return Error::Unavailable(context + ": " + sqlite3_errstr(code));
}

// The files SQLite may keep beside a database file.
constexpr const char* kCompanions[] = {"", "-journal", "-wal", "-shm"};

// Removes a database file this process made, and its companions, unless disarmed (or empty).
class TempFiles {
 public:
  explicit TempFiles(std::string path) : path_(std::move(path)) {}
  TempFiles(const TempFiles&) = delete;
  TempFiles& operator=(const TempFiles&) = delete;
  ~TempFiles() {
    if (path_.empty()) return;
    for (const char* suffix : kCompanions) ::unlink((path_ + suffix).c_str());
  }
  void Disarm() { path_.clear(); }

 private:
  std::string path_;
};

// Removes the files in `dir` named `prefix` + a pid (+ a companion's suffix) whose process is
// gone: what a backup killed before its rename left.
void RemoveLeftovers(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    std::size_t digits = prefix.size();
    while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
    if (digits == prefix.size() || digits - prefix.size() > 9) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name.substr(prefix.size(), digits - prefix.size())));
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

// Whether `path` names the store `db` or one of the files SQLite and tx keep beside it.
bool IsStoreFile(const std::string& path, const std::string& db) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return false;
  fs::path d = fs::weakly_canonical(db, ec);
  if (ec) return false;
  for (const char* suffix : {"", "-journal", "-wal", "-shm", "-wake"}) {
    if (p == fs::path(d.string() + suffix)) return true;
  }
  return false;
}

}  // namespace

void BackupFile::Close::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Result<BackupReport> BackupSqlite(const std::string& db, const std::string& path, bool replace) {
  if (IsPostgresUrl(db)) {
    return Error::InvalidArgument("tx backup copies a SQLite store, not " + Describe(db) +
                                  kPostgresHint);
  }
  if (db == ":memory:") return Error::InvalidArgument("an in-memory store cannot be backed up");
  if (path.empty()) return Error::InvalidArgument("the backup's path is empty");
  std::error_code ec;
  fs::path target(path);
  if (fs::is_directory(target, ec)) {
    return Error::InvalidArgument(path + " is a directory: name the backup's file, e.g. " +
                                  (target / "tx.db").string());
  }
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return Error::NotFound("no directory " + dir.string() + " for the backup " + path);
  }
  if (!fs::exists(db, ec)) {
    return Error::NotFound("no tx store at " + db + " (run 'tx init' first, or pass --db)");
  }
  if (IsStoreFile(path, db)) {
    return Error::InvalidArgument(path + " is the store itself: back it up to another file");
  }
  if (fs::exists(fs::symlink_status(target, ec)) && !replace) {
    return Error::Conflict(path + " exists: pass --force to replace it");
  }

  // The source: read-only, one read transaction from its first read to the end of the copy.
  TX_ASSIGN_OR_RETURN(
      Handle source,
      OpenHandle(db, SQLITE_OPEN_READONLY,
                 std::chrono::duration_cast<std::chrono::milliseconds>(kBusyTimeout).count()));
  TX_RETURN_IF_ERROR(Exec(source.get(), "BEGIN", "reading " + db));
  TX_ASSIGN_OR_RETURN(BackupReport report, Inspect(source.get(), db, /*integrity=*/false));

  // The copy: a new file of this process's beside `path`, its owner's alone as the store is.
  // Those a killed backup of `path` left are removed first.
  std::string prefix = ".";
  prefix.append(target.filename().string()).append(".tx-backup-");
  RemoveLeftovers(dir, prefix);
  std::string tmp = (dir / (prefix + std::to_string(::getpid()))).string();
  for (const char* suffix : kCompanions) ::unlink((tmp + suffix).c_str());
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return PosixError("cannot create " + tmp, errno);
  }
  TempFiles cleanup(tmp);
  {
    TX_ASSIGN_OR_RETURN(Handle copy, OpenHandle(tmp, SQLITE_OPEN_READWRITE, 10'000));
    TX_RETURN_IF_ERROR(Exec(copy.get(), "PRAGMA synchronous = FULL", "writing " + tmp));
    TX_RETURN_IF_ERROR(
        CopyPages(source.get(), copy.get(), kStepPages,
                  std::chrono::duration_cast<std::chrono::milliseconds>(kBusyTimeout),
                  "copying " + db + " to " + tmp));
    (void)Exec(source.get(), "COMMIT", "reading " + db);
    // The copy holds the store's header, which says WAL: made a rollback-journal database, it is
    // one file that reads alone (a WAL database needs -shm beside it, even read-only).
    TX_ASSIGN_OR_RETURN(std::string mode,
                        QueryText(copy.get(), "PRAGMA journal_mode = DELETE", "writing " + tmp));
    if (mode != "delete") {
      return Error::Unavailable("cannot make " + tmp + " one file (journal mode " + mode + ")");
    }
  }  // closed: every byte SQLite wrote is in the file
  TX_RETURN_IF_ERROR(SyncPath(tmp, false));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return PosixError("cannot rename " + tmp + " to " + path, errno);
  cleanup.Disarm();
  TX_RETURN_IF_ERROR(SyncPath(dir.string(), true));
  report.path = path;
  report.bytes = static_cast<std::int64_t>(fs::file_size(path, ec));
  return report;
}

Result<BackupFile> BackupFile::Open(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Error::InvalidArgument(path + " is a directory, not a tx store");
  }
  if (!fs::exists(path, ec)) return Error::NotFound("no file at " + path);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, Close> db(raw);
  if (rc != SQLITE_OK) return SqlError(raw, rc, "cannot open " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 10'000);
  TX_RETURN_IF_ERROR(Exec(raw, "BEGIN", "reading " + path));
  TX_ASSIGN_OR_RETURN(BackupReport report, Inspect(raw, path, /*integrity=*/true));
  report.bytes = static_cast<std::int64_t>(fs::file_size(path, ec));
  return BackupFile(std::move(db), std::move(report));
}

Result<BackupReport> BackupFile::RestoreInto(const std::string& db, Millis wait_ms) {
  if (IsPostgresUrl(db)) {
    return Error::InvalidArgument("tx restore restores a SQLite store, not " + Describe(db) +
                                  kPostgresHint);
  }
  if (db == ":memory:") return Error::InvalidArgument("cannot restore into an in-memory store");
  if (IsStoreFile(report_.path, db)) {
    return Error::InvalidArgument(report_.path + " is the store itself");
  }
  // A new store is its owner's alone (as Db::Open makes one); SQLite gives its companions the
  // file's mode. Made here, it is removed again if the restore fails: an empty file would open
  // as an empty store.
  bool created = false;
  {
    Fd fd(::open(db.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid() && errno != EEXIST) return PosixError("cannot create " + db, errno);
    created = fd.valid();
  }
  TempFiles made(created ? db : std::string());
  const std::string busy = "the store " + db +
                           " is open in another process (tx serve, tx events --follow, tx top, "
                           "a sqlite3 shell, …): a restore needs it alone; close them first";
  TX_ASSIGN_OR_RETURN(Handle store, OpenHandle(db, SQLITE_OPEN_READWRITE, wait_ms));
  // Exclusive locking mode: once taken, the store's lock is held until this connection closes,
  // so nobody reads or writes the store between the switch below and the copy's commit.
  TX_RETURN_IF_ERROR(Exec(store.get(), "PRAGMA locking_mode = EXCLUSIVE", "opening " + db));
  // Out of WAL: SQLite does it only with no other connection on the file, after checkpointing
  // the -wal into the store and removing it, so no -wal is left to be mistaken for the new
  // store's. From here on, a kill leaves a hot journal that rolls an unfinished copy back.
  int rc = SQLITE_OK;
  Result<std::string> mode =
      QueryText(store.get(), "PRAGMA journal_mode = DELETE", "opening " + db, &rc);
  if (!mode.ok()) {
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) return Error::Conflict(busy);
    return mode.error();
  }
  if (*mode != "delete") return Error::Conflict(busy);
  TX_RETURN_IF_ERROR(Exec(store.get(), "PRAGMA synchronous = FULL", "opening " + db));
  // One write transaction of the store, committed when the last page is in.
  TX_RETURN_IF_ERROR(CopyPages(db_.get(), store.get(), -1, std::chrono::milliseconds(wait_ms),
                               "copying " + report_.path + " into " + db, busy));
  // Back to tx's journal mode (every tx sets it when it opens the store, should this fail).
  (void)QueryText(store.get(), "PRAGMA journal_mode = WAL", "opening " + db);
  store.reset();
  made.Disarm();
  BackupReport r = report_;
  std::error_code ec;
  r.path = db;
  r.bytes = static_cast<std::int64_t>(fs::file_size(db, ec));
  return r;
}

}  // namespace tx::store
