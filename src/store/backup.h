#pragma once
// tx backup and tx restore: a SQLite store copied to a file while it runs, and a copy put back
// (docs/operations.md, "Backup and restore"). Both use SQLite's online backup API, page by page
// under one read snapshot of the source, so what is copied is one committed state of the store.
// PostgreSQL has its own tools (pg_dump, pg_restore); these refuse a postgresql:// URL.

#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/error.h"

struct sqlite3;

namespace tx::store {

// What a backup holds: for the one line tx backup and tx restore print.
struct BackupReport {
  std::string path;         // the file written, or read
  std::int64_t bytes = 0;   // its size
  std::int64_t tasks = 0;   // tasks in it
  std::int64_t events = 0;  // events in it
  std::int64_t schema_version = 0;
};

// Copies the SQLite store at `db` into a new file at `path`, consistently, while orchestrators
// and workers go on writing: the source is read in one read transaction (in WAL mode a reader
// never blocks a writer, so a busy store is not slowed; only its checkpoints wait for the copy),
// page by page, a step retried after a short sleep if SQLite says busy or locked. The copy is
// written to a temporary file beside `path` (".NAME.tx-backup-PID"), fsynced, switched to
// rollback-journal mode so that it is one self-contained file, renamed over `path` and the
// directory fsynced: a kill at any moment leaves `path` as it was (its temporary file stays, and
// the next backup to `path` removes it).
// The store itself is never written.
// - invalid_argument: `db` is a postgresql:// URL (pg_dump); `path` is a directory, or the store
//   itself; `db` is not a tx store;
// - not_found: no store at `db`; no directory for `path`;
// - conflict: `path` exists and `replace` is false;
// - unavailable: an I/O error, or the store stayed busy past the busy timeout.
Result<BackupReport> BackupSqlite(const std::string& db, const std::string& path, bool replace);

// A tx store file read for a restore: opened read-only, checked, and held in one read snapshot
// until destroyed, so that what was checked is what RestoreInto copies. Move-only.
class BackupFile {
 public:
  // Checks that `path` is a store this tx can run on: a SQLite database whose integrity_check
  // says ok, with tx's tables and a schema version this binary knows (an older one is migrated
  // when the store next opens). invalid_argument (one line, naming `path`) when it is not a
  // database, not a tx store, damaged, or of a newer schema; not_found when there is no file.
  static Result<BackupFile> Open(const std::string& path);

  BackupFile(BackupFile&&) noexcept = default;
  BackupFile& operator=(BackupFile&&) noexcept = default;

  const BackupReport& report() const { return report_; }

  // Replaces the content of the SQLite store at `db` with this file's, in place, as one
  // transaction of that store (created, mode 0600, if there is no file yet). The store is opened
  // in exclusive locking mode and switched to a rollback journal — which SQLite does only when
  // no other connection has it open, and which checkpoints and removes its -wal — then the pages
  // are copied in one write transaction and the store is switched back to WAL. Other processes
  // wait (or are refused) while it runs, and a kill at any moment leaves the old store or the
  // new one: before the commit, the journal rolls the store back when it next opens.
  // conflict when another connection holds the store open for longer than `wait_ms` (tx serve,
  // tx events --follow, tx top, a sqlite3 shell: a restore needs the store alone); invalid
  // argument when `db` is this file; unavailable on an I/O error. The caller checks first that
  // no orchestrator or worker runs on the store.
  Result<BackupReport> RestoreInto(const std::string& db, Millis wait_ms);

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  BackupFile(std::unique_ptr<sqlite3, Close> db, BackupReport report)
      : db_(std::move(db)), report_(std::move(report)) {}

  std::unique_ptr<sqlite3, Close> db_;  // read-only, in a read transaction until closed
  BackupReport report_;
};

}  // namespace tx::store
