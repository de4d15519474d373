// tx_drain: the throughput driver. K claimer processes drain N no-op tasks from one SQLite store,
// each claiming (ClaimService::ClaimNext) and completing (ClaimService::Report(kDone)) one task
// at a time, the way K `tx worker` processes would with an instant agent.
//
//   tx_drain --claimers K --tasks N [--runs R] [--sync NORMAL|FULL] [--queued Q] [--batch B]
//            [--combined] [--claim-batch C] [--pg SERVER_URL]
//
// Each run: a fresh store — a SQLite file in a temp dir, or with --pg a fresh database on that
// PostgreSQL server (dropped afterwards); N ready tasks seeded with TaskService::AddMany (B per
// transaction), plus Q lower-priority tasks that stay queued (a backlog the claim path must not
// notice); the store is closed; then K children are forked, each opening the store itself,
// registering a worker and claiming until the queue is empty (with a backlog: until N claims in
// all). With --combined, each claimer reports and claims its next task in one transaction
// (ClaimService::ReportAndClaimNext), as a worker between two tasks does. With --claim-batch C,
// each claimer reports the C tasks it holds and claims its next C in one transaction
// (ClaimService::ReportAndClaimBatch, POST /api/worker/batch), as a pg-boss worker with
// batchSize C does. The clock runs from just
// before the first fork to the last child's exit, so it includes process start-up, opening the
// store and registering, as the peers' figures do. Afterwards the parent checks that all N tasks
// are done and none is running.
//
// Output: one line per run, `median X tasks/s (min..max, ±S%)` (S = half the min..max range
// relative to the median), and a final `JSON {...}` line for scripts.

#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "bench_util.h"
#include "service/claim_service.h"
#include "service/worker_service.h"

namespace tx::bench {
namespace {

constexpr int kMaxClaimers = 256;

struct Options {
  int claimers = 4;
  std::int64_t tasks = 20'000;
  int runs = 3;
  std::string sync = "NORMAL";
  std::int64_t queued = 0;
  std::int64_t batch = 10'000;
  bool combined = false;  // ReportAndClaimNext: one transaction per task instead of two
  int claim_batch = 0;    // ReportAndClaimBatch of this many: one transaction per batch
  std::string pg;         // a PostgreSQL server's URL: each run's store is a database there
};

// Shared between the parent and its forked claimers (MAP_SHARED | MAP_ANONYMOUS).
struct Shared {
  std::atomic<std::int64_t> budget;  // claims left when a backlog is present
  std::int64_t completed[kMaxClaimers];
  std::int64_t ready_ns[kMaxClaimers];  // CLOCK_MONOTONIC when registered
  std::int64_t last_ns[kMaxClaimers];   // CLOCK_MONOTONIC of the last completion
};

std::int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr,
               "tx_drain: %s\nusage: tx_drain [--claimers K] [--tasks N] [--runs R] "
               "[--sync NORMAL|FULL] [--queued Q] [--batch B] [--combined] [--claim-batch C] "
               "[--pg URL]\n",
               msg);
  std::exit(2);
}

std::int64_t ParseInt(const char* flag, const char* text, std::int64_t min) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min) {
    Usage((std::string("invalid value for ") + flag + ": '" + text + "'").c_str());
  }
  return v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--claimers") {
      o.claimers = static_cast<int>(ParseInt("--claimers", value(), 1));
      if (o.claimers > kMaxClaimers) Usage("at most 256 claimers");
    } else if (a == "--tasks") {
      o.tasks = ParseInt("--tasks", value(), 1);
    } else if (a == "--runs") {
      o.runs = static_cast<int>(ParseInt("--runs", value(), 1));
    } else if (a == "--sync") {
      o.sync = value();
      if (o.sync != "NORMAL" && o.sync != "FULL") Usage("--sync takes NORMAL or FULL");
    } else if (a == "--queued") {
      o.queued = ParseInt("--queued", value(), 0);
    } else if (a == "--batch") {
      o.batch = ParseInt("--batch", value(), 1);
    } else if (a == "--pg") {
      o.pg = value();
    } else if (a == "--combined") {
      o.combined = true;
    } else if (a == "--claim-batch") {
      o.claim_batch = static_cast<int>(ParseInt("--claim-batch", value(), 1));
      if (o.claim_batch > service::ClaimService::kMaxBatch) Usage("at most 100 per batch");
    } else if (a == "-h" || a == "--help") {
      Usage("help");
    } else {
      Usage(("unknown argument '" + a + "'").c_str());
    }
  }
  return o;
}

// The body of one claimer process. Returns the exit code.
int Claimer(const Options& o, const std::string& path, int index, Shared* shared) {
  RealClock clock;
  auto opened = OpenStore(path, o.sync, /*create=*/false);
  if (!opened.ok()) {
    std::fprintf(stderr, "claimer %d: open %s: %s\n", index, path.c_str(),
                 opened.error().message().c_str());
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(opened).value();
  service::WorkerService workers(*store, clock);
  service::Registration r;
  r.name = "bench-" + std::to_string(index);
  r.hostname = "localhost";
  r.pid = getpid();
  auto worker = workers.Register(r);
  if (!worker.ok()) {
    std::fprintf(stderr, "claimer %d: register: %s\n", index, worker.error().message().c_str());
    return 1;
  }
  shared->ready_ns[index] = MonoNs();
  service::ClaimService claims(*store, clock);
  const bool budgeted = o.queued > 0;
  // With a backlog the queue never empties, so the claimers share a budget of N claims.
  auto take_budget = [&] { return !budgeted || shared->budget.fetch_sub(1) > 0; };
  std::int64_t done = 0;
  auto record = [&] {
    ++done;
    shared->completed[index] = done;
    shared->last_ns[index] = MonoNs();
  };
  auto fail = [&](const char* what, const std::string& task, const Error& e) {
    std::fprintf(stderr, "claimer %d: %s %s: %s\n", index, what, task.c_str(), e.message().c_str());
    return 1;
  };
  if (o.claim_batch > 0) {
    // Up to C claims from the shared budget (all C when there is no backlog).
    auto take_many = [&]() -> int {
      if (!budgeted) return o.claim_batch;
      std::int64_t left = shared->budget.fetch_sub(o.claim_batch);
      return static_cast<int>(std::clamp<std::int64_t>(left, 0, o.claim_batch));
    };
    std::vector<service::ClaimService::Finished> finished;
    for (;;) {
      auto r = claims.ReportAndClaimBatch(worker->id, finished, take_many());
      if (!r.ok()) {
        return fail("report and claim a batch after", finished.empty() ? "" : finished[0].task_id,
                    r.error());
      }
      for (std::size_t i = 0; i < finished.size(); ++i) record();
      finished.clear();
      if (r->claimed.empty()) return 0;
      for (const auto& c : r->claimed) {
        finished.push_back({c.task.id, c.claim.token, service::Outcome::kDone, "", std::nullopt});
      }
    }
  }
  std::optional<service::ClaimResult> held;
  if (take_budget()) {
    auto c = claims.ClaimNext(worker->id);
    if (!c.ok()) return fail("claim", "", c.error());
    held = std::move(*c);
  }
  while (held) {
    const std::string task_id = held->task.id;
    if (!o.combined) {
      auto t = claims.Report(task_id, held->claim.token, service::Outcome::kDone, "");
      if (!t.ok()) return fail("report", task_id, t.error());
      record();
      held.reset();
      if (!take_budget()) break;
      auto c = claims.ClaimNext(worker->id);
      if (!c.ok()) return fail("claim", "", c.error());
      held = std::move(*c);
    } else if (take_budget()) {
      auto r = claims.ReportAndClaimNext(task_id, held->claim.token, service::Outcome::kDone, "");
      if (!r.ok()) return fail("report and claim after", task_id, r.error());
      record();
      held = std::move(r->next);
    } else {
      auto t = claims.Report(task_id, held->claim.token, service::Outcome::kDone, "");
      if (!t.ok()) return fail("report", task_id, t.error());
      record();
      held.reset();
    }
  }
  return 0;
}

struct RunResult {
  double seconds = 0;
  double tasks_per_s = 0;
  double after_ready_per_s = 0;
  double cpu_us_per_task = 0;  // user + system time of the claimers, per task
  double first_ready_ms = 0;   // from the first fork to the first / last claimer registered
  double last_ready_ms = 0;
  std::vector<std::int64_t> per_claimer;
};

RunResult OneRun(const Options& o, Shared* shared) {
  ScratchStore scratch(o.pg);
  const std::string& path = scratch.url();
  RealClock clock;
  {
    auto store = CheckOk(OpenStore(path, o.sync, /*create=*/true), "create store");
    CheckOk(SeedTasks(*store, clock, o.tasks, /*priority=*/0, o.batch), "seed tasks");
    if (o.queued > 0) {
      CheckOk(SeedTasks(*store, clock, o.queued, /*priority=*/-1, o.batch), "seed backlog");
    }
  }  // closed: the children open the store after fork

  shared->budget.store(o.tasks);
  for (int i = 0; i < o.claimers; ++i) {
    shared->completed[i] = 0;
    shared->ready_ns[i] = 0;
    shared->last_ns[i] = 0;
  }
  std::fflush(nullptr);

  rusage before{};
  getrusage(RUSAGE_CHILDREN, &before);
  std::vector<pid_t> pids;
  std::int64_t t0 = MonoNs();
  for (int i = 0; i < o.claimers; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      std::exit(1);
    }
    if (pid == 0) {
      int rc = Claimer(o, path, i, shared);
      std::fflush(nullptr);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  bool failed = false;
  for (std::size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0) {
      std::perror("wait");
      std::exit(1);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "claimer pid %d failed (%s %d)\n", pid,
                   WIFEXITED(status) ? "exit" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      failed = true;
    }
  }
  std::int64_t t1 = MonoNs();
  if (failed) std::exit(1);
  rusage after{};
  getrusage(RUSAGE_CHILDREN, &after);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  double cpu_s =
      secs(after.ru_utime) - secs(before.ru_utime) + secs(after.ru_stime) - secs(before.ru_stime);

  auto store = CheckOk(OpenStore(path, o.sync, /*create=*/false), "reopen store");
  auto counts = CheckOk(CountByStatus(*store, clock), "count tasks");
  std::int64_t done = counts[TaskStatus::kDone];
  std::int64_t running = counts[TaskStatus::kRunning];
  std::int64_t ready = counts[TaskStatus::kReady];
  if (done != o.tasks || running != 0 || ready != o.queued) {
    std::fprintf(stderr,
                 "verification failed: done %lld (want %lld), running %lld (want 0), "
                 "ready %lld (want %lld)\n",
                 static_cast<long long>(done), static_cast<long long>(o.tasks),
                 static_cast<long long>(running), static_cast<long long>(ready),
                 static_cast<long long>(o.queued));
    std::exit(1);
  }

  RunResult r;
  r.seconds = static_cast<double>(t1 - t0) / 1e9;
  r.tasks_per_s = static_cast<double>(o.tasks) / r.seconds;
  r.cpu_us_per_task = cpu_s * 1e6 / static_cast<double>(o.tasks);
  std::int64_t first_ready = INT64_MAX;
  std::int64_t last_ready = 0;
  std::int64_t last_done = 0;
  for (int i = 0; i < o.claimers; ++i) {
    r.per_claimer.push_back(shared->completed[i]);
    first_ready = std::min(first_ready, shared->ready_ns[i]);
    last_ready = std::max(last_ready, shared->ready_ns[i]);
    last_done = std::max(last_done, shared->last_ns[i]);
  }
  r.first_ready_ms = static_cast<double>(first_ready - t0) / 1e6;
  r.last_ready_ms = static_cast<double>(last_ready - t0) / 1e6;
  if (last_done > first_ready) {
    r.after_ready_per_s =
        static_cast<double>(o.tasks) / (static_cast<double>(last_done - first_ready) / 1e9);
  }
  return r;
}

std::string Json(const Options& o, const std::vector<RunResult>& results, const RunStats& s,
                 const RunStats& ready, const RunStats& cpu) {
  std::string runs;
  for (const auto& r : results) {
    if (!runs.empty()) runs += ",";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", r.tasks_per_s);
    runs += buf;
  }
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"bench\":\"drain\",\"claimers\":%d,\"tasks\":%lld,\"queued\":%lld,"
                "\"sync\":\"%s\",\"combined\":%s,\"claim_batch\":%d,\"runs\":[%s],\"median\":%.1f,"
                "\"min\":%.1f,\"max\":%.1f,"
                "\"spread_pct\":%.1f,\"after_ready_median\":%.1f,\"cpu_us_per_task\":%.1f,"
                "\"store\":\"%s\",\"sqlite\":\"%s\"}",
                o.claimers, static_cast<long long>(o.tasks), static_cast<long long>(o.queued),
                o.sync.c_str(), o.combined ? "true" : "false", o.claim_batch, runs.c_str(),
                s.median, s.min, s.max, s.spread_pct, ready.median, cpu.median,
                o.pg.empty() ? "sqlite" : "postgres", sqlite3_libversion());
  return buf;
}

int Main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* shared = new (mem) Shared();

  std::string path = o.claim_batch > 0 ? "ReportAndClaimBatch of " + std::to_string(o.claim_batch)
                     : o.combined      ? "ReportAndClaimNext"
                                       : "ClaimNext + Report";
  std::printf(
      "drain: %d claimers, %lld tasks + %lld queued backlog, %s, %s, %d runs "
      "(sqlite %s, %ld cpus)\n",
      o.claimers, static_cast<long long>(o.tasks), static_cast<long long>(o.queued),
      o.pg.empty() ? ("sync " + o.sync).c_str() : "PostgreSQL", path.c_str(), o.runs,
      sqlite3_libversion(), sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<RunResult> results;
  std::vector<double> rates;
  std::vector<double> ready_rates;
  std::vector<double> cpu;
  for (int run = 1; run <= o.runs; ++run) {
    RunResult r = OneRun(o, shared);
    std::string per;
    for (auto n : r.per_claimer) {
      per += ' ';
      per += std::to_string(n);
    }
    std::printf(
        "run %d/%d: %lld tasks in %.3f s = %.0f tasks/s (after ready %.0f/s; claimers "
        "ready after %.0f..%.0f ms; %.0f µs cpu/task; per claimer:%s)\n",
        run, o.runs, static_cast<long long>(o.tasks), r.seconds, r.tasks_per_s, r.after_ready_per_s,
        r.first_ready_ms, r.last_ready_ms, r.cpu_us_per_task, per.c_str());
    std::fflush(stdout);
    rates.push_back(r.tasks_per_s);
    ready_rates.push_back(r.after_ready_per_s);
    cpu.push_back(r.cpu_us_per_task);
    results.push_back(std::move(r));
  }
  RunStats s = Summarize(rates);
  RunStats ready = Summarize(ready_rates);
  RunStats cpu_stats = Summarize(cpu);
  std::printf("median %.0f tasks/s (%.0f..%.0f, ±%.1f%%); median %.0f µs cpu/task\n", s.median,
              s.min, s.max, s.spread_pct, cpu_stats.median);
  std::printf("JSON %s\n", Json(o, results, s, ready, cpu_stats).c_str());
  return 0;
}

}  // namespace
}  // namespace tx::bench

int main(int argc, char** argv) { return tx::bench::Main(argc, argv); }
