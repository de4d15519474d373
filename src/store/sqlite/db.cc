#include "store/sqlite/db.h"

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tx::store::sqlite {

namespace {

// ---- WAL write batching --------------------------------------------------------------------
// SQLite appends each WAL frame with two pwrite() calls (the 24-byte frame header, then the
// page), so a commit of F frames costs 2F system calls that each copy into one or two page-cache
// pages. This VFS shim wraps only the -wal file: it gathers a transaction's appended frames in
// memory and writes them with one pwrite() when the commit frame (a frame header whose "database
// size after commit" field is non-zero) has been written, i.e. before sqlite3WalFrames() returns
// and before the new WAL-index header is published to other connections. Any other access to the
// WAL file (read, sync, truncate, size, file-control, close, a write that is not the next frame
// part) first writes out what is gathered, so SQLite sees exactly the file it wrote. The bytes
// and their order on disk are unchanged; only the number of system calls is.
//
// It also reads ahead while SQLite rebuilds the WAL index (walIndexRecover, run by the first
// connection to open a store that holds a WAL): that reads the 32-byte WAL header at offset 0,
// then every frame in order, one pread() each (1,048 bytes for a 1 KiB page), which was most of
// the system calls of a `tx task add` after a few hundred adds. The rebuild holds the WAL's write
// and checkpoint locks, so no one changes the file meanwhile: the header read starts a sequence
// that is served from kReadAhead-byte reads, each next read beginning where the last ended. Any
// other call on the file ends it (a page read, a write, a sync, a truncate, a file-control,
// close), since once the index is rebuilt other connections write again.
namespace walbatch {

constexpr int kMaxBuffer = 256 * 1024;  // written out early when a transaction gathers more
constexpr int kReadAhead = 32 * 1024;   // ~30 frames of 1 KiB pages a read while recovering
constexpr int kWalHeader = 32;          // the WAL file's header; its read starts a recovery

struct WalFile {
  sqlite3_file base;   // base.pMethods = &kMethods
  sqlite3_file* real;  // the wrapped file, in the same allocation after this struct
  char* buf;           // gathered bytes (sqlite3_malloc), for file offsets [off, off + len)
  int len;
  int cap;
  sqlite3_int64 off;
  bool expect_page;     // the last gathered write was a frame header
  bool commit_pending;  // ... of a commit frame: write out after its page
  // The read-ahead: while `reading_ahead`, bytes [ahead_off, ahead_off + ahead_len) of the file
  // are in `ahead` (sqlite3_malloc, kReadAhead bytes) and the sequence's next read must start at
  // ahead_next.
  bool reading_ahead;
  char* ahead;
  int ahead_len;
  sqlite3_int64 ahead_off;
  sqlite3_int64 ahead_next;
};

constexpr int RoundUp8(int n) { return (n + 7) & ~7; }

sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_vfs;

// The unix VFS writes at most 128 KiB - 1 bytes per call (seekAndWrite masks the length), so
// gathered bytes go out in chunks of at most kMaxWrite.
constexpr int kMaxWrite = 64 * 1024;

int Flush(WalFile* w) {
  int rc = SQLITE_OK;
  for (int done = 0; done < w->len && rc == SQLITE_OK; done += kMaxWrite) {
    int n = std::min(kMaxWrite, w->len - done);
    rc = w->real->pMethods->xWrite(w->real, w->buf + done, n, w->off + done);
  }
  w->len = 0;
  w->expect_page = false;
  w->commit_pending = false;
  return rc;
}

bool IsPageSize(int n) { return n >= 512 && n <= 65536 && (n & (n - 1)) == 0; }

int Append(WalFile* w, const void* data, int n, sqlite3_int64 off) {
  if (w->len == 0) w->off = off;
  if (w->len + n > w->cap) {
    int cap = std::max(w->cap * 2, std::max(w->len + n, 64 * 1024));
    char* nb = static_cast<char*>(sqlite3_realloc(w->buf, cap));
    if (nb == nullptr) return SQLITE_NOMEM;
    w->buf = nb;
    w->cap = cap;
  }
  std::memcpy(w->buf + w->len, data, static_cast<std::size_t>(n));
  w->len += n;
  return SQLITE_OK;
}

// Copies [off, off + n) from the read-ahead buffer, refilling it from `off` when the range is
// not in it; false (nothing copied) when it cannot: past the end of the file (the real read
// reports the short read), larger than the buffer, out of memory or a failed read.
bool ReadAhead(WalFile* w, void* p, int n, sqlite3_int64 off) {
  if (off < w->ahead_off || off + n > w->ahead_off + w->ahead_len) {
    sqlite3_int64 size = 0;
    if (n > kReadAhead || w->real->pMethods->xFileSize(w->real, &size) != SQLITE_OK ||
        off + n > size) {
      return false;
    }
    if (w->ahead == nullptr) {
      w->ahead = static_cast<char*>(sqlite3_malloc(kReadAhead));
      if (w->ahead == nullptr) return false;
    }
    int len = static_cast<int>(std::min<sqlite3_int64>(kReadAhead, size - off));
    w->ahead_len = 0;
    if (w->real->pMethods->xRead(w->real, w->ahead, len, off) != SQLITE_OK) {
      return false;
    }
    w->ahead_off = off;
    w->ahead_len = len;
  }
  std::memcpy(p, w->ahead + (off - w->ahead_off), static_cast<std::size_t>(n));
  w->ahead_next = off + n;
  return true;
}

void EndReadAhead(WalFile* w) {
  w->reading_ahead = false;
  w->ahead_len = 0;
  sqlite3_free(w->ahead);
  w->ahead = nullptr;
}

int Write(sqlite3_file* f, const void* data, int n, sqlite3_int64 off) {
  auto* w = reinterpret_cast<WalFile*>(f);
  EndReadAhead(w);
  bool contiguous = w->len == 0 || off == w->off + w->len;
  bool wal_header = n == kWalHeader && off == 0 && w->len == 0;
  bool frame_header = n == 24 && !w->expect_page && contiguous;
  bool page = w->expect_page && IsPageSize(n) && contiguous;
  if ((!wal_header && !frame_header && !page) || w->len + n > kMaxBuffer) {
    int rc = Flush(w);
    if (rc != SQLITE_OK) return rc;
    if (!wal_header && !frame_header) return w->real->pMethods->xWrite(w->real, data, n, off);
  }
  if (Append(w, data, n, off) != SQLITE_OK) {  // out of memory: write through
    int rc = Flush(w);
    return rc != SQLITE_OK ? rc : w->real->pMethods->xWrite(w->real, data, n, off);
  }
  if (frame_header) {
    const auto* b = static_cast<const unsigned char*>(data);
    w->expect_page = true;
    w->commit_pending = (b[4] | b[5] | b[6] | b[7]) != 0;
  } else if (page) {
    w->expect_page = false;
    if (w->commit_pending) return Flush(w);
  }
  return SQLITE_OK;
}

int Close(sqlite3_file* f) {
  auto* w = reinterpret_cast<WalFile*>(f);
  int rc = Flush(w);
  int rc2 = w->real->pMethods != nullptr ? w->real->pMethods->xClose(w->real) : SQLITE_OK;
  sqlite3_free(w->buf);
  w->buf = nullptr;
  EndReadAhead(w);
  return rc != SQLITE_OK ? rc : rc2;
}

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f)->real; }

#define TX_FLUSH_OR_RETURN(f)                             \
  do {                                                    \
    int flush_rc_ = Flush(reinterpret_cast<WalFile*>(f)); \
    if (flush_rc_ != SQLITE_OK) return flush_rc_;         \
  } while (0)

int Read(sqlite3_file* f, void* p, int n, sqlite3_int64 off) {
  TX_FLUSH_OR_RETURN(f);
  auto* w = reinterpret_cast<WalFile*>(f);
  if (n == kWalHeader && off == 0) {
    EndReadAhead(w);
    w->reading_ahead = true;
  } else if (w->reading_ahead && off != w->ahead_next) {
    EndReadAhead(w);
  }
  if (w->reading_ahead) {
    if (ReadAhead(w, p, n, off)) return SQLITE_OK;
    EndReadAhead(w);
  }
  return Real(f)->pMethods->xRead(Real(f), p, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  TX_FLUSH_OR_RETURN(f);
  EndReadAhead(reinterpret_cast<WalFile*>(f));
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  TX_FLUSH_OR_RETURN(f);
  EndReadAhead(reinterpret_cast<WalFile*>(f));
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  TX_FLUSH_OR_RETURN(f);
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  TX_FLUSH_OR_RETURN(f);
  EndReadAhead(reinterpret_cast<WalFile*>(f));
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
// SQLite never uses shared memory or memory-mapped I/O through a WAL file handle; these only
// forward, or refuse when the wrapped file lacks them.
int ShmMap(sqlite3_file* f, int pg, int pgsz, int extend, void volatile** pp) {
  if (Real(f)->pMethods->iVersion < 2) return SQLITE_IOERR;
  return Real(f)->pMethods->xShmMap(Real(f), pg, pgsz, extend, pp);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  if (Real(f)->pMethods->iVersion < 2) return SQLITE_IOERR;
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  if (Real(f)->pMethods->iVersion >= 2) Real(f)->pMethods->xShmBarrier(Real(f));
}
int ShmUnmap(sqlite3_file* f, int del) {
  if (Real(f)->pMethods->iVersion < 2) return SQLITE_OK;
  return Real(f)->pMethods->xShmUnmap(Real(f), del);
}
int Fetch(sqlite3_file*, sqlite3_int64, int, void** pp) {
  *pp = nullptr;  // "read it with xRead instead"
  return SQLITE_OK;
}
int Unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }
#undef TX_FLUSH_OR_RETURN

const sqlite3_io_methods kMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  if ((flags & SQLITE_OPEN_WAL) == 0) return g_real->xOpen(g_real, name, f, flags, out_flags);
  auto* w = reinterpret_cast<WalFile*>(f);
  std::memset(w, 0, sizeof(WalFile));
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) +
                                            RoundUp8(static_cast<int>(sizeof(WalFile))));
  std::memset(w->real, 0, static_cast<std::size_t>(g_real->szOsFile));
  int rc = g_real->xOpen(g_real, name, w->real, flags, out_flags);
  // SQLite calls xClose whenever pMethods is set, even after a failed xOpen.
  w->base.pMethods = w->real->pMethods != nullptr ? &kMethods : nullptr;
  return rc;
}

int Delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return g_real->xDelete(g_real, name, sync_dir);
}
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_real->xAccess(g_real, name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void DlError(sqlite3_vfs*, int n, char* msg) { g_real->xDlError(g_real, n, msg); }
void (*DlSym(sqlite3_vfs*, void* h, const char* sym))(void) {
  return g_real->xDlSym(g_real, h, sym);
}
void DlClose(sqlite3_vfs*, void* h) { g_real->xDlClose(g_real, h); }
int Randomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int SleepUs(sqlite3_vfs*, int us) { return g_real->xSleep(g_real, us); }
int CurrentTime(sqlite3_vfs*, double* t) { return g_real->xCurrentTime(g_real, t); }
int GetLastError(sqlite3_vfs*, int n, char* msg) { return g_real->xGetLastError(g_real, n, msg); }
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* t) {
  return g_real->xCurrentTimeInt64(g_real, t);
}

// Registers the shim over the default VFS once; returns its name, or nullptr (use the default)
// when the default VFS is not one this shim can wrap.
const char* Register() {
  static const char* name = []() -> const char* {
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    if (real == nullptr || real->iVersion < 2 || real->xCurrentTimeInt64 == nullptr) return nullptr;
    g_real = real;
    g_vfs = sqlite3_vfs{};
    g_vfs.iVersion = 2;
    g_vfs.szOsFile = RoundUp8(static_cast<int>(sizeof(WalFile))) + real->szOsFile;
    g_vfs.mxPathname = real->mxPathname;
    g_vfs.zName = "tx-walbatch";
    g_vfs.xOpen = Open;
    g_vfs.xDelete = Delete;
    g_vfs.xAccess = Access;
    g_vfs.xFullPathname = FullPathname;
    if (real->xDlOpen != nullptr) {
      g_vfs.xDlOpen = DlOpen;
      g_vfs.xDlError = DlError;
      g_vfs.xDlSym = DlSym;
      g_vfs.xDlClose = DlClose;
    }
    g_vfs.xRandomness = Randomness;
    g_vfs.xSleep = SleepUs;
    g_vfs.xCurrentTime = CurrentTime;
    g_vfs.xGetLastError = GetLastError;
    g_vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    if (sqlite3_vfs_register(&g_vfs, 0) != SQLITE_OK) return nullptr;
    return g_vfs.zName;
  }();
  return name;
}

}  // namespace walbatch

// Checkpoint policy (Db::WalHook).
constexpr int kCheckpointFrames = 16'000;      // 16 MiB of WAL at tx's 1 KiB pages
constexpr int kCheckpointRetryFrames = 2'000;  // after a checkpoint that could not finish
constexpr std::chrono::milliseconds kCheckpointWait{20};  // lock waits of the blocking phase
// Below this, a closing connection leaves the WAL as it is (~Db).
constexpr int kCloseCheckpointFrames = 500;

}  // namespace

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

Stmt& Stmt::BindKept(int index, std::string_view value) {
  const char* data = value.data() != nullptr ? value.data() : "";
  sqlite3_bind_text(stmt_, index, data, static_cast<int>(value.size()), SQLITE_STATIC);
  return *this;
}

Stmt& Stmt::Bind(int index, std::optional<std::int64_t> value) {
  if (value) {
    sqlite3_bind_int64(stmt_, index, *value);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
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
  // The last connection to close would checkpoint the WAL into the store and remove it, and the
  // next writer make it again: four fsyncs for a one-transaction command such as tx task add,
  // most of its time. Left in place, the WAL is only read again by the next process to open the
  // store alone (to rebuild its index), which a small WAL keeps short; a bigger one is still
  // checkpointed here. Durability stays what `synchronous` says: with NORMAL a commit outlives
  // the crash of any process and the WAL reaches the disk at checkpoints, with FULL at each
  // commit.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                    wal_frames_ < kCloseCheckpointFrames ? 1 : 0, nullptr);
  sqlite3_close_v2(db_);
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create,
                                     std::chrono::milliseconds busy_timeout) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) flags |= SQLITE_OPEN_CREATE;
  // A new store is made readable by its owner alone: SQLite gives its -wal and -shm files the
  // mode of the database file, and would otherwise create it 0644 (less the umask).
  if (create && !path.empty() && path != ":memory:" && !path.starts_with("file:")) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, walbatch::Register());
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
  sqlite3_wal_hook(raw, &Db::WalHook, db.get());
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
  if (self->checkpoint_deadline_ && now >= *self->checkpoint_deadline_) return 0;
  if (count < 4) {
    sched_yield();
  } else {
    long micros = std::min<long>(20L * (count - 3), 2000L);
    timespec ts{0, micros * 1000L};
    nanosleep(&ts, nullptr);
  }
  return 1;
}

// Runs after each commit with the number of frames in the WAL. SQLite's default hook runs a
// PASSIVE checkpoint once the WAL holds 1000 frames, after the commit has released the write
// lock; under a continuous load from several processes another writer has always appended by the
// time it finishes, so the WAL is never restarted: it grew to 1.7 GB in an 8-second drain, and
// every later commit re-ran a checkpoint with two fsyncs. Instead, once the WAL holds
// kCheckpointFrames frames: a PASSIVE checkpoint copies it into the database while others keep
// writing, then a RESTART checkpoint takes the write lock, copies the few frames added meanwhile
// and makes the next writer start the WAL from the beginning (same file, no growth). The RESTART
// waits at most kCheckpointWait for the write lock and for readers of older snapshots; when it
// cannot finish (a long reader), writers continue and it is tried again kCheckpointRetryFrames
// later. A failed checkpoint is never the committed transaction's error.
int Db::WalHook(void* self_ptr, sqlite3* db, const char* schema, int frames) {
  auto* self = static_cast<Db*>(self_ptr);
  self->wal_frames_ = frames;
  if (frames < kCheckpointFrames) {
    self->checkpoint_retry_at_ = 0;
    return SQLITE_OK;
  }
  if (frames < self->checkpoint_retry_at_) return SQLITE_OK;
  int rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  if (rc == SQLITE_OK) {
    self->checkpoint_deadline_ = std::chrono::steady_clock::now() + kCheckpointWait;
    rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_RESTART, nullptr, nullptr);
    self->checkpoint_deadline_.reset();
  }
  self->checkpoint_retry_at_ = rc == SQLITE_OK ? 0 : frames + kCheckpointRetryFrames;
  if (rc == SQLITE_OK) self->wal_frames_ = 0;
  return SQLITE_OK;
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
