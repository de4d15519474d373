// tx_http_bench: the HTTP API's benchmarks (issue 5). One run per invocation, one JSON object on
// stdout (progress on stderr); bench/http_bench.sh runs each mode several times and tabulates.
//
//   tx_http_bench drain --workers W --tasks N --server URL --token T --db PATH [--server-pid P]
//   tx_http_bench drain-local --workers W --tasks N --db PATH
//   tx_http_bench heartbeats --workers W --interval 1s --seconds S --server URL --token T
//                            --server-pid P [--warmup 5s] [--keep-alive] [--client-threads K]
//
// drain: N no-op tasks are seeded straight into the store file at --db (TaskService::AddMany, the
// way tx_drain seeds; the server under test serves that same store). W threads each hold an
// HttpCoordinator with keep-alive, as a remote worker's main loop does, register, wait for one
// another, then loop ClaimNext(wait_ms 0) → Report(done) until a claim comes back empty. The clock
// runs from that start to the last completion. Afterwards the store itself is checked: every task
// done, each claimed exactly once (attempt 1), no active claim, and as many reports accepted as
// tasks — a run that fails the check prints no figure and exits 1.
//
// drain-local: the same loop, threads and check, with a LocalCoordinator per thread (a store
// connection each) instead: the local path, for a like-for-like ratio.
//
// heartbeats: registers W workers promising `interval` (a connection each), then beats
// each of them every `interval`, their phases spread evenly over it, from K client threads (each
// beat a call of HttpCoordinator::Heartbeat with the metadata a real worker sends). By default each
// worker's client opens a connection per beat, as the heartbeat thread of `tx worker start
// --server` does (keep_alive=false); with --keep-alive each keeps one connection open. After a
// warm-up, for `seconds`, it measures the server's CPU (utime + stime of --server-pid from
// /proc/PID/stat) as % of one core, beat latency percentiles, failures, each worker's longest gap
// between two accepted beats (≥ 2 × interval means the fleet would call it stale), connections the
// system dropped for a full accept queue, and its own CPU.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "core/duration.h"
#include "service/options.h"
#include "worker/coordinator.h"
#include "worker/http_coordinator.h"
#include "worker/local_coordinator.h"

namespace tx::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode;
  int workers = 16;
  std::int64_t tasks = 20'000;
  std::string server;
  std::string token;
  std::string db;
  int server_pid = 0;
  Millis interval_ms = 1'000;
  Millis seconds_ms = 60'000;
  Millis warmup_ms = 5'000;
  bool keep_alive = false;
  int client_threads = 0;  // heartbeats: 0 = 8 without keep-alive, one per worker with it
};

[[noreturn]] void Usage(const std::string& msg) {
  std::fprintf(
      stderr,
      "tx_http_bench: %s\n"
      "usage: tx_http_bench drain --workers W --tasks N --server URL --token T --db PATH "
      "[--server-pid P]\n"
      "       tx_http_bench drain-local --workers W --tasks N --db PATH\n"
      "       tx_http_bench heartbeats --workers W --interval DUR --seconds S --server URL "
      "--token T --server-pid P [--warmup DUR] [--keep-alive] [--client-threads K]\n",
      msg.c_str());
  std::exit(2);
}

std::int64_t ParseInt(const std::string& flag, const std::string& text, std::int64_t min) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < min) {
    Usage("invalid value for " + flag + ": '" + text + "'");
  }
  return v;
}

Millis ParseMillis(const std::string& flag, const std::string& text) {
  Result<Millis> d = ParseDuration(text);
  if (!d.ok() || *d <= 0) Usage("invalid duration for " + flag + ": '" + text + "'");
  return *d;
}

Options ParseArgs(int argc, char** argv) {
  if (argc < 2) Usage("a mode is required");
  Options o;
  o.mode = argv[1];
  if (o.mode != "drain" && o.mode != "drain-local" && o.mode != "heartbeats") {
    Usage("unknown mode '" + o.mode + "'");
  }
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--workers") {
      o.workers = static_cast<int>(ParseInt(a, value(), 1));
    } else if (a == "--tasks") {
      o.tasks = ParseInt(a, value(), 1);
    } else if (a == "--server") {
      o.server = value();
    } else if (a == "--token") {
      o.token = value();
    } else if (a == "--db") {
      o.db = value();
    } else if (a == "--server-pid") {
      o.server_pid = static_cast<int>(ParseInt(a, value(), 1));
    } else if (a == "--interval") {
      o.interval_ms = ParseMillis(a, value());
    } else if (a == "--seconds") {
      o.seconds_ms = 1000 * ParseInt(a, value(), 1);
    } else if (a == "--warmup") {
      o.warmup_ms = ParseMillis(a, value());
    } else if (a == "--keep-alive") {
      o.keep_alive = true;
    } else if (a == "--client-threads") {
      o.client_threads = static_cast<int>(ParseInt(a, value(), 1));
    } else {
      Usage("unknown argument '" + a + "'");
    }
  }
  bool remote = o.mode != "drain-local";
  if (remote && o.server.empty()) Usage("--server is required");
  if (o.mode != "heartbeats" && o.db.empty()) Usage("--db is required");
  if (o.mode == "heartbeats" && o.server_pid == 0) Usage("--server-pid is required");
  return o;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time (user + system) of process `pid` so far, in seconds; -1 when it cannot be read.
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  // Fields from the 3rd (state); utime and stime are the 14th and 15th.
  long long utime = 0, stime = 0;
  for (int n = 3; n <= 15 && fields >> f; ++n) {
    if (n == 14) utime = std::atoll(f.c_str());
    if (n == 15) stime = std::atoll(f.c_str());
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The number of threads of process `pid` (0 when unknown).
int ProcessThreads(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Threads:")) return std::atoi(line.c_str() + 8);
  }
  return 0;
}

// The system's count of connections dropped because a listening socket's accept queue was full
// (TcpExt ListenOverflows in /proc/net/netstat; -1 when unknown). On this machine during a run,
// those are the server's.
std::int64_t ListenOverflows() {
  std::ifstream in("/proc/net/netstat");
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (!names.starts_with("TcpExt:")) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "ListenOverflows") return std::atoll(value.c_str());
    }
  }
  return -1;
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// Percentiles (nearest rank) of latencies in microseconds, reported in milliseconds.
json Percentiles(std::vector<double> us) {
  if (us.empty()) return json::object();
  std::sort(us.begin(), us.end());
  auto at = [&](double p) {
    std::size_t i = static_cast<std::size_t>(p * static_cast<double>(us.size() - 1) + 0.5);
    return std::round(us[std::min(i, us.size() - 1)]) / 1000.0;
  };
  return {{"n", us.size()},
          {"p50_ms", at(0.50)},
          {"p90_ms", at(0.90)},
          {"p99_ms", at(0.99)},
          {"max_ms", at(1.0)}};
}

// `v` to `decimals` places (dividing, so that the JSON shows 293.4, not 293.40000000000003).
double Round(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

std::unique_ptr<worker::Coordinator> Connect(const Options& o, bool keep_alive) {
  if (o.mode == "drain-local") {
    return CheckOk(worker::LocalCoordinator::Open(o.db, service::WithDefaults({}), false),
                   "open " + o.db);
  }
  return std::make_unique<worker::HttpCoordinator>(o.server, o.token, keep_alive);
}

service::Registration BenchWorker(int index, Millis interval_ms) {
  service::Registration r;
  r.name = "bench-" + std::to_string(index);
  r.hostname = "bench";
  r.pid = getpid();
  r.heartbeat_interval_ms = interval_ms;
  return r;
}

// ---- drain / drain-local ----

struct DrainThread {
  std::int64_t completed = 0;
  Clock::time_point last_done{};
  std::vector<double> claim_us;
  std::vector<double> report_us;
  std::string error;
};

// Every task done, each claimed once, no claim left active. Empty when so; else what is wrong.
std::string VerifyDrained(const Options& o, std::int64_t reported) {
  auto store = CheckOk(OpenStore(o.db, "NORMAL", /*create=*/false), "reopen " + o.db);
  std::map<TaskStatus, std::int64_t> by_status;
  std::int64_t reclaimed = 0, active = 0;
  CheckOk(store->Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::vector<Task> all, txn.ListTasks({}));
    for (const auto& t : all) {
      ++by_status[t.status];
      if (t.attempt != 1) ++reclaimed;
    }
    TX_ASSIGN_OR_RETURN(std::vector<Claim> claims, txn.ListActiveClaims());
    active = static_cast<std::int64_t>(claims.size());
    return Ok();
  }),
          "verify");
  std::int64_t done = by_status[TaskStatus::kDone];
  std::int64_t total = 0;
  for (const auto& [status, n] : by_status) total += n;
  if (done == o.tasks && total == o.tasks && reclaimed == 0 && active == 0 && reported == o.tasks) {
    return "";
  }
  return "done " + std::to_string(done) + " of " + std::to_string(total) + " (want " +
         std::to_string(o.tasks) + "), claimed more than once " + std::to_string(reclaimed) +
         ", active claims " + std::to_string(active) + ", reports accepted " +
         std::to_string(reported);
}

int Drain(const Options& o) {
  RealClock clock;
  {
    auto store = CheckOk(OpenStore(o.db, "NORMAL", /*create=*/false), "open " + o.db);
    CheckOk(SeedTasks(*store, clock, o.tasks), "seed tasks");
  }
  // Let the server's event hub read the seeding's events before the clock starts.
  if (o.mode == "drain") std::this_thread::sleep_for(std::chrono::milliseconds(500));

  std::vector<std::unique_ptr<worker::Coordinator>> fleet;
  for (int i = 0; i < o.workers; ++i) fleet.push_back(Connect(o, /*keep_alive=*/true));
  std::vector<DrainThread> results(static_cast<std::size_t>(o.workers));
  std::atomic<bool> failed{false};
  Clock::time_point start;
  double cpu0 = 0, server_cpu0 = 0;
  std::barrier ready(o.workers, [&]() noexcept {
    cpu0 = SelfCpuSeconds();
    if (o.server_pid != 0) server_cpu0 = ProcessCpuSeconds(o.server_pid);
    start = Clock::now();
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < o.workers; ++i) {
    threads.emplace_back([&, i] {
      worker::Coordinator& fleet_of_one = *fleet[static_cast<std::size_t>(i)];
      DrainThread& me = results[static_cast<std::size_t>(i)];
      me.claim_us.reserve(static_cast<std::size_t>(2 * o.tasks / o.workers + 16));
      me.report_us.reserve(me.claim_us.capacity());
      // Registered for an hour: the drain has no heartbeat thread, and must not go stale.
      Result<Worker> w = fleet_of_one.Register(BenchWorker(i, 3'600'000), nullptr);
      if (!w.ok()) me.error = "register: " + w.error().message();
      ready.arrive_and_wait();
      if (!w.ok()) {
        failed = true;
        return;
      }
      while (!failed) {
        auto t0 = Clock::now();
        Result<std::optional<service::ClaimResult>> c = fleet_of_one.ClaimNext(w->id, 0, 0);
        auto t1 = Clock::now();
        me.claim_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        if (!c.ok()) {
          me.error = "claim: " + c.error().message();
          failed = true;
          return;
        }
        if (!c->has_value()) return;  // the queue is empty
        const service::ClaimResult& got = **c;
        Result<Task> t = fleet_of_one.Report(got.task.id, got.claim.token, service::Outcome::kDone,
                                             "", std::optional<int>(0), nullptr);
        auto t2 = Clock::now();
        me.report_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
        if (!t.ok() || t->status != TaskStatus::kDone) {
          me.error = "report " + got.task.id + ": " +
                     (t.ok() ? "status " + std::string(ToString(t->status)) : t.error().message());
          failed = true;
          return;
        }
        ++me.completed;
        me.last_done = t2;
      }
    });
  }
  for (auto& t : threads) t.join();
  double cpu = SelfCpuSeconds() - cpu0;
  double server_cpu = o.server_pid != 0 ? ProcessCpuSeconds(o.server_pid) - server_cpu0 : 0;
  for (const auto& r : results) {
    if (!r.error.empty()) {
      std::fprintf(stderr, "tx_http_bench %s: %s\n", o.mode.c_str(), r.error.c_str());
      return 1;
    }
  }
  fleet.clear();  // closes the connections

  std::int64_t reported = 0;
  Clock::time_point end = start;
  std::vector<double> claim_us, report_us;
  json per_worker = json::array();
  for (const auto& r : results) {
    reported += r.completed;
    end = std::max(end, r.last_done);
    claim_us.insert(claim_us.end(), r.claim_us.begin(), r.claim_us.end());
    report_us.insert(report_us.end(), r.report_us.begin(), r.report_us.end());
    per_worker.push_back(r.completed);
  }
  if (std::string wrong = VerifyDrained(o, reported); !wrong.empty()) {
    std::fprintf(stderr, "tx_http_bench %s: verification failed: %s\n", o.mode.c_str(),
                 wrong.c_str());
    return 1;
  }
  double secs = Seconds(end - start);
  json out = {{"bench", o.mode},
              {"workers", o.workers},
              {"tasks", o.tasks},
              {"seconds", Round(secs, 3)},
              {"tasks_per_s", Round(static_cast<double>(o.tasks) / secs, 1)},
              {"claim", Percentiles(std::move(claim_us))},
              {"report", Percentiles(std::move(report_us))},
              {"client_cpu_us_per_task", Round(cpu * 1e6 / static_cast<double>(o.tasks), 1)},
              {"per_worker", per_worker},
              {"verified", true}};
  if (o.server_pid != 0) {
    out["server_cpu_us_per_task"] = Round(server_cpu * 1e6 / static_cast<double>(o.tasks), 1);
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// ---- heartbeats ----

struct BeatThread {
  std::vector<double> latency_us;  // beats due in the measured window
  std::vector<double> lag_us;      // how late a beat started against its schedule
  std::int64_t ok = 0;
  std::int64_t failed = 0;
  std::map<std::string, std::int64_t> errors;  // by message, kept short
};

// The metadata a worker's heartbeat thread sends (HeartbeatLoop::Metadata).
json BeatMetadata(int index) {
  return {{"cpu_percent", 0.05}, {"rss_mb", 7.4}, {"tasks_completed", index}, {"agent_pid", 0}};
}

std::string ShortError(const std::string& message) {
  // "cannot reach http://127.0.0.1:PORT (POST /api/worker/heartbeat): Read" → its reason.
  auto colon = message.rfind(": ");
  std::string why = colon == std::string::npos ? message : message.substr(colon + 2);
  return why.size() > 80 ? why.substr(0, 80) : why;
}

int Heartbeats(const Options& o) {
  const int threads_n = o.client_threads > 0 ? std::min(o.client_threads, o.workers)
                        : o.keep_alive       ? o.workers
                                             : std::min(8, o.workers);
  // Registration, a connection each as a starting worker's first request has: not what is
  // measured, but its latency is reported (the notes' bar: p95 < 100 ms).
  std::vector<std::string> ids, credentials;
  std::vector<double> register_us;
  {
    worker::HttpCoordinator registrar(o.server, o.token, /*keep_alive=*/false);
    for (int i = 0; i < o.workers; ++i) {
      auto t0 = Clock::now();
      Worker w = CheckOk(registrar.Register(BenchWorker(i, o.interval_ms), nullptr), "register");
      register_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      ids.push_back(w.id);
      credentials.push_back(registrar.credential());  // each beat acts for its worker with it
    }
  }
  std::fprintf(stderr,
               "heartbeats: %d workers registered; beating every %lld ms from %d threads%s\n",
               o.workers, static_cast<long long>(o.interval_ms), threads_n,
               o.keep_alive ? " (keep-alive)" : " (a connection per beat)");
  std::vector<std::unique_ptr<worker::HttpCoordinator>> fleet;
  for (int i = 0; i < o.workers; ++i) {
    fleet.push_back(std::make_unique<worker::HttpCoordinator>(o.server, o.token, o.keep_alive));
    fleet.back()->set_credential(credentials[static_cast<std::size_t>(i)]);
  }

  // Worker i beats at start + i * interval / W + k * interval, on thread i % threads_n.
  const auto interval = std::chrono::milliseconds(o.interval_ms);
  const auto start = Clock::now() + std::chrono::milliseconds(200);
  const auto window_begin = start + std::chrono::milliseconds(o.warmup_ms);
  const auto window_end = window_begin + std::chrono::milliseconds(o.seconds_ms);
  std::atomic<bool> stop{false};
  std::vector<BeatThread> results(static_cast<std::size_t>(threads_n));
  // Per worker: when its last beat was accepted (registration counts, as on the server), what
  // beat is in flight since when (0: none), and the longest time it went without an accepted beat
  // within the window: the staleness the server would have seen.
  const std::int64_t registered_ns = Clock::now().time_since_epoch().count();
  std::vector<std::atomic<std::int64_t>> last_ok_ns(static_cast<std::size_t>(o.workers));
  std::vector<std::atomic<std::int64_t>> in_flight_ns(static_cast<std::size_t>(o.workers));
  for (auto& v : last_ok_ns) v = registered_ns;
  std::vector<double> max_gap_s(static_cast<std::size_t>(o.workers), 0);
  auto ns = [](Clock::time_point t) -> std::int64_t { return t.time_since_epoch().count(); };
  auto at = [](std::int64_t ns) { return Clock::time_point(Clock::duration(ns)); };

  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t) {
    threads.emplace_back([&, t] {
      BeatThread& me = results[static_cast<std::size_t>(t)];
      for (std::int64_t round = 0; !stop; ++round) {
        for (int i = t; i < o.workers && !stop; i += threads_n) {
          auto due = start + round * interval + interval * i / o.workers;
          std::this_thread::sleep_until(due);
          auto t0 = Clock::now();
          const auto w = static_cast<std::size_t>(i);
          in_flight_ns[w] = ns(t0);
          Result<Worker> hb = fleet[w]->Heartbeat(ids[w], {std::nullopt, BeatMetadata(i)});
          auto t1 = Clock::now();
          in_flight_ns[w] = 0;
          // Beats that start in the window are counted, however late they end.
          if (t0 < window_begin || t0 >= window_end) {
            if (hb.ok() && t1 < window_begin) last_ok_ns[w] = ns(t1);
            continue;
          }
          me.latency_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          me.lag_us.push_back(std::chrono::duration<double, std::micro>(t0 - due).count());
          if (hb.ok()) {
            ++me.ok;
            if (t1 <= window_end) {  // after it, the monitor has taken the trailing gap
              max_gap_s[w] = std::max(max_gap_s[w], Seconds(t1 - at(last_ok_ns[w])));
              last_ok_ns[w] = ns(t1);
            }
          } else {
            ++me.failed;
            ++me.errors[ShortError(hb.error().message())];
          }
        }
      }
    });
  }

  std::this_thread::sleep_until(window_begin);
  double server0 = ProcessCpuSeconds(o.server_pid);
  double self0 = SelfCpuSeconds();
  std::int64_t overflows0 = ListenOverflows();
  auto measured_from = Clock::now();
  std::this_thread::sleep_until(window_end);
  double server1 = ProcessCpuSeconds(o.server_pid);
  double self1 = SelfCpuSeconds();
  std::int64_t overflows1 = ListenOverflows();
  auto measured_to = Clock::now();
  int server_threads = ProcessThreads(o.server_pid);
  // Each worker's time since its last accepted beat, now; and beats hanging for 2 intervals.
  std::vector<double> trailing_gap_s(static_cast<std::size_t>(o.workers));
  std::int64_t hung = 0;
  for (std::size_t w = 0; w < trailing_gap_s.size(); ++w) {
    trailing_gap_s[w] = Seconds(window_end - at(last_ok_ns[w]));
    std::int64_t since = in_flight_ns[w];
    if (since != 0 && window_end - at(since) >= 2 * interval) ++hung;
  }
  // The fleet as the server sees it at the end, beats still going: workers whose heartbeat is
  // ≥ 2 intervals old (-1: the server did not answer).
  std::int64_t stale_at_end = -1;
  {
    worker::HttpCoordinator reader(o.server, o.token, /*keep_alive=*/false);
    Result<json> list = reader.Fetch("/api/workers?status=idle,busy&limit=100000");
    if (list.ok()) {
      stale_at_end = 0;
      for (const auto& w : (*list)["workers"]) {
        if (!w.value("name", "").starts_with("bench-")) continue;
        const json& age = w["heartbeat_age_ms"];
        if (!age.is_number() || age.get<Millis>() >= 2 * o.interval_ms) ++stale_at_end;
      }
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  double window_s = Seconds(measured_to - measured_from);

  std::vector<double> latency_us, lag_us;
  std::int64_t ok = 0, failed = 0;
  std::map<std::string, std::int64_t> errors;
  for (auto& r : results) {
    latency_us.insert(latency_us.end(), r.latency_us.begin(), r.latency_us.end());
    lag_us.insert(lag_us.end(), r.lag_us.begin(), r.lag_us.end());
    ok += r.ok;
    failed += r.failed;
    for (const auto& [e, n] : r.errors) errors[e] += n;
  }
  std::int64_t would_be_stale = 0;
  double worst_gap_s = 0;
  for (std::size_t w = 0; w < max_gap_s.size(); ++w) {
    double gap = std::max(max_gap_s[w], trailing_gap_s[w]);
    worst_gap_s = std::max(worst_gap_s, gap);
    if (gap * 1000 >= 2 * static_cast<double>(o.interval_ms)) ++would_be_stale;
  }
  double expected = static_cast<double>(o.workers) * static_cast<double>(o.seconds_ms) /
                    static_cast<double>(o.interval_ms);
  json out = {{"bench", "heartbeats"},
              {"workers", o.workers},
              {"interval_ms", o.interval_ms},
              {"keep_alive", o.keep_alive},
              {"client_threads", threads_n},
              {"window_s", Round(window_s, 2)},
              {"server_cpu_pct", Round(100 * (server1 - server0) / window_s, 2)},
              {"client_cpu_pct", Round(100 * (self1 - self0) / window_s, 2)},
              {"beats_expected", static_cast<std::int64_t>(expected)},
              {"beats_ok", ok},
              {"beats_failed", failed},
              {"beats_hung_at_end", hung},
              {"beats_per_s", Round(static_cast<double>(ok) / window_s, 1)},
              {"latency", Percentiles(std::move(latency_us))},
              {"start_lag", Percentiles(std::move(lag_us))},
              {"worst_gap_s", Round(worst_gap_s, 3)},
              {"workers_with_gap_over_2_intervals", would_be_stale},
              {"stale_at_end", stale_at_end},
              {"server_threads", server_threads},
              {"listen_overflows", overflows0 < 0 ? -1 : overflows1 - overflows0},
              {"register", Percentiles(std::move(register_us))},
              {"errors", errors}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int Main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  return o.mode == "heartbeats" ? Heartbeats(o) : Drain(o);
}

}  // namespace
}  // namespace tx::bench

int main(int argc, char** argv) { return tx::bench::Main(argc, argv); }
