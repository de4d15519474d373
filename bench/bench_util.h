#pragma once
// Helpers shared by the benchmarks: a self-removing temp dir, opening a store file, seeding
// no-op tasks in batches, and run statistics.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/task.h"
#include "store/store.h"

namespace tx::bench {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Where one run keeps its store: a SQLite file in a fresh temp dir, or, given a PostgreSQL
// server's URL, a fresh database on that server (tx_bench_<pid>_<n>), dropped on destruction
// with any connections still open to it.
class ScratchStore {
 public:
  // `pg_server`: empty for SQLite, else a postgresql:// URL of a server where the user may
  // CREATE DATABASE. Exits with a message when the database cannot be made.
  explicit ScratchStore(const std::string& pg_server);
  ~ScratchStore();
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;

  // The store's location for store::Open: a file path or a postgresql:// URL.
  const std::string& url() const { return url_; }
  bool postgres() const { return !admin_url_.empty(); }

 private:
  std::unique_ptr<TempDir> dir_;
  std::string admin_url_;
  std::string name_;
  std::string url_;
};

// `server_url` with its database replaced by `dbname` ("" when not a postgresql:// URL).
std::string WithDatabase(const std::string& server_url, const std::string& dbname);

// Opens (creating with `create`) the SQLite store at `path` with the given synchronous mode.
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& path, const std::string& sync,
                                                bool create);

// Adds `n` ready no-op tasks in one queue with TaskService::AddMany, `batch` per transaction.
Status SeedTasks(store::Store& store, const Clock& clock, std::int64_t n, std::int64_t priority = 0,
                 std::int64_t batch = 10'000, const std::string& queue = "default");

// Task counts by status over all queues.
Result<std::map<TaskStatus, std::int64_t>> CountByStatus(store::Store& store, const Clock& clock);

struct RunStats {
  double median = 0;
  double min = 0;
  double max = 0;
  // Half the min..max range relative to the median, in percent (the peers' "±").
  double spread_pct = 0;
};
RunStats Summarize(std::vector<double> values);

// Aborts with `what: message` on stderr when `s` is an error (benchmarks have no recovery).
void CheckOk(const Status& s, const std::string& what);
template <typename T>
T CheckOk(Result<T> r, const std::string& what) {
  if (!r.ok()) CheckOk(Status(r.error()), what);
  return std::move(r).value();
}

}  // namespace tx::bench
