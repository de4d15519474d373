#include "bench_util.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "service/task_service.h"

namespace tx::bench {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/tx-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Result<std::unique_ptr<store::Store>> OpenStore(const std::string& path, const std::string& sync,
                                                bool create) {
  store::OpenOptions o;
  o.url = path;
  o.create = create;
  o.synchronous = sync;
  return store::Open(o);
}

Status SeedTasks(store::Store& store, const Clock& clock, std::int64_t n, std::int64_t priority,
                 std::int64_t batch, const std::string& queue) {
  service::TaskService tasks(store, clock);
  for (std::int64_t done = 0; done < n;) {
    std::int64_t k = std::min(batch, n - done);
    std::vector<Task> drafts(static_cast<std::size_t>(k));
    for (auto& t : drafts) {
      t.title = "noop";
      t.queue = queue;
      t.priority = priority;
    }
    TX_ASSIGN_OR_RETURN(auto added, tasks.AddMany(std::move(drafts)));
    (void)added;
    done += k;
  }
  return Ok();
}

Result<std::map<TaskStatus, std::int64_t>> CountByStatus(store::Store& store, const Clock& clock) {
  service::TaskService tasks(store, clock);
  TX_ASSIGN_OR_RETURN(auto counts, tasks.Counts());
  std::map<TaskStatus, std::int64_t> out;
  for (const auto& c : counts) out[c.status] += c.count;
  return out;
}

RunStats Summarize(std::vector<double> v) {
  RunStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  s.spread_pct = s.median > 0 ? 100.0 * (s.max - s.min) / 2.0 / s.median : 0;
  return s;
}

void CheckOk(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.error().message().c_str());
  std::exit(1);
}

}  // namespace tx::bench
