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
