#pragma once
// Stopping a process of a SQLite fleet (SIGSTOP) to make it hung, silent or frozen, for the tests
// that need one: stopped inside a write transaction it would hold SQLite's write lock, and every
// writer — the reconciler or the worker that is to find it — would wait on it. That is the
// store's nature, not what those tests are about.

#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <string>
#include <thread>

#include "run_process.h"

namespace tx::testing {

// Whether a write transaction can begin on the SQLite store `db` within 300 ms.
inline bool StoreWritable(const std::string& db) {
  sqlite3* handle = nullptr;
  bool ok = sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK;
  if (ok) {
    sqlite3_busy_timeout(handle, 300);
    ok = sqlite3_exec(handle, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
    if (ok) sqlite3_exec(handle, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  sqlite3_close(handle);
  return ok;
}

// SIGSTOPs `p` at a moment it holds no write lock on `db` (at most 20 tries; then it stays
// stopped as it is).
inline void StopBetweenTransactions(BackgroundProcess& p, const std::string& db) {
  for (int tries = 0;; ++tries) {
    p.Signal(SIGSTOP);
    if (StoreWritable(db) || tries == 20) return;
    p.Signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tx::testing
