// End-to-end tests of `tx orchestrator` (issue 4): the real binary as orchestrator and workers,
// real agents (sh -c scripts as task commands), real signals (SIGKILL of workers and of the
// orchestrator itself), the real clock with short intervals and generous polling bounds. Each
// test runs in a fresh directory with its own store, and leaves no process behind.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tx_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using tx::testing::BackgroundProcess;
using tx::testing::Env;
using tx::testing::RunResult;
using tx::testing::RunTx;
using tx::testing::TempDir;
using Args = std::vector<std::string>;

// Running and not a zombie.
bool Running(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

bool EnvironHas(pid_t pid, const std::string& entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t pos = 0;
  while (pos < env.size()) {
    std::size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (env.compare(pos, end - pos, entry) == 0) return true;
    pos = end + 1;
  }
  return false;
}

class PoolTest : public ::testing::Test {
 public:
  RunResult Tx(const Args& args) { return RunTx(args, {}, dir_.str()); }

 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    db_ = fs::canonical(dir_.path() / ".tx" / "tx.db").string();
  }

  void TearDown() override {
    Tx({"orchestrator", "stop", "--force"});
    for (auto& o : orchestrators_) o->Wait(30s);
    // Safety net: nothing of this test may outlive it (its workers carry TX_POOL_DB, its agents
    // TX_DB with this store).
    WaitFor([&] { return OurProcesses().empty(); }, 10s);
    for (pid_t pid : OurProcesses()) ::kill(pid, SIGKILL);
  }

  std::vector<pid_t> OurProcesses() {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      pid_t pid = std::stoi(name);
      if (!Running(pid)) continue;
      if (EnvironHas(pid, "TX_POOL_DB=" + db_) || EnvironHas(pid, "TX_DB=" + db_)) {
        out.push_back(pid);
      }
    }
    return out;
  }

  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  // `tx orchestrator start` in the foreground (a background process of the test) with short
  // intervals; waits until it runs.
  BackgroundProcess& StartOrchestrator(Args extra) {
    Args args = {"orchestrator", "start", "--heartbeat-interval", "500ms", "--poll-interval", "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    orchestrators_.push_back(std::make_unique<BackgroundProcess>(
        TX_BINARY, args, Env{}, dir_.str(),
        Path("orchestrator-" + std::to_string(orchestrators_.size()) + ".out")));
    EXPECT_TRUE(WaitFor([&] { return Status()["status"] == "running"; })) << Log();
    return *orchestrators_.back();
  }

  std::string Log() {
    std::ifstream in(Path("orchestrator-" + std::to_string(orchestrators_.size() - 1) + ".out"));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  json Status() {
    RunResult r = Tx({"--json", "orchestrator", "status"});
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }

  json SlotOf(const std::string& slot) {
    for (const auto& s : Status().value("slots", json::array())) {
      if (s["slot"] == slot) return s;
    }
    return json::object();
  }

  std::string AddShellTask(const std::string& script, Args extra = {}) {
    Args args = {"--json", "task", "add", "t", "--command", "sh -c '" + script + "'"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  }

  json Show(const std::string& id) { return json::parse(Tx({"--json", "task", "show", id}).out); }
  std::string TaskStatus(const std::string& id) { return Show(id)["status"]; }

  json Tasks() { return json::parse(Tx({"--json", "task", "list"}).out); }
  int CountTasks(const std::string& status) {
    int n = 0;
    for (const auto& t : Tasks()) n += t["status"] == status;
    return n;
  }

  json LiveWorkers() {
    json out = json::array();
    for (const auto& w : json::parse(Tx({"--json", "worker", "list"}).out)) {
      std::string s = w["status"];
      if (s != "stopped" && s != "dead") out.push_back(w);
    }
    return out;
  }

  json Events(const std::string& type) {
    json out = json::array();
    for (const auto& e : json::parse(Tx({"--json", "events"}).out)) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }

  pid_t ReadPid(const std::string& file) {
    pid_t pid = 0;
    WaitFor([&] {
      std::ifstream in(Path(file));
      std::string line;
      if (!std::getline(in, line) || line.empty()) return false;
      pid = std::stoi(line);
      return true;
    });
    return pid;
  }

  static bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds limit = 60s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return pred();
  }

  TempDir dir_;
  std::string db_;
  std::vector<std::unique_ptr<BackgroundProcess>> orchestrators_;
};

TEST_F(PoolTest, AWorkerKilledMidTaskIsReplacedAndItsTaskRunsAgainToCompletion) {
  // The first attempt records its agent's pid and hangs; the second finishes.
  std::string id = AddShellTask(
      "if [ \"$TX_ATTEMPT\" = 1 ]; then echo $$ > agent.pid; sleep 60; fi; echo second");
  StartOrchestrator({"--workers", "2"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  json busy;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& w : LiveWorkers()) {
      if (w["status"] == "busy") busy = w;
    }
    return !busy.empty();
  }));
  ::kill(busy["pid"].get<pid_t>(), SIGKILL);

  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
  json task = Show(id);
  ASSERT_EQ(task["attempts"].size(), 2u);
  EXPECT_EQ(task["attempts"][0]["end_reason"], "worker_died");
  EXPECT_EQ(task["attempts"][1]["end_reason"], "exited");
  EXPECT_FALSE(Running(agent)) << "the dead worker's agent was killed";

  json crashed = Events("worker.crashed");
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(crashed[0]["worker_id"], busy["id"]);
  EXPECT_EQ(crashed[0]["data"]["class"], "killed");
  EXPECT_EQ(crashed[0]["data"]["exit_code"], 137);
  EXPECT_EQ(crashed[0]["data"]["requeued_task"], id);
  // The slot was restarted with a new worker.
  std::string slot = busy["slot"];
  ASSERT_TRUE(WaitFor([&] {
    json s = SlotOf(slot);
    return s.value("state", "") == "running" && s.value("restarts", 0) == 1 &&
           s.value("worker_id", "") != busy["id"] && s.value("worker_status", "") == "idle";
  })) << Status().dump(2);
}

TEST_F(PoolTest, KillingTheOrchestratorLetsItsWorkersDrainAndLeavesNoAgentBehind) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(AddShellTask("echo $$ > agent-" + std::to_string(i) + ".pid; sleep 2"));
  }
  for (int i = 0; i < 3; ++i) ids.push_back(AddShellTask("sleep 0.2"));
  BackgroundProcess& first = StartOrchestrator({"--workers", "3"});
  std::vector<pid_t> agents;
  for (int i = 0; i < 3; ++i) agents.push_back(ReadPid("agent-" + std::to_string(i) + ".pid"));
  std::vector<pid_t> workers;
  for (const auto& w : LiveWorkers()) workers.push_back(w["pid"]);
  ASSERT_EQ(workers.size(), 3u);

  first.Signal(SIGKILL);
  first.Wait(10s);
  // Parent-death: the workers drain — their running tasks finish — and exit by themselves.
  ASSERT_TRUE(WaitFor([&] {
    for (pid_t p : workers) {
      if (Running(p)) return false;
    }
    for (pid_t p : agents) {
      if (Running(p)) return false;
    }
    return true;
  })) << "workers or agents still running after the orchestrator died";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(TaskStatus(ids[i]), "done");
  EXPECT_EQ(CountTasks("running"), 0);
  EXPECT_TRUE(LiveWorkers().empty()) << LiveWorkers().dump();
  EXPECT_TRUE(OurProcesses().empty());

  // A new orchestrator takes over the stale row and the lock, and runs the rest.
  StartOrchestrator({"--workers", "2"});
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 6; })) << Log();
  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(LiveWorkers().empty());
}

TEST_F(PoolTest, ARestartedOrchestratorMarksDeadTheWorkersWhoseProcessesAreGone) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 60", {"--max-attempts", "5"});
  BackgroundProcess& first = StartOrchestrator({"--workers", "1"});
  pid_t agent = ReadPid("agent.pid");
  json w = LiveWorkers()[0];
  // The whole pool dies at once (as with the OOM killer taking the process tree): orchestrator
  // first, then its worker, before the worker could drain.
  first.Signal(SIGKILL);
  ::kill(w["pid"].get<pid_t>(), SIGKILL);
  first.Wait(10s);
  ASSERT_TRUE(WaitFor([&] { return !Running(w["pid"].get<pid_t>()) && !Running(agent); }));
  EXPECT_EQ(TaskStatus(id), "running") << "nobody has noticed yet";

  StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() == 2u; })) << Log();
  json task = Show(id);
  EXPECT_EQ(task["attempts"][0]["end_reason"], "worker_died");
  json crashed = Events("worker.crashed");
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(crashed[0]["data"]["class"], "gone");
}

// A worker the orchestrator does not supervise (started by hand) is judged by its heartbeats;
// when it is declared dead, its agent's whole group goes with it — the parent-death signal
// reaches only the agent itself, not what the agent started — before the task runs again.
TEST_F(PoolTest, AHandStartedWorkerDeclaredDeadByHeartbeatLeavesNoAgentProcessBehind) {
  StartOrchestrator({"--workers", "0"});
  std::vector<std::unique_ptr<BackgroundProcess>> hand;
  for (const char* name : {"h1", "h2"}) {
    hand.push_back(std::make_unique<BackgroundProcess>(
        TX_BINARY, Args{"worker", "start", "--name", name, "--heartbeat-interval", "500ms"}, Env{},
        dir_.str(), Path(std::string(name) + ".log")));
  }
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 2u; }));
  std::string id =
      AddShellTask("sleep 60 & echo $! > child-$TX_ATTEMPT.pid; wait", {"--max-attempts", "5"});
  pid_t child = ReadPid("child-1.pid");
  ASSERT_TRUE(Running(child));
  json busy;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& w : LiveWorkers()) {
      if (w["status"] == "busy") busy = w;
    }
    return !busy.empty();
  }));
  ::kill(busy["pid"].get<pid_t>(), SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() == 2u; })) << Log();
  EXPECT_EQ(Show(id)["attempts"][0]["end_reason"], "worker_died");
  EXPECT_TRUE(WaitFor([&] { return !Running(child); }, 5s))
      << "the dead worker's agent's child still runs beside the retry";
  Tx({"task", "cancel", id});
}

TEST_F(PoolTest, SigtermUnderLoadFinishesEveryRunningTaskAndLeavesNothingRunning) {
  for (int i = 0; i < 9; ++i) AddShellTask("sleep 1");
  BackgroundProcess& o = StartOrchestrator({"--workers", "3"});
  ASSERT_TRUE(WaitFor([&] { return CountTasks("running") == 3; }));
  std::vector<std::string> running;
  for (const auto& t : Tasks()) {
    if (t["status"] == "running") running.push_back(t["id"]);
  }
  o.Signal(SIGTERM);
  EXPECT_EQ(o.Wait(60s), 0) << Log();
  for (const auto& id : running) {
    json t = Show(id);
    EXPECT_EQ(t["status"], "done") << t.dump(2);
    EXPECT_EQ(t["attempts"].size(), 1u);
  }
  EXPECT_EQ(CountTasks("running"), 0);
  EXPECT_TRUE(LiveWorkers().empty());
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(OurProcesses().empty());
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
}

TEST_F(PoolTest, ACrashLoopingSlotIsMarkedFailedAndTheOthersKeepWorking) {
  std::ofstream(Path(".tx/config.toml"))
      << "[orchestrator.slots.slot-2]\nagent = \"nosuchprofile\"\n";
  StartOrchestrator({"--workers", "3", "--max-restarts", "2", "--max-backoff", "200ms"});
  ASSERT_TRUE(WaitFor([&] { return SlotOf("slot-2").value("state", "") == "failed"; }))
      << Status().dump(2);
  json failed = SlotOf("slot-2");
  EXPECT_NE(failed["failure"].get<std::string>().find("3 exits"), std::string::npos) << failed;
  json events = Events("slot.failed");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["data"]["slot"], "slot-2");
  // The rest of the pool works on.
  for (int i = 0; i < 4; ++i) AddShellTask("true");
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 4; }));
  EXPECT_EQ(SlotOf("slot-1")["state"], "running");
  EXPECT_EQ(SlotOf("slot-3")["state"], "running");
}

TEST_F(PoolTest, ASecondOrchestratorOnTheSameStoreIsRefusedAndAStaleLockIsTakenOver) {
  BackgroundProcess& first = StartOrchestrator({"--workers", "1"});
  RunResult second = Tx({"orchestrator", "start", "--workers", "1"});
  EXPECT_EQ(second.exit_code, 4) << second.err;
  EXPECT_NE(second.err.find("already running"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("pid " + std::to_string(first.pid())), std::string::npos) << second.err;

  first.Signal(SIGKILL);
  first.Wait(10s);
  ASSERT_TRUE(WaitFor([&] { return OurProcesses().empty(); }));
  StartOrchestrator({"--workers", "1"});
  EXPECT_NE(Status()["pid"], first.pid());
}

TEST_F(PoolTest, ScaleGrowsAndShrinksThePoolAndPastMaxWorkersFailsWithNoCapacity) {
  StartOrchestrator({"--workers", "1", "--max-workers", "3", "--capacity-timeout", "1s"});
  RunResult up = Tx({"orchestrator", "scale", "3"});
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 3u; }));
  RunResult down = Tx({"orchestrator", "scale", "1"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u && Status()["slots"].size() == 1u; }))
      << Status().dump(2);
  EXPECT_EQ(LiveWorkers()[0]["slot"], "slot-1") << "the highest slots drain first";

  RunResult over = Tx({"orchestrator", "scale", "4"});
  EXPECT_EQ(over.exit_code, 5) << over.err;
  EXPECT_NE(over.err.find("no capacity"), std::string::npos) << over.err;
  EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 3u; }));
  EXPECT_EQ(Status()["desired"], 3);

  RunResult bad = Tx({"orchestrator", "scale", "many"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST_F(PoolTest, StopForceKillsAgentsAtOnceAndReleasesTheirTasksWithoutCountingThem) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 60");
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  pid_t agent = ReadPid("agent.pid");
  auto t0 = std::chrono::steady_clock::now();
  RunResult stop = Tx({"orchestrator", "stop", "--force"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  EXPECT_EQ(o.Wait(30s), 0);
  EXPECT_FALSE(Running(agent));
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready") << t.dump(2);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown");
  EXPECT_EQ(t["attempt"], 0) << "a release at shutdown does not count";
  EXPECT_TRUE(OurProcesses().empty());
}

TEST_F(PoolTest, DaemonModeReturnsOnceRunningAndStopsOnRequest) {
  RunResult r =
      Tx({"orchestrator", "start", "--daemon", "--workers", "1", "--heartbeat-interval", "500ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("orchestrator running"), std::string::npos) << r.out;
  json s = Status();
  EXPECT_EQ(s["status"], "running");
  pid_t daemon = s["pid"];
  EXPECT_TRUE(Running(daemon));
  EXPECT_TRUE(fs::exists(Path(".tx/orchestrator.log")));
  EXPECT_TRUE(fs::exists(Path(".tx/orchestrator.pid")));
  EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u; }));
  // Its errors reach the terminal: a second daemon is refused before detaching.
  RunResult again = Tx({"orchestrator", "start", "--daemon"});
  EXPECT_EQ(again.exit_code, 4) << again.err;

  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_TRUE(WaitFor([&] { return !Running(daemon); }));
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
  EXPECT_TRUE(LiveWorkers().empty());
  RunResult none = Tx({"orchestrator", "stop"});
  EXPECT_EQ(none.exit_code, 4) << "nothing to stop";
}

TEST_F(PoolTest, TheHeartbeatFileMirrorsThePoolInTheSourceNotesShape) {
  AddShellTask("sleep 2");
  StartOrchestrator({"--workers", "2", "--heartbeat-file", "hb.json"});
  json doc;
  ASSERT_TRUE(WaitFor([&] {
    std::ifstream in(Path("hb.json"));
    if (!in) return false;
    doc = json::parse(in, nullptr, false);
    return !doc.is_discarded() && doc.contains("workers") && doc["workers"].contains("slot-1") &&
           doc["workers"].contains("slot-2") &&
           (doc["workers"]["slot-1"]["status"] == "working" ||
            doc["workers"]["slot-2"]["status"] == "working");
  })) << doc.dump(2);
  for (const char* key : {"slot", "status", "task", "taskTitle", "sessionId", "lastUpdate",
                          "startedAt", "metadata"}) {
    EXPECT_TRUE(doc["workers"]["slot-1"].contains(key)) << key;
  }
  EXPECT_EQ(doc["workers"]["slot-1"]["metadata"]["restartCount"], 0);
}

TEST_F(PoolTest, BackpressureRefusesTaskAddPastMaxQueueDepthWhileTheOrchestratorRuns) {
  StartOrchestrator({"--workers", "0", "--max-queue-depth", "2"});
  AddShellTask("true");
  AddShellTask("true");
  RunResult full = Tx({"task", "add", "one too many"});
  EXPECT_EQ(full.exit_code, 5) << full.err;
  EXPECT_NE(full.err.find("queue full: 2 tasks ready of 2"), std::string::npos) << full.err;
  EXPECT_EQ(Tasks().size(), 2u) << "nothing written";
  ASSERT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  EXPECT_EQ(Tx({"task", "add", "fits now"}).exit_code, 0);
}

TEST_F(PoolTest, StatusShowsThePoolTheQueueAndTheLastReconcile) {
  AddShellTask("true");
  StartOrchestrator({"--workers", "2"});
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 1; }));
  json s = Status();
  EXPECT_EQ(s["status"], "running");
  EXPECT_EQ(s["desired"], 2);
  EXPECT_EQ(s["max_workers"], 10);
  ASSERT_EQ(s["slots"].size(), 2u);
  for (const auto& slot : s["slots"]) {
    for (const char* key : {"slot", "state", "pid", "restarts", "worker_id", "worker_status",
                            "task_id", "heartbeat_age_ms"}) {
      EXPECT_TRUE(slot.contains(key)) << key << " in " << slot;
    }
  }
  EXPECT_EQ(s["queue"]["done"], 1);
  EXPECT_GT(s["last_reconcile_at"].get<std::int64_t>(), 0);
  EXPECT_TRUE(s["last_report"].contains("dead_workers"));
  RunResult text = Tx({"orchestrator", "status"});
  EXPECT_NE(text.out.find("orchestrator: running"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("slot-2"), std::string::npos) << text.out;
}

TEST_F(PoolTest, BadFlagsAreRefusedWithOneLineAndStartNothing) {
  for (Args bad : {Args{"--workers", "abc"}, Args{"--reconcile-interval", "soon"},
                   Args{"--max-workers", "0"}, Args{"--config", "nope.toml"}}) {
    Args args = {"orchestrator", "start"};
    args.insert(args.end(), bad.begin(), bad.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::ofstream(Path(".tx/config.toml")) << "[orchestrator]\nworkerz = 2\n";
  RunResult r = Tx({"orchestrator", "start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("orchestrator.workerz"), std::string::npos) << r.err;
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(LiveWorkers().empty());
}

}  // namespace
