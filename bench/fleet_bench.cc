// tx_fleet_bench: how large a heartbeating fleet one PostgreSQL server holds (issue 6). N simulated
// workers heartbeat every `interval` over C store connections, and the server's CPU is measured.
//
//   tx_fleet_bench --pg SERVER_URL --server-pid PID --workers N [--connections C]
//                  [--interval 1s] [--seconds 30] [--warmup 10s] [--batch-window MS]
//
// One run per invocation, on a fresh database of that server (ScratchStore, dropped afterwards);
// bench/fleet_bench.sh runs it for several fleet sizes and tabulates. A real worker holds a store
// connection for its heartbeat thread alone, but N of them would be far past the server's
// max_connections, so C threads each own one Store (one connection, one backend) and beat for
// N / C workers: worker i belongs to thread i % C.
//
// Each thread first registers its workers (WorkerService::Register, no slot, as a worker started
// by hand on another host: name, hostname, capabilities, queues, the registration metadata a
// worker sends, and the heartbeat interval it promises = `interval`). Once all N are registered,
// worker i beats at start + i × interval / N + k × interval: once per interval each, phases spread
// evenly over the interval. A beat is WorkerService::Heartbeat(id, {idle, metadata}) with the
// metadata HeartbeatLoop::Metadata sends (cpu_percent, rss_mb, tasks_completed, agent_pid) on the
// thread's Store and that store's clock (the server's) — the very call a worker's heartbeat thread
// makes through its LocalCoordinator. A thread that falls behind beats at once, never skips.
// With --batch-window W (ms), a thread instead gathers the beats due within W of the first one
// and records them together at its end with WorkerService::HeartbeatMany, one transaction: what
// `tx serve` does with its remote workers' beats (api/heartbeat_batcher.h); a beat's latency then
// includes its wait in the window. --connections 1 is then one tx serve.
//
// After a warm-up, for `seconds`, it measures:
//   - the server's CPU: utime + stime of every process of the cluster (the postmaster, whose pid is
//     --server-pid, and its children: our backends, walwriter, checkpointer, autovacuum, ...),
//     plus the postmaster's cutime + cstime so that children that exit within the window (an
//     autovacuum worker) are counted; as % of one core, split by process kind, and per beat;
//   - beats done per second, their latency (p50/p90/p99/max), how late they started against their
//     schedule (a client that cannot keep up shows here), failures by message;
//   - staleness as the store judges it: at the window's end, a Read over every live worker on a
//     connection of its own, counting IsStale(worker, the store clock's now) — a worker is stale
//     once now - last_heartbeat_at ≥ 2 × interval; a correct run has none; and, from the client's
//     side, each worker's longest gap between two accepted beats in the window;
//   - the benchmark's own CPU (utime + stime of this process), which shares the machine.
// Afterwards, with the fleet still beating, it times one registration with a slot (it locks the
// live workers of that slot of that pool alone: Txn::ListLiveWorkersInSlot).
//
// Output: a few lines of results, then a final `JSON {...}` line for scripts.

#include <dirent.h>
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
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "core/duration.h"
#include "core/worker.h"
#include "service/worker_service.h"

namespace tx::bench {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

// At most this many beats in one batch: as tx serve's (ServerOptions::heartbeat_batch).
constexpr std::size_t kMaxBatch = 256;

struct Options {
  std::string pg;
  int server_pid = 0;
  int workers = 1'000;
  int connections = 16;
  Millis interval_ms = 1'000;
  Millis seconds_ms = 30'000;
  Millis warmup_ms = 10'000;
  Millis batch_window_ms = 0;  // 0: a transaction per beat
};

[[noreturn]] void Usage(const std::string& msg) {
  std::fprintf(stderr,
               "tx_fleet_bench: %s\n"
               "usage: tx_fleet_bench --pg SERVER_URL --server-pid PID --workers N "
               "[--connections C] [--interval 1s] [--seconds 30] [--warmup 10s] "
               "[--batch-window MS]\n",
               msg.c_str());
  std::exit(2);
}

std::int64_t ParseInt(const std::string& flag, const std::string& text, std::int64_t min) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min) {
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
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--pg") {
      o.pg = value();
    } else if (a == "--server-pid") {
      o.server_pid = static_cast<int>(ParseInt(a, value(), 1));
    } else if (a == "--workers") {
      o.workers = static_cast<int>(ParseInt(a, value(), 1));
    } else if (a == "--connections") {
      o.connections = static_cast<int>(ParseInt(a, value(), 1));
    } else if (a == "--interval") {
      o.interval_ms = ParseMillis(a, value());
    } else if (a == "--seconds") {
      o.seconds_ms = 1000 * ParseInt(a, value(), 1);
    } else if (a == "--warmup") {
      o.warmup_ms = ParseMillis(a, value());
    } else if (a == "--batch-window") {
      o.batch_window_ms = ParseInt(a, value(), 0);
    } else if (a == "-h" || a == "--help") {
      Usage("help");
    } else {
      Usage("unknown argument '" + a + "'");
    }
  }
  if (o.pg.empty()) Usage("--pg is required (a PostgreSQL server's URL)");
  if (o.server_pid == 0) Usage("--server-pid is required (the postmaster's pid)");
  o.connections = std::min(o.connections, o.workers);
  return o;
}

double Seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }
double Micros(Steady::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Round(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

// Percentiles (nearest rank) of durations in microseconds, reported in milliseconds.
json Percentiles(std::vector<double> us) {
  if (us.empty()) return json::object();
  std::sort(us.begin(), us.end());
  auto at = [&](double p) {
    std::size_t i = static_cast<std::size_t>(p * static_cast<double>(us.size() - 1) + 0.5);
    return Round(us[std::min(i, us.size() - 1)] / 1000.0, 3);
  };
  return {{"n", us.size()},
          {"p50_ms", at(0.50)},
          {"p90_ms", at(0.90)},
          {"p99_ms", at(0.99)},
          {"max_ms", at(1.0)}};
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// ---- the server's CPU, from /proc ----

struct ProcStat {
  int ppid = 0;
  double cpu_s = 0;       // utime + stime
  double children_s = 0;  // cutime + cstime: its children that exited and were reaped
};

// /proc/PID/stat of `pid`; false when it is gone.
bool ReadProcStat(int pid, ProcStat& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 > stat.size()) return false;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  long long ppid = 0, utime = 0, stime = 0, cutime = 0, cstime = 0;
  // Fields from the 3rd (state): ppid is the 4th, utime .. cstime the 14th .. 17th.
  for (int n = 3; n <= 17 && fields >> f; ++n) {
    long long v = std::atoll(f.c_str());
    if (n == 4) ppid = v;
    if (n == 14) utime = v;
    if (n == 15) stime = v;
    if (n == 16) cutime = v;
    if (n == 17) cstime = v;
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  out.ppid = static_cast<int>(ppid);
  out.cpu_s = static_cast<double>(utime + stime) / tick;
  out.children_s = static_cast<double>(cutime + cstime) / tick;
  return true;
}

// What a postgres process is, from its title ("postgres: walwriter", "postgres: tx DB 127.0.0.1(…)
// idle", "postgres: autovacuum worker DB"): "backends" for a connection to `dbname` (ours), else
// the kind of background process.
std::string KindOf(int pid, const std::string& dbname) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string title((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(title.begin(), title.end(), '\0', ' ');
  if (title.starts_with("postgres: ")) title = title.substr(10);
  if (title.find("autovacuum") != std::string::npos) return "autovacuum";
  if (title.find(" " + dbname + " ") != std::string::npos) return "backends";
  for (const char* kind :
       {"walwriter", "checkpointer", "background writer", "logical replication"}) {
    if (title.starts_with(kind)) return kind;
  }
  return "other";
}

// The cluster's processes at one instant: the postmaster and each of its children.
struct ServerSnapshot {
  ProcStat postmaster;
  std::map<int, std::pair<std::string, double>> children;  // pid → (kind, cpu_s)
};

ServerSnapshot SnapshotServer(int postmaster, const std::string& dbname) {
  ServerSnapshot s;
  if (!ReadProcStat(postmaster, s.postmaster)) {
    std::fprintf(stderr, "tx_fleet_bench: no process %d (--server-pid)\n", postmaster);
    std::exit(1);
  }
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    std::perror("opendir /proc");
    std::exit(1);
  }
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    ProcStat ps;
    if (!ReadProcStat(static_cast<int>(pid), ps) || ps.ppid != postmaster) continue;
    s.children[static_cast<int>(pid)] = {KindOf(static_cast<int>(pid), dbname), ps.cpu_s};
  }
  closedir(proc);
  return s;
}

// CPU seconds the cluster spent between two snapshots, by kind, and in all ("total"). A child
// that exited in between left its time to the postmaster's cutime/cstime: what it spent after
// the first snapshot is counted as "exited" (its kind is no longer known for sure).
std::map<std::string, double> ServerCpuBetween(const ServerSnapshot& a, const ServerSnapshot& b) {
  std::map<std::string, double> by_kind;
  double exited_before = 0;  // what the exited children had spent by the first snapshot
  for (const auto& [pid, kind_cpu] : a.children) {
    auto it = b.children.find(pid);
    if (it == b.children.end()) {
      exited_before += kind_cpu.second;
    } else {
      by_kind[it->second.first] += it->second.second - kind_cpu.second;
    }
  }
  for (const auto& [pid, kind_cpu] : b.children) {
    if (!a.children.contains(pid)) by_kind[kind_cpu.first] += kind_cpu.second;  // started since
  }
  by_kind["postmaster"] += b.postmaster.cpu_s - a.postmaster.cpu_s;
  by_kind["exited"] += b.postmaster.children_s - a.postmaster.children_s - exited_before;
  double total = 0;
  for (const auto& [kind, s] : by_kind) total += s;
  by_kind["total"] = total;
  return by_kind;
}

// ---- the fleet ----

service::Registration FleetWorker(int index, Millis interval_ms) {
  service::Registration r;
  r.name = "fleet-" + std::to_string(index);
  r.hostname = "host-" + std::to_string(index / 50);  // 50 workers a host
  r.pid = 10'000 + index % 50;
  r.capabilities = {"git", "python"};
  r.queues = {"default"};
  r.heartbeat_interval_ms = interval_ms;
  // What WorkerRuntime registers with.
  r.metadata = {
      {"agent", "claude"}, {"tasks_completed", 0}, {"agent_pid", 0}, {"workdir", "/srv/work"}};
  return r;
}

// The metadata HeartbeatLoop::Metadata sends: this process's CPU % and RSS, which change a little
// from beat to beat, the tasks completed, the agent's pid (0 while idle).
json BeatMetadata(int index, std::int64_t round) {
  double cpu = static_cast<double>((index * 7 + round * 3) % 20) / 100;  // 0.00 .. 0.19 %
  double rss = 7.0 + static_cast<double>((index + round) % 8) / 10;      // 7.0 .. 7.7 MB
  return {{"cpu_percent", cpu}, {"rss_mb", rss}, {"tasks_completed", index % 40}, {"agent_pid", 0}};
}

std::string ShortError(const std::string& message) {
  return message.size() > 100 ? message.substr(0, 100) : message;
}

// What one connection's thread saw; each worker belongs to exactly one thread.
struct ConnThread {
  std::string error;  // set when the thread could not open its store or register
  std::vector<int> workers;
  std::vector<std::string> ids;
  std::vector<double> register_us;
  std::vector<double> latency_us;  // beats started within the window
  std::vector<double> lag_us;      // how late they started against their schedule
  std::int64_t ok = 0;
  std::int64_t failed = 0;
  std::map<std::string, std::int64_t> errors;
  // Per worker (same order as `workers`): when its last beat accepted by window_end completed
  // (registration counts, as in the store), and its longest gap between two within the window.
  std::vector<Steady::time_point> last_ok;
  std::vector<double> max_gap_s;
};

int Main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  ScratchStore scratch(o.pg);
  const std::string dbname = scratch.url().substr(scratch.url().rfind('/') + 1);
  // Created here (migrations applied); kept open: the stale check's connection, after the window.
  std::unique_ptr<store::Store> checker =
      CheckOk(store::Open({scratch.url(), /*create=*/true}), "create store");
  const double load_at_start = [] {
    double l = -1;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &l) != 1) l = -1;
      std::fclose(f);
    }
    return l;
  }();
  std::printf(
      "fleet: %d workers beating every %lld ms over %d connections to %s (%ld cpus, "
      "load %.2f)\n",
      o.workers, static_cast<long long>(o.interval_ms), o.connections, checker->Describe().c_str(),
      sysconf(_SC_NPROCESSORS_ONLN), load_at_start);
  std::fflush(stdout);

  const int C = o.connections;
  std::vector<ConnThread> conns(static_cast<std::size_t>(C));
  for (int i = 0; i < o.workers; ++i) conns[static_cast<std::size_t>(i % C)].workers.push_back(i);

  const auto interval = std::chrono::milliseconds(o.interval_ms);
  Steady::time_point start, window_begin, window_end;
  std::atomic<bool> stop{false};
  std::atomic<bool> scheduled{false};  // the four times below are set
  auto registered_at = Steady::now();
  // All threads registered: the schedule is fixed from now (the completion step runs once).
  std::barrier registered(C, [&]() noexcept {
    registered_at = Steady::now();
    start = registered_at + std::chrono::milliseconds(200);
    window_begin = start + std::chrono::milliseconds(o.warmup_ms);
    window_end = window_begin + std::chrono::milliseconds(o.seconds_ms);
    scheduled = true;
  });

  auto t_register = Steady::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < C; ++t) {
    threads.emplace_back([&, t] {
      ConnThread& me = conns[static_cast<std::size_t>(t)];
      auto opened = store::Open({scratch.url(), /*create=*/false});
      if (!opened.ok()) me.error = "open: " + opened.error().message();
      std::unique_ptr<store::Store> store = opened.ok() ? std::move(opened).value() : nullptr;
      std::optional<service::WorkerService> fleet;
      if (store) fleet.emplace(*store, store->clock());
      for (int i : me.workers) {
        if (!me.error.empty()) break;
        auto t0 = Steady::now();
        Result<Worker> w = fleet->Register(FleetWorker(i, o.interval_ms));
        auto t1 = Steady::now();
        if (!w.ok()) {
          me.error = "register: " + w.error().message();
          break;
        }
        me.register_us.push_back(Micros(t1 - t0));
        me.ids.push_back(w->id);
        me.last_ok.push_back(t1);
      }
      me.max_gap_s.assign(me.workers.size(), 0);
      registered.arrive_and_wait();
      if (!me.error.empty()) return;
      // Counts the beat of worker k (due at `due`, sent at t0, answered at t1).
      auto record = [&](std::size_t k, const Result<Worker>& hb, Steady::time_point due,
                        Steady::time_point t0, Steady::time_point t1) {
        if (t0 >= window_begin && t0 < window_end) {  // beats that start in the window count
          me.latency_us.push_back(Micros(t1 - due));
          me.lag_us.push_back(Micros(t0 - due));
          if (hb.ok()) {
            ++me.ok;
          } else {
            ++me.failed;
            ++me.errors[ShortError(hb.error().message())];
          }
        }
        if (hb.ok() && t1 <= window_end) {
          if (t1 > window_begin) {
            me.max_gap_s[k] = std::max(me.max_gap_s[k], Seconds(t1 - me.last_ok[k]));
          }
          me.last_ok[k] = t1;
        }
      };
      auto due_of = [&](std::int64_t round, std::size_t k) {
        return start + round * interval +
               std::chrono::microseconds(o.interval_ms * 1000 * me.workers[k] / o.workers);
      };
      const auto window = std::chrono::milliseconds(o.batch_window_ms);
      for (std::int64_t round = 0; !stop; ++round) {
        for (std::size_t k = 0; k < me.workers.size() && !stop;) {
          if (o.batch_window_ms == 0) {
            auto due = due_of(round, k);
            std::this_thread::sleep_until(due);
            auto t0 = Steady::now();
            service::HeartbeatUpdate update{WorkerStatus::kIdle,
                                            BeatMetadata(me.workers[k], round)};
            Result<Worker> hb = fleet->Heartbeat(me.ids[k], update);
            record(k, hb, due, t0, Steady::now());
            ++k;
            continue;
          }
          // As HeartbeatBatcher does: wait the window after the first beat, then take every beat
          // that has arrived by then (a thread behind its schedule takes all it owes), at most
          // kMaxBatch.
          auto first_due = due_of(round, k);
          std::this_thread::sleep_until(first_due + window);
          auto cutoff = std::max(first_due + window, Steady::now());
          std::vector<std::size_t> batch;
          std::vector<service::WorkerService::Beat> beats;
          for (; k < me.workers.size() && batch.size() < kMaxBatch && due_of(round, k) <= cutoff;
               ++k) {
            batch.push_back(k);
            beats.push_back({me.ids[k], {WorkerStatus::kIdle, BeatMetadata(me.workers[k], round)}});
          }
          auto t0 = Steady::now();
          std::vector<Result<Worker>> results = fleet->HeartbeatMany(beats);
          auto t1 = Steady::now();
          for (std::size_t b = 0; b < batch.size(); ++b) {
            record(batch[b], results[b], due_of(round, batch[b]), t0, t1);
          }
        }
      }
    });
  }

  // Wait for the schedule to be fixed (every thread registered its workers, or failed to).
  while (!scheduled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool failed_to_start = false;
  for (const auto& c : conns) {
    if (c.error.empty()) continue;
    std::fprintf(stderr, "tx_fleet_bench: %s\n", c.error.c_str());
    failed_to_start = true;
  }
  if (failed_to_start) {
    stop = true;
    for (auto& t : threads) t.join();
    return 1;
  }
  const double register_s = Seconds(registered_at - t_register);
  std::fprintf(stderr, "fleet: %d workers registered in %.1f s; warm-up %lld ms\n", o.workers,
               register_s, static_cast<long long>(o.warmup_ms));
  std::this_thread::sleep_until(window_begin);
  std::fprintf(stderr, "fleet: measuring for %lld s\n",
               static_cast<long long>(o.seconds_ms / 1000));
  ServerSnapshot server0 = SnapshotServer(o.server_pid, dbname);
  double self0 = SelfCpuSeconds();
  auto measured_from = Steady::now();
  std::this_thread::sleep_until(window_end);
  ServerSnapshot server1 = SnapshotServer(o.server_pid, dbname);
  double self1 = SelfCpuSeconds();
  auto measured_to = Steady::now();

  // The store's judgment, beats still going: live workers whose last heartbeat is ≥ 2 intervals
  // old by the store's clock.
  std::int64_t live = 0, stale = 0;
  Millis oldest_ms = 0;
  Status listed = checker->Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::vector<Worker> all, txn.ListWorkers(LiveWorkerStatuses()));
    const Moment now = checker->clock().Now();
    live = static_cast<std::int64_t>(all.size());
    for (const auto& w : all) {
      if (IsStale(w, now)) ++stale;
      oldest_ms = std::max(oldest_ms, SilentFor(w, now));
    }
    return Ok();
  });
  CheckOk(listed, "list workers");
  // One registration with a slot in a fleet this size.
  double slot_register_ms = -1;
  {
    service::WorkerService workers(*checker, checker->clock());
    service::Registration r = FleetWorker(o.workers, o.interval_ms);
    r.slot = "slot-probe";
    auto t0 = Steady::now();
    Result<Worker> w = workers.Register(r);
    if (w.ok()) slot_register_ms = Round(Micros(Steady::now() - t0) / 1000, 2);
  }
  stop = true;
  for (auto& t : threads) t.join();

  const double window_s = Seconds(measured_to - measured_from);
  std::map<std::string, double> cpu = ServerCpuBetween(server0, server1);
  std::vector<double> latency_us, lag_us, register_us;
  std::int64_t ok = 0, failed = 0, gap_workers = 0;
  double worst_gap_s = 0;
  std::map<std::string, std::int64_t> errors;
  for (auto& c : conns) {
    latency_us.insert(latency_us.end(), c.latency_us.begin(), c.latency_us.end());
    lag_us.insert(lag_us.end(), c.lag_us.begin(), c.lag_us.end());
    register_us.insert(register_us.end(), c.register_us.begin(), c.register_us.end());
    ok += c.ok;
    failed += c.failed;
    for (const auto& [e, n] : c.errors) errors[e] += n;
    for (std::size_t k = 0; k < c.workers.size(); ++k) {
      double gap = std::max(c.max_gap_s[k], Seconds(window_end - c.last_ok[k]));
      worst_gap_s = std::max(worst_gap_s, gap);
      if (gap * 1000 >= 2 * static_cast<double>(o.interval_ms)) ++gap_workers;
    }
  }
  const double beats = static_cast<double>(std::max<std::int64_t>(ok, 1));
  json by_kind = json::object();
  for (const auto& [kind, s] : cpu) {
    if (kind != "total") by_kind[kind] = Round(100 * s / window_s, 2);
  }
  const double expected = static_cast<double>(o.workers) * static_cast<double>(o.seconds_ms) /
                          static_cast<double>(o.interval_ms);
  json lag = Percentiles(lag_us);
  json out = {{"bench", "fleet"},
              {"store", "postgres"},
              {"workers", o.workers},
              {"connections", C},
              {"batch_window_ms", o.batch_window_ms},
              {"interval_ms", o.interval_ms},
              {"window_s", Round(window_s, 2)},
              {"server_cpu_pct", Round(100 * cpu["total"] / window_s, 2)},
              {"server_cpu_pct_by_kind", by_kind},
              {"server_cpu_us_per_beat", Round(cpu["total"] * 1e6 / beats, 1)},
              {"backend_cpu_us_per_beat", Round(cpu["backends"] * 1e6 / beats, 1)},
              {"client_cpu_pct", Round(100 * (self1 - self0) / window_s, 2)},
              {"client_cpu_us_per_beat", Round((self1 - self0) * 1e6 / beats, 1)},
              {"beats_expected", static_cast<std::int64_t>(expected)},
              {"beats_ok", ok},
              {"beats_failed", failed},
              {"beats_per_s", Round(static_cast<double>(ok) / window_s, 1)},
              {"latency", Percentiles(std::move(latency_us))},
              {"start_lag", lag},
              {"live_workers_at_end", live},
              {"stale_at_end", stale},
              {"oldest_heartbeat_ms_at_end", oldest_ms},
              {"workers_with_gap_over_2_intervals", gap_workers},
              {"worst_gap_s", Round(worst_gap_s, 3)},
              {"register", Percentiles(std::move(register_us))},
              {"register_s", Round(register_s, 2)},
              {"slot_register_ms", slot_register_ms},
              {"load_at_start", load_at_start},
              {"errors", errors}};

  std::printf(
      "%.0f beats/s (expected %.0f), %lld failed; latency p50 %.2f ms, p99 %.2f ms; "
      "start lag p99 %.1f ms\n",
      static_cast<double>(ok) / window_s,
      static_cast<double>(o.workers) * 1000.0 / static_cast<double>(o.interval_ms),
      static_cast<long long>(failed), out["latency"].value("p50_ms", 0.0),
      out["latency"].value("p99_ms", 0.0), lag.value("p99_ms", 0.0));
  std::printf("server CPU %.1f %% of one core (%.0f µs/beat; %s), client CPU %.1f %%\n",
              out["server_cpu_pct"].get<double>(), out["server_cpu_us_per_beat"].get<double>(),
              by_kind.dump().c_str(), out["client_cpu_pct"].get<double>());
  std::printf(
      "stale at the end (store's view): %lld of %lld live (oldest heartbeat %lld ms); "
      "workers with a gap ≥ 2 intervals: %lld; a registration with a slot: %.1f ms\n",
      static_cast<long long>(stale), static_cast<long long>(live),
      static_cast<long long>(oldest_ms), static_cast<long long>(gap_workers), slot_register_ms);
  std::printf("JSON %s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace tx::bench

int main(int argc, char** argv) { return tx::bench::Main(argc, argv); }
