#include "bench_util.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <unistd.h>

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

namespace {

// Runs one statement on the server's admin database; exits with its message on failure.
void AdminExec(const std::string& admin_url, const std::string& sql) {
  PGconn* c = PQconnectdb(admin_url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::fprintf(stderr, "connect to %s: %s", admin_url.c_str(), PQerrorMessage(c));
    PQfinish(c);
    std::exit(1);
  }
  PGresult* r = PQexec(c, sql.c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) std::fprintf(stderr, "%s: %s", sql.c_str(), PQerrorMessage(c));
  PQclear(r);
  PQfinish(c);
  if (!ok) std::exit(1);
}

}  // namespace

std::string WithDatabase(const std::string& server_url, const std::string& dbname) {
  std::string rest;
  std::size_t scheme = server_url.find("://");
  if (scheme == std::string::npos) return "";
  std::size_t base = server_url.find_first_of("/?", scheme + 3);
  if (base == std::string::npos) base = server_url.size();
  std::size_t query = server_url.find('?', base);
  if (query == std::string::npos) query = server_url.size();
  return server_url.substr(0, base) + "/" + dbname + server_url.substr(query);
}

ScratchStore::ScratchStore(const std::string& pg_server) : admin_url_(pg_server) {
  if (admin_url_.empty()) {
    dir_ = std::make_unique<TempDir>();
    url_ = dir_->File("tx.db");
    return;
  }
  static int counter = 0;
  name_ = "tx_bench_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  url_ = WithDatabase(admin_url_, name_);
  if (url_.empty()) {
    std::fprintf(stderr, "not a postgresql:// URL: %s\n", admin_url_.c_str());
    std::exit(2);
  }
  AdminExec(admin_url_, "CREATE DATABASE " + name_);
}

ScratchStore::~ScratchStore() {
  if (!name_.empty()) AdminExec(admin_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
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
