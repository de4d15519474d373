// One fleet on one PostgreSQL store, end to end with the real tx binary: orchestrators in two
// directories stand in for two hosts (each its own .tx, its own pool), a worker whose wall clock
// is off by ten minutes (libfaketime), and connections the server drops mid-run. Each test has a
// database of its own on the server of the ctest fixture `pg` (tests/pg_test_db.h).

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http_client.h"
#include "pg_test_db.h"
#include "process_probes.h"
#include "run_process.h"
#include "webhook_receiver.h"

namespace tx::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using Args = std::vector<std::string>;

constexpr char kFakeTime[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

std::string Hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// A "host": a directory of its own, with its .tx (token, logs, pid file).
struct Host {
  TempDir dir;
  std::string local() const { return (dir.path() / ".tx").string(); }
  std::string id() const { return Hostname() + ":" + local(); }
  std::string str() const { return dir.str(); }
};

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(db_.ok()) << db_.error();
    url_ = db_.url();
    ASSERT_EQ(Tx(a_, {"init"}).exit_code, 0);
    ASSERT_EQ(Tx(b_, {"init"}).exit_code, 0);
  }

  void TearDown() override {
    for (Host* h : {&a_, &b_}) Tx(*h, {"orchestrator", "stop", "--force"});
    for (auto& o : procs_) {
      if (o->Wait(30s) < 0) {
        ADD_FAILURE() << "process " << o->pid() << " did not stop:\n" << o->Output();
        o->Signal(SIGKILL);
        o->Wait(10s);
      }
    }
    if (!WaitFor([&] { return Ours().empty(); }, 20s)) {
      std::string left;
      for (pid_t pid : Ours()) left += std::to_string(pid) + ": " + CommandLineOf(pid) + "\n";
      ADD_FAILURE() << "processes left behind by the test:\n" << left;
    }
    for (pid_t pid : Ours()) ::kill(pid, SIGKILL);
  }

  RunResult Tx(const Host& h, Args args, Env env = {}) {
    args.insert(args.begin(), {"--db", url_});
    return RunTx(args, env, h.str());
  }
  json TxJson(const Host& h, Args args) {
    args.insert(args.begin(), "--json");
    RunResult r = Tx(h, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json() : j;
  }
  // The same for polling: a failed command (not there yet) is an empty object, not a failure.
  json Poll(const Host& h, Args args) {
    args.insert(args.begin(), "--json");
    RunResult r = Tx(h, args);
    json j = r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json::object();
    return j.is_discarded() ? json::object() : j;
  }

  // Every running process of the test: its store in the environment (a pool's worker, an agent).
  std::vector<pid_t> Ours() {
    std::vector<pid_t> out;
    for (pid_t pid : AllPids()) {
      if (pid == ::getpid() || !Running(pid)) continue;
      for (const auto& e : EnvironOf(pid)) {
        if (e == "TX_POOL_DB=" + url_ || e == "TX_DB=" + url_) {
          out.push_back(pid);
          break;
        }
      }
    }
    return out;
  }

  BackgroundProcess& Start(const Host& h, Args args, Env env = {}) {
    args.insert(args.begin(), {"--db", url_});
    std::string log = (h.dir.path() / ("proc-" + std::to_string(procs_.size()) + ".out")).string();
    procs_.push_back(std::make_unique<BackgroundProcess>(TX_BINARY, args, env, h.str(), log));
    return *procs_.back();
  }

  // An orchestrator of host `h` with short intervals, once its row says it runs.
  // A flag in `extra` replaces its default.
  BackgroundProcess& StartOrchestrator(const Host& h, Args extra) {
    Args args = {"orchestrator", "start"};
    for (auto [flag, value] :
         {std::pair{"--heartbeat-interval", "500ms"}, std::pair{"--poll-interval", "1s"},
          std::pair{"--reconcile-interval", "3s"}, std::pair{"--shutdown-timeout", "20s"}}) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
        args.insert(args.end(), {flag, value});
      }
    }
    args.insert(args.end(), extra.begin(), extra.end());
    BackgroundProcess& o = Start(h, args);
    EXPECT_TRUE(WaitFor([&] {
      if (o.Wait(0ms) >= 0) return true;
      json s = Status(h);
      return s.value("status", "") == "running" && s.value("pid", 0) == o.pid();
    })) << o.Output();
    EXPECT_LT(o.Wait(0ms), 0) << "the orchestrator exited at start:\n" << o.Output();
    return o;
  }

  json Status(const Host& h, const std::string& id = "") {
    Args args = {"--json", "orchestrator", "status"};
    if (!id.empty()) args.insert(args.end(), {"--id", id});
    args.insert(args.begin(), {"--db", url_});
    RunResult r = RunTx(args, {}, h.str());
    json j = json::parse(r.out, nullptr, false);
    return r.exit_code == 0 && !j.is_discarded() ? j : json::object();
  }

  std::vector<std::string> AddTasks(const Host& h, int n, const std::string& script) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + string here.
      std::string title = "t";
      title += std::to_string(i);
      std::string command = "sh -c '";
      command += script;
      command += "'";
      json t = TxJson(h, {"task", "add", title, "--command", command, "--max-attempts", "10"});
      ids.push_back(t.value("id", ""));
    }
    return ids;
  }

  json Events(const Host& h, const std::string& type) {
    json out = json::array();
    for (const auto& e : TxJson(h, {"events"})) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }

  // Every task is done, with exactly one completed claim, and exactly one task.done event each.
  void ExpectEachDoneExactlyOnce(const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      json t = TxJson(a_, {"task", "show", id});
      EXPECT_EQ(t.value("status", ""), "done") << t.dump(2);
      int completed = 0;
      for (const auto& at : t.value("attempts", json::array())) {
        if (at.value("status", "") == "completed") ++completed;
      }
      // (A failed attempt is "completed" too: its end_reason says which.)
      EXPECT_EQ(completed, 1) << id << " has " << completed << " completed claims:\n"
                              << t.dump(2) << "\nkilled as host A:\n"
                              << killed_ << "what the orchestrators said of stale workers:\n"
                              << SaidOfStaleWorkers();
    }
    std::map<std::string, int> done;
    for (const auto& e : Events(a_, "task.done")) ++done[e["task_id"].get<std::string>()];
    for (const auto& id : ids) EXPECT_EQ(done[id], 1) << id;
  }

  // Each orchestrator's lines on stale workers: one that kills the agents of a worker it judges
  // stale says so (a late heartbeat of a live worker would show here).
  std::string SaidOfStaleWorkers() {
    std::string out;
    for (const auto& p : procs_) {
      std::istringstream lines(p->Output());
      for (std::string line; std::getline(lines, line);) {
        if (line.find("stale") != std::string::npos) {
          out += std::to_string(p->pid()) + ": " + line + "\n";
        }
      }
    }
    return out;
  }

  PgTestDb db_;
  std::string killed_;  // the processes the power cut killed, with their TX_DIR and TX_WORKER_ID
  std::string url_;
  Host a_, b_;
  std::vector<std::unique_ptr<BackgroundProcess>> procs_;
};

TEST_F(FleetTest, InitAppliesTheSchemaOnceAndEachHostKeepsItsOwnToken) {
  RunResult again = Tx(a_, {"init"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("already initialised"), std::string::npos) << again.out;
  EXPECT_TRUE(fs::exists(a_.dir.path() / ".tx" / "token"));
  EXPECT_TRUE(fs::exists(b_.dir.path() / ".tx" / "token"));
  json added = TxJson(a_, {"task", "add", "seen from both hosts"});
  json shown = TxJson(b_, {"task", "show", added.value("id", "")});
  EXPECT_EQ(shown.value("title", ""), "seen from both hosts");
  RunResult bad = RunTx({"--db", url_ + "_missing", "task", "list"}, {}, a_.str());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot connect to PostgreSQL"), std::string::npos) << bad.err;
}

// Two orchestrators with their own pools on one store: one leads the reconciler. The leader's
// host dies (the orchestrator, its workers and their agents SIGKILLed at once, as a power cut
// would): the other orchestrator takes the lead within a reconcile interval, the dead host's
// workers are declared dead by their missed heartbeats, and their tasks run again elsewhere;
// nothing is lost or completed twice.
TEST_F(FleetTest, WhenTheLeadersHostDiesTheOtherOrchestratorTakesOverAndRecoversItsTasks) {
  StartOrchestrator(a_, {"--workers", "2"});
  ASSERT_TRUE(WaitFor([&] { return Status(a_).value("leads", false); }, 10s)) << Status(a_).dump(2);
  BackgroundProcess& leader = *procs_.back();
  StartOrchestrator(b_, {"--workers", "2"});
  json b_status = Status(b_);
  EXPECT_FALSE(b_status.value("leads", true)) << b_status.dump(2);
  EXPECT_EQ(b_status.value("leader", ""), a_.id());
  EXPECT_EQ(b_status.value("orchestrators", json::array()).size(), 2u) << b_status.dump(2);

  // All four workers registered and waiting before the tasks come, so that A's two get theirs
  // together even when a loaded machine starts one pool's workers seconds after the other's.
  ASSERT_TRUE(WaitFor(
      [&] {
        int idle = 0;
        for (const auto& w : Poll(a_, {"worker", "list"})) {
          idle += w.value("status", "") == "idle" ? 1 : 0;
        }
        return idle == 4;
      },
      60s))
      << Poll(a_, {"worker", "list"}).dump(2);
  // Tasks long enough that a loaded machine, whose every `tx worker list` may take a second or
  // two, still sees A's two workers busy at once before the queue drains.
  std::vector<std::string> ids = AddTasks(a_, 12, "sleep 4");
  // Both pools busy; A's two workers hold tasks.
  std::vector<std::string> a_workers;
  ASSERT_TRUE(WaitFor(
      [&] {
        a_workers.clear();
        for (const auto& w : Poll(a_, {"worker", "list"})) {
          if (w.value("pool", "") == a_.id() && w.value("status", "") == "busy") {
            a_workers.push_back(w["id"]);
          }
        }
        return a_workers.size() == 2u;
      },
      40s));

  // The power cut: freeze the whole host first (so that nothing of it reacts), then kill it.
  auto host_a = [&] {
    std::set<pid_t> pids = {leader.pid()};
    for (pid_t p : ProcessesWith("TX_DIR=" + a_.local())) pids.insert(p);
    for (const auto& w : a_workers) {
      for (pid_t p : ProcessesWith("TX_WORKER_ID=" + w)) pids.insert(p);
    }
    return pids;
  };
  for (int round = 0; round < 3; ++round) {
    for (pid_t p : host_a()) ::kill(p, SIGSTOP);
  }
  std::set<pid_t> frozen = host_a();
  for (pid_t p : frozen) {
    // What was killed, and why it counted as host A's: said if a task of B's was hit.
    std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    killed_ += std::to_string(p) + ": " + cmd;
    for (const auto& e : EnvironOf(p)) {
      if (e.rfind("TX_DIR=", 0) == 0 || e.rfind("TX_WORKER_ID=", 0) == 0) killed_ += " " + e;
    }
    killed_ += "\n";
    ::kill(p, SIGKILL);
  }
  auto killed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(leader.Wait(10s), 128 + SIGKILL);

  ASSERT_TRUE(WaitFor([&] { return Status(b_).value("leads", false); }, 10s)) << Status(b_).dump(2);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed_at);
  EXPECT_LT(took, 3s) << "the standby took over " << took.count()
                      << " ms after the leader died (reconcile interval 3 s)";
  json leads = Events(b_, "orchestrator.leader");
  ASSERT_FALSE(leads.empty());
  EXPECT_EQ(leads.back()["data"]["id"], b_.id());
  EXPECT_EQ(leads.back()["data"]["previous"], a_.id());

  // A's workers are judged by their heartbeats, their tasks requeued and run by B's pool.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : ids) {
          if (Poll(b_, {"task", "show", id}).value("status", "") != "done") return false;
        }
        return true;
      },
      120s));
  for (const auto& w : a_workers) {
    json shown = TxJson(b_, {"worker", "status", w});
    EXPECT_EQ(shown.value("status", ""), "dead") << shown.dump(2);
  }
  int by_heartbeat = 0;
  for (const auto& e : Events(b_, "worker.dead")) {
    std::string reason = e["data"].value("reason", "");
    bool ours = std::find(a_workers.begin(), a_workers.end(), e["worker_id"]) != a_workers.end();
    if (ours && reason == "stale-heartbeat") ++by_heartbeat;
  }
  EXPECT_EQ(by_heartbeat, 2) << "A's workers were not declared dead by their heartbeats";
  ExpectEachDoneExactlyOnce(ids);
  for (pid_t p : frozen) EXPECT_FALSE(Running(p)) << CommandLineOf(p);
}

// Issue 25: a worker whose store URL carries a password gives its agent neither the URL nor the
// password (the server trusts the loopback, so the password is accepted and ignored); the agent
// still reports through the worker.
TEST_F(FleetTest, APostgresPasswordNeverReachesTheAgent_Issue25) {
  const std::string scheme = "postgresql://tx@";
  ASSERT_EQ(url_.rfind(scheme, 0), 0u) << url_;
  std::string with_password = "postgresql://tx:s3cret-pw@" + url_.substr(scheme.size());
  std::string id =
      AddTasks(a_, 1, "env > agent-env.txt; tx task done --result reported; echo done=$?")[0];
  BackgroundProcess worker(TX_BINARY,
                           {"--db", with_password, "worker", "start", "--heartbeat-interval",
                            "300ms", "--poll-interval", "1s"},
                           {}, a_.str(), (a_.dir.path() / "worker.log").string());
  ASSERT_TRUE(WaitFor(
      [&] {
        return Poll(a_, {"task", "show", id}).value("status", "") == "done";
      },
      60s))
      << worker.Output();
  EXPECT_EQ(Poll(a_, {"task", "show", id}).value("result", ""), "reported");
  std::string env = ReadFile((a_.dir.path() / "agent-env.txt").string());
  ASSERT_NE(env.find("TX_AGENT_SOCKET="), std::string::npos) << env;
  EXPECT_EQ(env.find("s3cret-pw"), std::string::npos) << env;
  EXPECT_EQ(env.find("postgresql://"), std::string::npos) << env;
  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(30s), 0) << worker.Output();
}

// A leader that stops hands the lead over at once, not after its own workers have drained.
TEST_F(FleetTest, AStoppingLeaderHandsOverTheLeadBeforeItsWorkersDrain) {
  StartOrchestrator(a_, {"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return Status(a_).value("leads", false); }, 10s));
  BackgroundProcess& a = *procs_.back();
  StartOrchestrator(b_, {"--workers", "0"});
  std::string long_task = AddTasks(a_, 1, "sleep 8")[0];
  ASSERT_TRUE(WaitFor([&] {
    return Poll(a_, {"task", "show", long_task}).value("status", "") == "running";
  }));
  ASSERT_EQ(Tx(a_, {"orchestrator", "stop", "--no-wait"}).exit_code, 0);
  auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return Status(b_).value("leads", false); }, 10s)) << Status(b_).dump(2);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 4s);
  EXPECT_EQ(Status(a_).value("status", ""), "stopping") << "A has not drained yet";
  EXPECT_EQ(a.Wait(30s), 0) << a.Output();
  EXPECT_EQ(Poll(b_, {"task", "show", long_task}).value("status", ""), "done")
      << "the running task finished, the drain was graceful";
}

// Notifications on a shared store (issue 22): every orchestrator has the sink, the one that leads
// alone sends, once; once it has stopped, the next leader sends what follows.
TEST_F(FleetTest, OnlyTheLeadingOrchestratorSendsNotificationsAndTheNextLeaderGoesOn) {
  Receiver receiver;
  receiver.Start();
  for (Host* h : {&a_, &b_}) {
    std::ofstream(h->dir.path() / ".tx" / "config.toml")
        << "[[notify]]\nurl = \"" << receiver.Url() << "\"\nevents = [\"task.failed\"]\n";
  }
  StartOrchestrator(a_, {"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return Status(a_).value("leads", false); }, 10s));
  BackgroundProcess& a = *procs_.back();
  StartOrchestrator(b_, {"--workers", "1"});
  auto fail = [&](const std::string& title) {
    return TxJson(a_, {"task", "add", title, "--command", "sh -c 'exit 3'", "--max-attempts", "1"})
        .value("id", "");
  };
  std::string first = fail("first");
  ASSERT_TRUE(WaitFor([&] { return !receiver.Got().empty(); }, 60s)) << a.Output();
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(receiver.Got().size(), 1u) << "sent by more than one orchestrator";
  ASSERT_EQ(Tx(a_, {"orchestrator", "stop"}).exit_code, 0);
  EXPECT_EQ(a.Wait(30s), 0) << a.Output();
  ASSERT_TRUE(WaitFor([&] { return Status(b_).value("leads", false); }, 10s)) << Status(b_).dump(2);
  std::string second = fail("second");
  ASSERT_TRUE(WaitFor([&] { return receiver.Got().size() >= 2; }, 60s));
  std::this_thread::sleep_for(2s);
  std::vector<Request> got = receiver.Got();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(json::parse(got[0].body)["task"]["id"], first);
  EXPECT_EQ(json::parse(got[1].body)["task"]["id"], second);
  EXPECT_NE(got[0].Header("X-Tx-Delivery"), got[1].Header("X-Tx-Delivery"));
}

// The HTTP API on a PostgreSQL store, and a remote worker on the other host that reaches the fleet
// over HTTP alone (its heartbeats recorded in batches): tasks added over HTTP are run and read
// back, the orchestrator's status shows its lead, the metrics count it.
TEST_F(FleetTest, TheHttpApiAndARemoteWorkerWorkOnPostgres) {
  std::ofstream(a_.dir.path() / ".tx" / "tokens") << "worker w-secret\n";
  std::string admin = ReadFile((a_.dir.path() / ".tx" / "token").string());
  while (!admin.empty() && admin.back() == '\n') admin.pop_back();
  StartOrchestrator(a_, {"--workers", "0", "--http", "127.0.0.1:0", "--reconcile-interval", "1s"});
  std::string url = Status(a_)["config"].value("http", "");
  ASSERT_FALSE(url.empty()) << Status(a_).dump(2);
  ApiClient api(std::stoi(url.substr(url.rfind(':') + 1)), admin);
  ASSERT_EQ(api.Get("/healthz").status, 200);

  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    HttpReply added = api.Post("/api/tasks", {{"title", "over http " + std::to_string(i)},
                                              {"command", "sh -c 'echo hi'"}});
    ASSERT_EQ(added.status, 201) << added.body.dump();
    ids.push_back(added.body.value("id", ""));
  }
  BackgroundProcess& remote = Start(b_, {"worker", "start", "--server", url, "--token", "w-secret",
                                         "--name", "far", "--heartbeat-interval", "500ms"});
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& id : ids) {
      if (api.Get("/api/tasks/" + id).body.value("status", "") != "done") return false;
    }
    return true;
  })) << remote.Output();
  json orchestrator = api.Get("/api/orchestrator").body;
  EXPECT_TRUE(orchestrator.value("leads", false)) << orchestrator.dump(2);
  EXPECT_EQ(orchestrator.value("id", ""), a_.id());
  // Beats keep coming, a batch at a time: the worker stays fresh for a few of its intervals.
  std::this_thread::sleep_for(2s);
  json far = api.Get("/api/workers/far").body;
  EXPECT_EQ(far.value("status", ""), "idle") << far.dump(2);
  EXPECT_FALSE(far.value("stale", true)) << far.dump(2);
  EXPECT_LT(far.value("heartbeat_age_ms", 99'999), 1'500) << far.dump(2);
  httplib::Result metrics = api.Raw().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tx_orchestrator_up 1"), std::string::npos) << metrics->body;
  remote.Signal(SIGTERM);
  EXPECT_EQ(remote.Wait(20s), 0) << remote.Output();
}

// A worker whose wall clock is ten minutes slow (or fast) is judged by the server's clock: it
// renews a short lease many times over a long task and is never thought dead; killed, it is
// declared dead within two heartbeat intervals, not ten minutes later.
TEST_F(FleetTest, AWorkerWithASkewedClockIsJudgedByTheServersClock) {
  ASSERT_TRUE(fs::exists(kFakeTime)) << kFakeTime << " missing: install Debian's faketime";
  StartOrchestrator(a_, {"--workers", "0", "--reconcile-interval", "1s"});
  std::string long_task = AddTasks(a_, 1, "sleep 6")[0];
  auto skewed = [&](const std::string& offset, const std::string& name) -> BackgroundProcess& {
    Env env = {{"LD_PRELOAD", kFakeTime},
               {"FAKETIME", offset},
               {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
               {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=1:abort_on_error=1"}};
    return Start(a_,
                 {"worker", "start", "--name", name, "--heartbeat-interval", "500ms", "--lease",
                  "2s", "--poll-interval", "1s"},
                 env);
  };
  BackgroundProcess& slow = skewed("-10m", "slow-clock");
  // Its clock is off indeed: the date it sees is not the server's.
  RunResult date =
      RunProcess("/bin/date", {"+%s"}, {{"LD_PRELOAD", kFakeTime}, {"FAKETIME", "-10m"}}, a_.str());
  EXPECT_LT(std::stoll(date.out), time(nullptr) - 500) << "faketime did not skew the clock";

  ASSERT_TRUE(WaitFor(
      [&] {
        return Poll(a_, {"task", "show", long_task}).value("status", "") == "done";
      },
      30s))
      << slow.Output();
  json t = TxJson(a_, {"task", "show", long_task});
  ASSERT_EQ(t["attempts"].size(), 1u) << t.dump(2);
  EXPECT_GE(t["attempts"][0].value("renewed_count", 0), 2) << "a 2 s lease over a 6 s task";
  EXPECT_TRUE(Events(a_, "lease.expired").empty());
  EXPECT_TRUE(Events(a_, "worker.dead").empty()) << Events(a_, "worker.dead").dump(2);
  json w = TxJson(a_, {"worker", "status", "slow-clock"});
  EXPECT_EQ(w.value("status", ""), "idle") << w.dump(2);
  EXPECT_FALSE(w.value("stale", true));

  // Ten minutes fast, then killed: dead by its missed heartbeats within seconds.
  BackgroundProcess& fast = skewed("+10m", "fast-clock");
  ASSERT_TRUE(WaitFor(
      [&] {
        return Poll(a_, {"worker", "status", "fast-clock"}).value("status", "") == "idle";
      },
      20s))
      << fast.Output();
  fast.Signal(SIGKILL);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Poll(a_, {"worker", "status", "fast-clock"}).value("status", "") == "dead";
      },
      20s));
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, 5s);
  slow.Signal(SIGTERM);
  EXPECT_EQ(slow.Wait(20s), 0) << slow.Output();
  fast.Wait(5s);
}

// The server ends every connection of the store, three times, while a pool drains tasks: the
// workers reconnect and carry on; no claim is left orphaned past its lease; every task is done
// exactly once.
TEST_F(FleetTest, DroppedConnectionsMidRunAreReconnectedAndNothingIsLostOrDoneTwice) {
  StartOrchestrator(a_, {"--workers", "3", "--lease", "5s"});
  std::vector<std::string> ids = AddTasks(a_, 30, "sleep 0.3");
  int terminated = 0;
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(1500ms);
    int n = db_.TerminateBackends();
    ASSERT_GE(n, 0) << db_.error();
    terminated += n;
  }
  EXPECT_GT(terminated, 3) << "the pool's connections were not there to terminate";
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : ids) {
          if (Poll(a_, {"task", "show", id}).value("status", "") != "done") return false;
        }
        return true;
      },
      90s))
      << procs_.back()->Output();
  ExpectEachDoneExactlyOnce(ids);
  // A claim whose holder was cut off mid-report is the only kind allowed to end otherwise, and
  // then only by its lease (5 s), never left active.
  for (const auto& id : ids) {
    json shown = TxJson(a_, {"task", "show", id});
    for (const auto& at : shown["attempts"]) {
      EXPECT_NE(at.value("status", ""), "active") << id;
    }
  }
  json status = Status(a_);
  EXPECT_EQ(status.value("status", ""), "running") << status.dump(2);
  EXPECT_TRUE(WaitFor([&] { return Status(a_).value("leads", false); }, 10s))
      << "the orchestrator did not take the lead back after its connection was dropped";
  EXPECT_EQ(status["slots"].size(), 3u);
}

// A SQLite store outgrown: tx migrate copies it into an empty PostgreSQL database as it is —
// tasks, dependencies, attempts with their tokens, events with their numbers — and the fleet
// carries on there, new tokens after the copied ones. A second copy into the same database, or
// a copy while an orchestrator runs on the source, is refused and writes nothing.
TEST_F(FleetTest, MigrateCopiesASqliteStoreIntoPostgresAsItIs) {
  TempDir old;
  auto sqlite = [&](Args args) {
    RunResult r = RunTx(args, {}, old.str());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  ASSERT_EQ(sqlite({"init"}).exit_code, 0);
  json first = json::parse(sqlite({"--json", "task", "add", "first", "--priority", "5"}).out);
  json second = json::parse(
      sqlite({"--json", "task", "add", "second", "--after", first["id"].get<std::string>()}).out);
  json third = json::parse(sqlite({"--json", "task", "add", "third"}).out);
  json claimed = json::parse(sqlite({"--json", "claim", "--next", "--worker", "alice"}).out);
  ASSERT_EQ(claimed["task_id"], first["id"]);
  std::int64_t token = claimed["token"];
  sqlite({"task", "done", first["id"], "--token", std::to_string(token), "--result", "ok"});
  sqlite({"--json", "claim", "--next", "--worker", "bob"});  // second is running now
  // A notification waiting to be sent goes along (issue 22).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((old.str() + "/.tx/tx.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO notify_deliveries (id, sink, event_id, event_type, body, "
                         "status, attempts, created_at, next_at) VALUES ('dlv-0123456789abcdef', "
                         "'http://127.0.0.1:9/hook', 1, 'task.failed', '{}', 'pending', 2, 1, 2)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  json deliveries_before = json::parse(sqlite({"--json", "notify", "list"}).out);
  RunResult shown_before = sqlite({"--json", "task", "list"});
  json events_before = json::parse(sqlite({"--json", "events"}).out);

  // A fresh directory on PostgreSQL: its own .tx, no tasks.
  RunResult r =
      RunTx({"--db", old.str() + "/.tx/tx.db", "--json", "migrate", "--to", url_}, {}, old.str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["tasks"], 3);
  EXPECT_EQ(report["claims"], 2);
  EXPECT_EQ(report["dependencies"], 1);
  EXPECT_EQ(report["events"], events_before.size());
  EXPECT_EQ(report["deliveries"], 1);
  EXPECT_EQ(TxJson(a_, {"notify", "list"}), deliveries_before);

  json tasks_after = TxJson(a_, {"task", "list"});
  EXPECT_EQ(tasks_after, json::parse(shown_before.out)) << "task list differs after the copy";
  EXPECT_EQ(TxJson(a_, {"events"}), events_before) << "the event log differs after the copy";
  json shown = TxJson(a_, {"task", "show", first["id"]});
  EXPECT_EQ(shown["attempts"][0]["token"], token);
  EXPECT_EQ(shown["result"], "ok");
  // The fleet carries on: the next claim's token comes after every copied one.
  json next = TxJson(a_, {"claim", "--next", "--worker", "carol"});
  EXPECT_EQ(next["task_id"], third["id"]);
  EXPECT_GT(next["token"].get<std::int64_t>(), token + 1);
  json added = TxJson(a_, {"task", "add", "after the move"});
  EXPECT_GT(json(TxJson(a_, {"events"})).back()["id"].get<std::int64_t>(),
            events_before.back()["id"].get<std::int64_t>());
  (void)added;

  // Again into the same database: refused, nothing written.
  std::size_t tasks_now = TxJson(a_, {"task", "list"}).size();
  RunResult again =
      RunTx({"--db", old.str() + "/.tx/tx.db", "migrate", "--to", url_}, {}, old.str());
  EXPECT_EQ(again.exit_code, 4) << again.err;
  EXPECT_NE(again.err.find("migrate into an empty database"), std::string::npos) << again.err;
  EXPECT_EQ(TxJson(a_, {"task", "list"}).size(), tasks_now);
  // Into a URL that is not PostgreSQL: a usage error.
  RunResult bad = RunTx({"migrate", "--to", "/tmp/x.db"}, {}, old.str());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;

  // While an orchestrator runs on the source: refused, the empty destination left empty.
  PgTestDb empty;
  ASSERT_TRUE(empty.ok()) << empty.error();
  BackgroundProcess orchestrator(TX_BINARY, {"orchestrator", "start", "--workers", "0"}, {},
                                 old.str(), old.str() + "/orchestrator.out");
  ASSERT_TRUE(WaitFor([&] {
    RunResult st = RunTx({"--json", "orchestrator", "status"}, {}, old.str());
    return st.exit_code == 0 && json::parse(st.out).value("status", "") == "running";
  }));
  RunResult busy = RunTx({"migrate", "--to", empty.url()}, {}, old.str());
  EXPECT_EQ(busy.exit_code, 4) << busy.err;
  EXPECT_NE(busy.err.find("an orchestrator runs on"), std::string::npos) << busy.err;
  EXPECT_NE(RunTx({"--db", empty.url(), "task", "list"}, {}, old.str()).exit_code, 0)
      << "a refused migration created the destination's schema";
  EXPECT_EQ(RunTx({"orchestrator", "stop"}, {}, old.str()).exit_code, 0);
  EXPECT_EQ(orchestrator.Wait(30s), 0) << orchestrator.Output();
}

}  // namespace
}  // namespace tx::testing
