// tx_micro_bench: single-connection latencies of the claim path on a real SQLite file (WAL,
// synchronous=NORMAL) in a temp dir, with the real clock.
//
//   BM_Claim                 ClaimService::ClaimNext
//   BM_ClaimComplete         ClaimNext, then ClaimService::Report(kDone)
//   BM_Renew                 ClaimService::Renew of one claim (renewal cap lifted)
//   BM_Heartbeat             WorkerService::Heartbeat
//   BM_RegisterWorker        WorkerService::Register in a slot (50 live, 5,000 old workers);
//                            also per-call p50_us / p95_us / max_us counters
//   BM_ClaimCompleteDepth/Q  claim + complete with Q ready tasks queued (kept within kTopUp of Q
//                            by refilling and reopening outside the timed region, so no timed
//                            commit runs a checkpoint): the claim path should be flat in Q.
//
// Time per iteration is one operation (one or two transactions); items/s counts operations.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "service/worker_service.h"

namespace tx::bench {
namespace {

constexpr std::int64_t kSeedBatch = 10'000;
constexpr std::int64_t kTopUp = 100;

// One store file with one registered worker and the three services over it.
class Env {
 public:
  explicit Env(const std::string& sync = "NORMAL") : sync_(sync) {
    Open(/*create=*/true);
    service::Registration r;
    r.name = "bench";
    r.hostname = "localhost";
    r.heartbeat_interval_ms = 3'600'000;
    worker_id_ = CheckOk(workers_->Register(r), "register").id;
  }

  // Closes and reopens the store: the last connection's close checkpoints the WAL and fsyncs the
  // database, so data written by seeding is on disk before anything is timed. A heartbeat then
  // starts the new WAL (whose header SQLite fsyncs), so the next timed commit does not.
  void Reopen() {
    claims_.reset();
    tasks_.reset();
    workers_.reset();
    store_.reset();
    Open(/*create=*/false);
    CheckOk(workers_->Heartbeat(worker_id_, {}), "heartbeat");
  }

  void Seed(std::int64_t n) {
    CheckOk(SeedTasks(*store_, clock_, n, 0, kSeedBatch), "seed");
    ready_ += n;
  }

  service::ClaimResult Claim() {
    auto c = CheckOk(claims_->ClaimNext(worker_id_), "claim");
    if (!c) CheckOk(Status(Error::Internal("queue unexpectedly empty")), "claim");
    --ready_;
    return std::move(*c);
  }

  void Complete(const service::ClaimResult& c) {
    CheckOk(claims_->Report(c.task.id, c.claim.token, service::Outcome::kDone, ""), "report");
  }

  std::int64_t ready() const { return ready_; }
  service::ClaimService& claims() { return *claims_; }
  service::WorkerService& workers() { return *workers_; }
  const std::string& worker_id() const { return worker_id_; }

 private:
  void Open(bool create) {
    store_ = CheckOk(OpenStore(dir_.File("tx.db"), sync_, create), "open store");
    service::ServiceOptions opts;
    opts.max_renewals = INT_MAX;  // BM_Renew renews one claim over and over
    tasks_ = std::make_unique<service::TaskService>(*store_, clock_, opts);
    claims_ = std::make_unique<service::ClaimService>(*store_, clock_, opts);
    workers_ = std::make_unique<service::WorkerService>(*store_, clock_, opts);
  }

  TempDir dir_;
  std::string sync_;
  RealClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::TaskService> tasks_;
  std::unique_ptr<service::ClaimService> claims_;
  std::unique_ptr<service::WorkerService> workers_;
  std::string worker_id_;
  std::int64_t ready_ = 0;
};

void BM_Claim(benchmark::State& state) {
  Env env;
  env.Seed(kSeedBatch);
  for (auto _ : state) {
    if (env.ready() == 0) {
      state.PauseTiming();
      env.Seed(kSeedBatch);
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(env.Claim());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Claim)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ClaimComplete(benchmark::State& state) {
  Env env;
  env.Seed(kSeedBatch);
  for (auto _ : state) {
    if (env.ready() == 0) {
      state.PauseTiming();
      env.Seed(kSeedBatch);
      state.ResumeTiming();
    }
    env.Complete(env.Claim());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClaimComplete)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Renew(benchmark::State& state) {
  Env env;
  env.Seed(1);
  service::ClaimResult c = env.Claim();
  for (auto _ : state) {
    CheckOk(env.claims().Renew(c.task.id, c.claim.token), "renew");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Renew)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Heartbeat(benchmark::State& state) {
  Env env;
  service::HeartbeatUpdate update;
  for (auto _ : state) {
    CheckOk(env.workers().Heartbeat(env.worker_id(), update), "heartbeat");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Heartbeat)->UseRealTime()->Unit(benchmark::kMicrosecond);

// A supervised worker registering in its slot with 50 live workers and 5,000 dead and stopped
// ones from earlier registrations in the table (each registration is a new row): the
// transaction that retires the slot's previous incarnation and inserts the new one.
void BM_RegisterWorker(benchmark::State& state) {
  Env env;
  auto reg = [&](const std::string& slot) {
    service::Registration r;
    r.slot = slot;
    r.hostname = "localhost";
    r.heartbeat_interval_ms = 3'600'000;
    return CheckOk(env.workers().Register(r), "register");
  };
  for (int i = 0; i < 5'000; ++i) {
    Worker w = reg("old-" + std::to_string(i % 50));
    if (i % 2 == 0) CheckOk(env.workers().Deregister(w.id, "bench"), "deregister");
  }
  for (int i = 0; i < 50; ++i) reg("slot-" + std::to_string(i));
  env.Reopen();
  // Each call is also timed on its own, for the target's p95 (two clock reads, ~50 ns, against a
  // transaction of ~100 µs).
  std::vector<double> us;
  us.reserve(1 << 16);
  int n = 0;
  for (auto _ : state) {
    std::string slot = "slot-" + std::to_string(n++ % 50);
    auto t0 = std::chrono::steady_clock::now();
    reg(slot);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  state.SetItemsProcessed(state.iterations());
  if (!us.empty()) {
    std::sort(us.begin(), us.end());
    auto at = [&](double p) { return us[static_cast<std::size_t>(p * (us.size() - 1) + 0.5)]; };
    state.counters["p50_us"] = at(0.50);
    state.counters["p95_us"] = at(0.95);
    state.counters["max_us"] = us.back();
  }
}
BENCHMARK(BM_RegisterWorker)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Seeding a million tasks takes a while, so each depth's store is built once and reused by the
// library's repeated calls for that argument; a new depth replaces it. The store is reopened
// after seeding so that flushing the seeded data is not charged to the first timed operations.
Env& DepthEnv(std::int64_t depth) {
  static std::int64_t current = -1;
  static std::unique_ptr<Env> env;
  if (current != depth) {
    env.reset();
    auto t0 = std::chrono::steady_clock::now();
    env = std::make_unique<Env>();
    env->Seed(depth);
    env->Reopen();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "[seeded %lld ready tasks in %.1f s]\n", static_cast<long long>(depth), s);
    current = depth;
  }
  return *env;
}

void BM_ClaimCompleteDepth(benchmark::State& state) {
  const std::int64_t depth = state.range(0);
  Env& env = DepthEnv(depth);
  if (env.ready() < depth) env.Seed(depth - env.ready());
  for (auto _ : state) {
    if (env.ready() <= depth - kTopUp) {
      // Refilling inserts tasks with random ids, dirtying random pages of the id index (many
      // more distinct pages at 1M than at 1k); the reopen checkpoints them so that no timed
      // commit pays for them. Between refills the WAL stays far below the checkpoint threshold,
      // so this benchmark times the claim path without checkpoint I/O at every depth alike.
      state.PauseTiming();
      env.Seed(depth - env.ready());
      env.Reopen();
      state.ResumeTiming();
    }
    env.Complete(env.Claim());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClaimCompleteDepth)
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tx::bench

BENCHMARK_MAIN();
