// End-to-end tests of `tx orchestrator` as a black box: the real binary as orchestrator, workers
// and CLI, real agents (sh -c scripts as task commands), real signals (SIGKILL of a worker, of
// the orchestrator itself, SIGTERM and SIGINT), the real SQLite file and the real clock with
// short intervals. Nothing here asserts a speed: every wait polls with a generous bound. Each test
// runs in a fresh directory with its own store and must leave no process behind; TearDown checks.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http_client.h"
#include "orchestrator_fixture.h"
#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;  // the fixture, and process_probes.h: ReadFile, Running, WaitFor …
using Args = std::vector<std::string>;

// ---------------------------------------------------------------------------------------------
// Crashes and recovery

TEST_F(OrchestratorTest, AWorkerKilledMidTaskIsReplacedAndItsTaskRunsAgain) {
  // The first attempt records its agent's pid and hangs (a child `sleep`, so the agent is a
  // process group); the second one finishes.
  std::string id = AddShellTask(
      "if [ \"$TX_ATTEMPT\" = 1 ]; then echo $$ > agent.pid; sleep 60; fi; echo second run");
  StartOrchestrator({"--workers", "2"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  json busy;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& w : LiveWorkers()) {
      if (w["current_task_id"] == id) busy = w;
    }
    return !busy.empty();
  })) << Workers().dump(2);
  const std::string slot = busy["slot"];
  const std::string old_id = busy["id"];
  ASSERT_GE(ProcessesWith("TX_WORKER_ID=" + old_id).size(), 2u) << "the agent: sh and its sleep";
  ASSERT_EQ(::kill(busy["pid"].get<pid_t>(), SIGKILL), 0);

  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
  json task = Show(id);
  ASSERT_EQ(task["attempts"].size(), 2u) << task.dump(2);
  EXPECT_EQ(task["attempts"][0]["end_reason"], "worker_died");
  EXPECT_EQ(task["attempts"][0]["worker_id"], old_id);
  EXPECT_EQ(task["attempts"][1]["end_reason"], "exited");
  EXPECT_NE(task["attempts"][1]["worker_id"], old_id);

  json crashed = Events("worker.crashed");
  ASSERT_EQ(crashed.size(), 1u) << crashed.dump(2);
  EXPECT_EQ(crashed[0]["worker_id"], old_id);
  EXPECT_EQ(crashed[0]["data"]["class"], "killed");
  EXPECT_EQ(crashed[0]["data"]["exit_code"], 137);
  EXPECT_EQ(crashed[0]["data"]["signal"], SIGKILL);
  EXPECT_EQ(crashed[0]["data"]["slot"], slot);
  EXPECT_EQ(crashed[0]["data"]["pid"], busy["pid"]);
  EXPECT_EQ(crashed[0]["data"]["requeued_task"], id);

  // The killed worker is dead in the store; its slot runs a new worker with a new id.
  for (const auto& w : Workers()) {
    if (w["id"] == old_id) {
      EXPECT_EQ(w["status"], "dead") << w.dump(2);
    }
  }
  ASSERT_TRUE(WaitFor([&] {
    json s = SlotOf(slot);
    return s.value("state", "") == "running" && s.value("restarts", 0) >= 1 &&
           s.value("worker_id", "") != old_id && s.value("worker_status", "") == "idle";
  })) << Status().dump(2);
  EXPECT_NE(SlotOf(slot)["pid"], busy["pid"]);
  // No piece of the first agent survives: neither the shell nor its sleep.
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << "the dead worker's agent runs on";
  EXPECT_TRUE(WaitFor([&] { return ProcessesWith("TX_WORKER_ID=" + old_id).empty(); }, 10s))
      << "a process of the dead worker's agent group runs on";
}

TEST_F(OrchestratorTest, AnIdleWorkerKilledIsRestartedWithoutTouchingAnyTask) {
  StartOrchestrator({"--workers", "1"});
  json w;
  ASSERT_TRUE(WaitFor([&] {
    json live = LiveWorkers();
    if (live.size() != 1 || live[0]["status"] != "idle") return false;
    w = live[0];
    return true;
  }));
  ASSERT_EQ(::kill(w["pid"].get<pid_t>(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    json live = LiveWorkers();
    return live.size() == 1 && live[0]["id"] != w["id"] && live[0]["slot"] == "slot-1";
  })) << Log();
  json crashed = Events("worker.crashed");
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_FALSE(crashed[0]["data"].contains("requeued_task")) << crashed[0].dump();
  EXPECT_EQ(crashed[0]["data"]["class"], "killed");
  // The replacement works.
  std::string id = AddShellTask("exit 0");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
}

TEST_F(OrchestratorTest, KillingTheOrchestratorStopsItsWorkersWithoutLeavingAgents) {
  std::vector<std::string> first_wave;
  for (int i = 0; i < 3; ++i) {
    first_wave.push_back(AddShellTask("echo $$ > agent-" + std::to_string(i) + ".pid; sleep 2"));
  }
  std::vector<std::string> rest;
  for (int i = 0; i < 3; ++i) rest.push_back(AddShellTask("sleep 0.2"));
  BackgroundProcess& first = StartOrchestrator({"--workers", "3"});
  std::vector<pid_t> agents;
  for (int i = 0; i < 3; ++i) agents.push_back(ReadPid("agent-" + std::to_string(i) + ".pid"));
  std::vector<pid_t> workers;
  ASSERT_TRUE(WaitFor([&] {
    workers.clear();
    for (const auto& w : LiveWorkers()) workers.push_back(w["pid"]);
    return workers.size() == 3u;
  }));
  std::vector<std::string> running = TaskIds("running");

  first.Signal(SIGKILL);
  EXPECT_EQ(first.Wait(10s), 128 + SIGKILL);
  // Parent-death signal: the workers drain (their running task finishes) and exit by themselves.
  EXPECT_TRUE(WaitFor(
      [&] {
        for (pid_t p : workers) {
          if (Running(p)) return false;
        }
        for (pid_t p : agents) {
          if (Running(p)) return false;
        }
        return OurProcesses().empty();
      },
      30s))
      << "workers or agents still running after the orchestrator was killed";
  for (const auto& id : running) {
    std::string s = TaskStatus(id);
    EXPECT_TRUE(s == "done" || s == "ready") << id << " is " << s;
  }
  for (const auto& id : first_wave) EXPECT_EQ(TaskStatus(id), "done") << "drained, not dropped";
  EXPECT_EQ(CountTasks("running"), 0);
  EXPECT_TRUE(LiveWorkers().empty()) << LiveWorkers().dump(2);
  EXPECT_EQ(Status()["status"], "dead") << "its row still names it; the next start reconciles";

  // A new orchestrator takes over the stale row and the lock, and runs the rest.
  StartOrchestrator({"--workers", "2"});
  for (const auto& id : TaskIds("running")) {  // every running task has a live worker
    bool held = false;
    for (const auto& w : LiveWorkers()) held = held || w["current_task_id"] == id;
    std::string now = TaskStatus(id);
    EXPECT_TRUE(held || now != "running") << id << " running without a live worker";
  }
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 6; })) << Log();
  for (const auto& id : first_wave) EXPECT_EQ(Show(id)["attempts"].size(), 1u);
  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(orchestrators_.back()->Wait(30s), 0) << Log();
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(LiveWorkers().empty());
  EXPECT_TRUE(Events("worker.crashed").empty()) << "every worker deregistered on its own";
}

TEST_F(OrchestratorTest, ARestartedOrchestratorAdoptsDrainingWorkersAndNeverRunsTwoInOneSlot) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back(AddShellTask("echo $$ > agent-" + std::to_string(i) + ".pid; sleep 3"));
  }
  BackgroundProcess& first = StartOrchestrator({"--workers", "2"});
  for (int i = 0; i < 2; ++i) ASSERT_GT(ReadPid("agent-" + std::to_string(i) + ".pid"), 0);
  std::map<std::string, pid_t> old_pids;  // by slot
  for (const auto& w : LiveWorkers()) old_pids[w["slot"]] = w["pid"];
  ASSERT_EQ(old_pids.size(), 2u);

  first.Signal(SIGKILL);
  first.Wait(10s);
  // Started while the old workers still drain their tasks: it adopts them.
  StartOrchestrator({"--workers", "2"});
  bool saw_orphan = false;
  bool two_in_a_slot = false;
  std::string evidence;
  ASSERT_TRUE(WaitFor([&] {
    json status = Status();
    for (const auto& s : status.value("slots", json::array())) {
      if (s["state"] == "orphan") {
        saw_orphan = true;
        EXPECT_EQ(s["pid"], old_pids[s["slot"]]) << s.dump();
      }
    }
    std::map<std::string, int> per_slot;
    for (const auto& w : LiveWorkers()) {
      if (Running(w["pid"].get<pid_t>()) && ++per_slot[w["slot"]] > 1) {
        two_in_a_slot = true;
        evidence = LiveWorkers().dump(2);
      }
    }
    for (const auto& [slot, pid] : old_pids) {
      if (Running(pid)) return false;
    }
    json live = LiveWorkers();
    return CountTasks("done") == 2 && live.size() == 2u && live[0]["status"] == "idle" &&
           live[1]["status"] == "idle";
  })) << Log();
  EXPECT_TRUE(saw_orphan) << "status never showed the adopted workers";
  EXPECT_FALSE(two_in_a_slot) << evidence;
  for (const auto& id : ids) {
    json t = Show(id);
    EXPECT_EQ(t["status"], "done");
    EXPECT_EQ(t["attempts"].size(), 1u) << "finished by the adopted worker, not redone";
  }
  for (const auto& [slot, pid] : old_pids) {
    json s = SlotOf(slot);
    EXPECT_EQ(s["state"], "running");
    EXPECT_NE(s["pid"], pid);
  }
  EXPECT_TRUE(Events("worker.crashed").empty());
}

// Graceful means graceful for adopted workers too: they already got one SIGTERM (their parent
// died) and are draining; a graceful stop of the orchestrator that adopted them waits for them
// instead of sending the second SIGTERM that would cut their tasks short.
TEST_F(OrchestratorTest, AGracefulStopLetsAdoptedWorkersFinishTheirTasks) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 4");
  BackgroundProcess& first = StartOrchestrator({"--workers", "1"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  first.Signal(SIGKILL);
  first.Wait(10s);
  BackgroundProcess& second = StartOrchestrator({"--workers", "1"});
  ASSERT_EQ(SlotOf("slot-1").value("state", ""), "orphan") << Status().dump(2);
  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(second.Wait(30s), 0) << Log();
  json t = Show(id);
  EXPECT_EQ(t["status"], "done") << t.dump(2) << Log();
  ASSERT_EQ(t["attempts"].size(), 1u) << t.dump(2);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "exited") << t.dump(2);
}

TEST_F(OrchestratorTest, ARestartedOrchestratorMarksGoneWorkersDeadAndRequeuesTheirTasks) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 60", {"--max-attempts", "5"});
  BackgroundProcess& first = StartOrchestrator({"--workers", "1", "--heartbeat-interval", "30s"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  json w;
  ASSERT_TRUE(WaitFor([&] {
    json live = LiveWorkers();
    if (live.size() != 1 || live[0]["current_task_id"] != id) return false;
    w = live[0];
    return true;
  }));
  // The orchestrator and its worker die at once (the OOM killer taking the tree).
  first.Signal(SIGKILL);
  ::kill(w["pid"].get<pid_t>(), SIGKILL);
  first.Wait(10s);
  ASSERT_TRUE(WaitFor([&] { return !Running(w["pid"].get<pid_t>()) && !Running(agent); }));
  EXPECT_EQ(TaskStatus(id), "running") << "nobody has noticed yet (heartbeat every 30 s)";

  StartOrchestrator({"--workers", "1", "--heartbeat-interval", "30s"});
  json crashed;
  ASSERT_TRUE(WaitFor([&] {
    crashed = Events("worker.crashed");
    return crashed.size() == 1u;
  })) << Log();
  EXPECT_EQ(crashed[0]["worker_id"], w["id"]);
  EXPECT_EQ(crashed[0]["data"]["class"], "gone");
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() >= 2u; })) << Log();
  EXPECT_EQ(Show(id)["attempts"][0]["end_reason"], "worker_died");
}

// ---------------------------------------------------------------------------------------------
// Shutdown

TEST_F(OrchestratorTest, SigtermUnderLoadFinishesEveryRunningTask) {
  for (int i = 0; i < 9; ++i) AddShellTask("sleep 1");
  BackgroundProcess& o = StartOrchestrator({"--workers", "3"});
  ASSERT_TRUE(WaitFor([&] { return CountTasks("running") == 3; })) << Log();
  std::vector<std::string> running = TaskIds("running");
  std::vector<pid_t> workers;
  for (const auto& w : LiveWorkers()) workers.push_back(w["pid"]);
  o.Signal(SIGTERM);
  EXPECT_EQ(o.Wait(60s), 0) << Log();
  for (const auto& id : running) {
    json t = Show(id);
    EXPECT_EQ(t["status"], "done") << t.dump(2);
    ASSERT_EQ(t["attempts"].size(), 1u) << t.dump(2);
    EXPECT_EQ(t["attempts"][0]["end_reason"], "exited") << "finished, not killed";
  }
  EXPECT_EQ(CountTasks("running"), 0);
  for (const auto& id : TaskIds("ready")) EXPECT_EQ(Show(id)["attempt"], 0) << id;
  EXPECT_EQ(CountTasks("done") + CountTasks("ready"), 9);
  for (const auto& w : Workers()) {
    EXPECT_EQ(w["status"], "stopped") << w.dump(2);
  }
  for (pid_t p : workers) EXPECT_FALSE(Running(p));
  EXPECT_TRUE(Events("worker.crashed").empty());
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(OurProcesses().empty());
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
}

TEST_F(OrchestratorTest, ASecondSignalKillsTheAgentsAndReleasesTheirTasksUncounted) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 60", {"--max-attempts", "1"});
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "running"; }));
  o.Signal(SIGINT);
  ASSERT_TRUE(WaitFor([&] { return Status().value("status", "") == "stopping"; }, 10s)) << Log();
  EXPECT_TRUE(Running(agent)) << "the first signal lets the task run on";
  o.Signal(SIGTERM);
  EXPECT_EQ(o.Wait(30s), 0) << Log();
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s));
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready") << t.dump(2);
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown");
  EXPECT_TRUE(ProcessesWith("TX_TASK_ID=" + id).empty());
}

TEST_F(OrchestratorTest, StopForceKillsAgentsAndReleasesTheirTasks) {
  // max_attempts 1: a release at shutdown must not use up the task's only attempt.
  std::string id =
      AddShellTask("if [ -e first.pid ]; then exit 0; fi; echo $$ > first.pid; sleep 60",
                   {"--max-attempts", "1"});
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  pid_t agent = ReadPid("first.pid");
  ASSERT_GT(agent, 0);
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "running"; }));
  std::string worker_id = LiveWorkers()[0]["id"];

  RunResult stop = Tx({"orchestrator", "stop", "--force"});  // bounded by RunTx's 60 s
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_FALSE(stop.timed_out);
  EXPECT_NE(stop.out.find("stopped"), std::string::npos) << stop.out;
  EXPECT_EQ(o.Wait(30s), 0) << Log();
  EXPECT_FALSE(Running(agent));
  EXPECT_TRUE(ProcessesWith("TX_WORKER_ID=" + worker_id).empty()) << "the agent's sleep runs on";
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready") << t.dump(2);
  EXPECT_EQ(t["attempt"], 0) << "a release at shutdown is not counted";
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown");
  json w = Workers()[0];
  EXPECT_EQ(w["status"], "stopped") << w.dump(2);
  EXPECT_TRUE(Events("worker.crashed").empty()) << "a kill at shutdown is no crash";
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_EQ(Tx({"orchestrator", "stop"}).exit_code, 4) << "nothing left to stop";

  // Its one attempt is still there to use.
  StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
}

TEST_F(OrchestratorTest, StopWithoutWaitingReturnsAtOnceAndTheOrchestratorStillDrains) {
  std::string id = AddShellTask("sleep 1");
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "running"; }));
  RunResult stop = Tx({"orchestrator", "stop", "--no-wait"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_NE(stop.out.find("asked to stop"), std::string::npos) << stop.out;
  EXPECT_EQ(o.Wait(60s), 0) << Log();
  EXPECT_EQ(TaskStatus(id), "done");
  EXPECT_EQ(Status()["status"], "stopped");
  RunResult both = Tx({"orchestrator", "stop", "--graceful", "--force"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

// ---------------------------------------------------------------------------------------------
// The pool

// slot-2's agent profile is removed from config.toml under the running pool (a bad agent is
// refused at start): from its next start on, its worker exits at once.
TEST_F(OrchestratorTest, ACrashLoopingSlotIsMarkedFailedAndTheOthersKeepWorking) {
  std::string slot2 = "[orchestrator.slots.slot-2]\nagent = \"nosuchprofile\"\n";
  std::ofstream(Path(".tx/config.toml"))
      << "[agents.nosuchprofile]\nargv = [\"sh\", \"-c\", \"true\"]\n"
      << slot2;
  StartOrchestrator({"--workers", "3", "--max-restarts", "2", "--max-backoff", "200ms"});
  ASSERT_TRUE(WaitFor([&] { return SlotOf("slot-2").value("worker_status", json()) == "idle"; }))
      << Status().dump(2) << Log();
  std::ofstream(Path(".tx/config.toml"), std::ios::trunc) << slot2;
  ::kill(SlotOf("slot-2")["pid"].get<pid_t>(), SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return SlotOf("slot-2").value("state", "") == "failed"; }))
      << Status().dump(2) << Log();
  json failed = SlotOf("slot-2");
  EXPECT_FALSE(failed.value("failure", "").empty()) << failed.dump();
  EXPECT_EQ(failed["pid"], 0);
  json events = Events("slot.failed");
  ASSERT_EQ(events.size(), 1u) << events.dump(2);
  EXPECT_EQ(events[0]["data"]["slot"], "slot-2");
  EXPECT_FALSE(events[0]["data"].value("reason", "").empty());
  EXPECT_NE(ReadFile(Path(".tx/logs/workers/slot-2.log")).find("nosuchprofile"), std::string::npos);

  // The rest of the pool works on.
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(AddShellTask("sleep 0.1"));
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 4; })) << Log();
  std::set<std::string> slots_used;
  std::map<std::string, std::string> slot_of;  // worker id → slot
  for (const auto& w : Workers()) slot_of[w["id"]] = w["slot"];
  for (const auto& id : ids) slots_used.insert(slot_of[Show(id)["attempts"][0]["worker_id"]]);
  EXPECT_EQ(slots_used.count("slot-2"), 0u);
  EXPECT_EQ(SlotOf("slot-1")["state"], "running");
  EXPECT_EQ(SlotOf("slot-3")["state"], "running");
  EXPECT_EQ(SlotOf("slot-2")["state"], "failed") << "left alone once failed";
  EXPECT_EQ(Events("slot.failed").size(), 1u);

  // A scale request retries a failed slot inside the new size with a fresh history: it
  // crash-loops again (its profile is still missing) and is given up again.
  RunResult retry = Tx({"orchestrator", "scale", "3"});
  EXPECT_NE(retry.exit_code, 2) << retry.err;
  EXPECT_TRUE(WaitFor([&] { return Events("slot.failed").size() == 2u; })) << Log();
  EXPECT_TRUE(WaitFor([&] { return SlotOf("slot-2").value("state", "") == "failed"; }));
  EXPECT_EQ(SlotOf("slot-1")["state"], "running");
}

TEST_F(OrchestratorTest, ASecondOrchestratorOnTheSameStoreIsRefused) {
  BackgroundProcess& first = StartOrchestrator({"--workers", "1"});
  std::string pid = std::to_string(first.pid());
  RunResult second = Tx({"orchestrator", "start", "--workers", "1"});
  EXPECT_EQ(second.exit_code, 4) << second.err;
  EXPECT_NE(second.err.find(pid), std::string::npos) << second.err;
  EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << second.err;
  RunResult daemon = Tx({"orchestrator", "start", "--daemon", "--workers", "1"});
  EXPECT_EQ(daemon.exit_code, 4) << daemon.err;
  // The refused ones changed nothing.
  EXPECT_EQ(Status()["pid"], first.pid());
  EXPECT_EQ(Status()["status"], "running");
  EXPECT_EQ(ReadFile(Path(".tx/orchestrator.pid")).rfind(pid + " ", 0), 0u)
      << ReadFile(Path(".tx/orchestrator.pid"));
  EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u; }));
  EXPECT_EQ(LiveWorkers().size(), 1u);

  // Killed, its lock and its row are stale: the next start takes them over.
  first.Signal(SIGKILL);
  first.Wait(10s);
  ASSERT_TRUE(WaitFor([&] { return OurProcesses().empty(); }, 30s));
  EXPECT_TRUE(fs::exists(Path(".tx/orchestrator.pid"))) << "a kill -9 leaves its pid file";
  BackgroundProcess& next = StartOrchestrator({"--workers", "1"});
  EXPECT_EQ(Status()["pid"], next.pid());
  EXPECT_EQ(ReadFile(Path(".tx/orchestrator.pid")).rfind(std::to_string(next.pid()) + " ", 0), 0u);
  EXPECT_EQ(Events("orchestrator.stale_reclaimed").size(), 1u);
}

TEST_F(OrchestratorTest, ScaleGrowsAndShrinksThePool) {
  StartOrchestrator({"--workers", "1", "--max-workers", "3"});
  RunResult up = Tx({"orchestrator", "scale", "3"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  // Answered once every slot it asked for runs.
  json s = Status();
  EXPECT_EQ(s["desired"], 3);
  ASSERT_EQ(s["slots"].size(), 3u) << s.dump(2);
  for (const auto& slot : s["slots"]) EXPECT_EQ(slot["state"], "running") << slot.dump();
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 3u; }));

  // Scaling down drains: the surplus workers finish their tasks first.
  for (int i = 0; i < 3; ++i) AddShellTask("sleep 2");
  ASSERT_TRUE(WaitFor([&] { return CountTasks("running") == 3; })) << Log();
  RunResult down = Tx({"orchestrator", "scale", "1"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  ASSERT_TRUE(WaitFor([&] {
    json live = LiveWorkers();
    return live.size() == 1u && Status()["slots"].size() == 1u;
  })) << Status().dump(2);
  EXPECT_EQ(LiveWorkers()[0]["slot"], "slot-1") << "the highest slots drain first";
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 3; }));
  for (const auto& t : Tasks()) {
    json full = Show(t["id"]);
    ASSERT_EQ(full["attempts"].size(), 1u) << full.dump(2);
    EXPECT_EQ(full["attempts"][0]["end_reason"], "exited");
  }
  EXPECT_TRUE(Events("worker.crashed").empty());

  // To zero and back.
  RunResult zero = Tx({"orchestrator", "scale", "0"});
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().empty(); }));
  EXPECT_EQ(Status()["status"], "running");
  std::string id = AddShellTask("exit 0");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(TaskStatus(id), "ready");
  RunResult again = Tx({"orchestrator", "scale", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));

  EXPECT_EQ(Tx({"orchestrator", "scale", "many"}).exit_code, 2);
  EXPECT_EQ(Tx({"orchestrator", "scale", "-1"}).exit_code, 2);
}

TEST_F(OrchestratorTest, ScalingPastMaxWorkersFailsWithNoCapacity) {
  StartOrchestrator({"--workers", "2", "--max-workers", "2", "--capacity-timeout", "1s"});
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 2u; }));
  RunResult over = Tx({"orchestrator", "scale", "3"});
  EXPECT_EQ(over.exit_code, 5) << over.err;
  EXPECT_NE(over.err.find("no capacity"), std::string::npos) << over.err;
  EXPECT_EQ(std::count(over.err.begin(), over.err.end(), '\n'), 1) << over.err;
  json s = Status();
  EXPECT_EQ(s["desired"], 2) << s.dump(2);
  EXPECT_EQ(s["slots"].size(), 2u) << s.dump(2);
  EXPECT_EQ(Events("pool.no_capacity").size(), 1u);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(LiveWorkers().size(), 2u);
  // The pool still works.
  std::string id = AddShellTask("exit 0");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  RunResult none = Tx({"orchestrator", "stop"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  RunResult nothing = Tx({"orchestrator", "scale", "1"});
  EXPECT_EQ(nothing.exit_code, 4) << "no orchestrator to scale: " << nothing.err;
}

// A scale request still waiting for capacity when the orchestrator stops was not met: it must
// not be answered "pool scaled".
TEST_F(OrchestratorTest, AScaleWaitingForCapacityFailsWhenTheOrchestratorStops) {
  BackgroundProcess& o =
      StartOrchestrator({"--workers", "1", "--max-workers", "1", "--capacity-timeout", "30s"});
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u; }));
  BackgroundProcess scale(TX_BINARY, {"orchestrator", "scale", "2"}, Env{}, dir_.str(),
                          Path("scale.out"));
  ASSERT_TRUE(WaitFor([&] { return Status().value("desired", 0) == 2; })) << Status().dump(2);
  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(o.Wait(30s), 0) << Log();
  int code = scale.Wait(60s);
  EXPECT_NE(code, 0) << "scale said: " << scale.Output();
  EXPECT_EQ(scale.Output().find("pool scaled to 2"), std::string::npos) << scale.Output();
}

// ---------------------------------------------------------------------------------------------
// Daemon, heartbeat file, backpressure, status, flags

TEST_F(OrchestratorTest, DaemonModeDetachesOnceRunning) {
  // Through pipes: a daemon that kept the caller's stdout would hold RunTx until its time limit.
  RunResult r = Tx({"orchestrator", "start", "--daemon", "--workers", "1", "--heartbeat-interval",
                    "500ms", "--poll-interval", "1s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.timed_out) << "the caller did not return";
  EXPECT_NE(r.out.find("orchestrator running"), std::string::npos) << r.out;
  json s = Status();
  EXPECT_EQ(s["status"], "running") << s.dump(2);
  pid_t daemon = s.value("pid", 0);
  // The command that started it has exited (and was reaped); the daemon runs on.
  EXPECT_TRUE(Running(daemon));
  EXPECT_NE(daemon, ::getpid());
  EXPECT_TRUE(fs::exists(Path(".tx/orchestrator.log")));
  EXPECT_EQ(ReadFile(Path(".tx/orchestrator.pid")).rfind(std::to_string(daemon) + " ", 0), 0u)
      << ReadFile(Path(".tx/orchestrator.pid"));
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u; }));
  std::string id = AddShellTask("exit 0");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  EXPECT_NE(ReadFile(Path(".tx/orchestrator.log")).find("slot-1"), std::string::npos);

  RunResult stop = Tx({"orchestrator", "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_TRUE(WaitFor([&] { return !Running(daemon); }, 30s));
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(LiveWorkers().empty());
}

TEST_F(OrchestratorTest, TheHeartbeatFileMirrorsThePool) {
  // Long enough to be running still when the second slot's worker is up on a loaded machine.
  std::string id = AddShellTask("sleep 5");
  BackgroundProcess& o = StartOrchestrator({"--workers", "2", "--heartbeat-file", "hb.json"});
  json doc;
  std::string working;
  ASSERT_TRUE(WaitFor([&] {
    // Judged on this reading alone: a slot seen working in an earlier one may be done by now.
    working.clear();
    doc = json::parse(ReadFile(Path("hb.json")), nullptr, false);
    if (doc.is_discarded() || !doc.contains("workers")) return false;
    for (const char* slot : {"slot-1", "slot-2"}) {
      if (doc["workers"].contains(slot) && doc["workers"][slot].value("status", "") == "working") {
        working = slot;
      }
    }
    return doc["workers"].size() == 2u && !working.empty();
  })) << doc.dump(2);
  const json& w = doc["workers"][working];
  for (const char* key : {"slot", "status", "task", "taskTitle", "sessionId", "lastUpdate",
                          "startedAt", "metadata"}) {
    EXPECT_TRUE(w.contains(key)) << key << " in " << w.dump();
  }
  EXPECT_EQ(w["slot"], working);
  EXPECT_EQ(w["task"], id);
  EXPECT_EQ(w["taskTitle"], "t");
  EXPECT_TRUE(w["lastUpdate"].is_number_integer());
  EXPECT_EQ(w["metadata"]["restartCount"], 0);
  std::string idle = working == "slot-1" ? "slot-2" : "slot-1";
  EXPECT_EQ(doc["workers"][idle]["status"], "idle") << doc.dump(2);
  // A crash shows as the supervisor's restart count.
  pid_t idle_pid = IntAt(doc["workers"][idle]["metadata"], "workerPid");
  ASSERT_GT(idle_pid, 0) << doc.dump(2);
  ASSERT_EQ(::kill(idle_pid, SIGKILL), 0);
  EXPECT_TRUE(WaitFor([&] {
    doc = json::parse(ReadFile(Path("hb.json")), nullptr, false);
    if (doc.is_discarded() || !doc.contains("workers") || !doc["workers"].contains(idle)) {
      return false;
    }
    const json& e = doc["workers"][idle];
    return IntAt(e["metadata"], "restartCount") == 1 &&
           IntAt(e["metadata"], "workerPid") != idle_pid && e.value("status", json()) == "idle";
  })) << doc.dump(2);

  // Every rewrite is whole: it always parses while the pool works and stops.
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  o.Signal(SIGTERM);
  ASSERT_EQ(o.Wait(60s), 0) << Log();
  doc = json::parse(ReadFile(Path("hb.json")), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  for (const auto& [slot, entry] : doc["workers"].items()) {
    EXPECT_EQ(entry["status"], "offline") << "after a stop: " << doc.dump(2);
  }
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    std::string name = e.path().filename();
    EXPECT_TRUE(name == "hb.json" || name.rfind("hb.json", 0) != 0) << "left over: " << name;
  }
}

TEST_F(OrchestratorTest, BackpressureRefusesTaskAddPastMaxQueueDepth) {
  BackgroundProcess& o = StartOrchestrator({"--workers", "0", "--max-queue-depth", "3"});
  for (int i = 0; i < 3; ++i) AddShellTask("true");
  RunResult full = Tx({"task", "add", "one too many"});
  EXPECT_EQ(full.exit_code, 5) << full.err;
  EXPECT_NE(full.err.find("queue full"), std::string::npos) << full.err;
  EXPECT_EQ(std::count(full.err.begin(), full.err.end(), '\n'), 1) << full.err;
  EXPECT_EQ(Tasks().size(), 3u) << "nothing written";
  EXPECT_EQ(SqlValue("SELECT COUNT(*) FROM tasks"), "3");

  RunResult stop = Tx({"orchestrator", "stop"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(o.Wait(30s), 0);
  RunResult fits = Tx({"task", "add", "fits now"});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(Tasks().size(), 4u);
}

TEST_F(OrchestratorTest, BackpressureEndsWhenTheOrchestratorIsGoneEvenByKill) {
  BackgroundProcess& o = StartOrchestrator({"--workers", "0", "--max-queue-depth", "1"});
  AddShellTask("true");
  RunResult full = Tx({"task", "add", "one too many"});
  EXPECT_EQ(full.exit_code, 5) << full.err;
  o.Signal(SIGKILL);
  o.Wait(10s);
  ASSERT_EQ(Status()["status"], "dead");
  RunResult fits = Tx({"task", "add", "no orchestrator runs"});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
}

TEST_F(OrchestratorTest, StatusJsonShowsThePoolAndQueue) {
  json before = Status();
  EXPECT_EQ(before["status"], "stopped") << before.dump(2);
  std::string done = AddShellTask("exit 0");
  BackgroundProcess& o = StartOrchestrator({"--workers", "2", "--max-workers", "4"});
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(done) == "done"; }));
  std::string busy = AddShellTask("sleep 30");
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& s : Status().value("slots", json::array())) {
      if (s.value("task_id", json()) == busy) return true;
    }
    return false;
  })) << Status().dump(2);
  json s = Status();
  EXPECT_EQ(s["status"], "running");
  EXPECT_EQ(s["pid"], o.pid());
  EXPECT_TRUE(s["hostname"].is_string() && !s["hostname"].get<std::string>().empty());
  EXPECT_GT(s["started_at"].get<std::int64_t>(), 0);
  EXPECT_GE(s["uptime_ms"].get<std::int64_t>(), 0);
  EXPECT_EQ(s["desired"], 2);
  EXPECT_EQ(s["max_workers"], 4);
  ASSERT_EQ(s["slots"].size(), 2u) << s.dump(2);
  std::set<pid_t> live_pids;
  for (const auto& w : LiveWorkers()) live_pids.insert(w["pid"].get<pid_t>());
  for (const auto& slot : s["slots"]) {
    for (const char* key : {"slot", "state", "pid", "restarts", "last_exit", "failure", "worker_id",
                            "worker_status", "task_id", "heartbeat_age_ms"}) {
      EXPECT_TRUE(slot.contains(key)) << key << " in " << slot.dump();
    }
    EXPECT_EQ(slot["state"], "running");
    EXPECT_EQ(live_pids.count(slot["pid"].get<pid_t>()), 1u) << slot.dump();
    EXPECT_EQ(slot["restarts"], 0);
    EXPECT_GE(slot["heartbeat_age_ms"].get<std::int64_t>(), 0);
  }
  EXPECT_EQ(s["queue"]["done"], 1) << s["queue"].dump();
  EXPECT_EQ(s["queue"]["running"], 1) << s["queue"].dump();
  EXPECT_GT(s["last_reconcile_at"].get<std::int64_t>(), 0);
  EXPECT_TRUE(s["last_report"].is_object());
  EXPECT_TRUE(s["config"].is_object());
  EXPECT_EQ(s["config"]["max_workers"], 4);

  RunResult text = Tx({"orchestrator", "status"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("orchestrator: running"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("slot-2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(busy), std::string::npos) << text.out;
}

// Every slot of the status document has the same keys, whether or not a worker ever registered
// in it (here slot-2 waits for capacity past --max-workers), null where there is nothing to say.
TEST_F(OrchestratorTest, StatusJsonGivesEverySlotTheSameKeysEvenWithoutAWorker) {
  StartOrchestrator({"--workers", "2", "--max-workers", "1", "--capacity-timeout", "10m"});
  ASSERT_TRUE(WaitFor([&] {
    return SlotOf("slot-2").value("state", "") == "pending" &&
           SlotOf("slot-1").value("worker_status", json()) == "idle";
  })) << Status().dump(2);
  json status = Status();
  for (const auto& slot : status["slots"]) {
    for (const char* key : {"slot", "state", "pid", "restarts", "last_exit", "failure", "worker_id",
                            "worker_status", "task_id", "heartbeat_age_ms"}) {
      EXPECT_TRUE(slot.contains(key)) << key << " in " << slot.dump();
    }
  }
  json idle = SlotOf("slot-1");
  EXPECT_TRUE(idle["task_id"].is_null()) << idle.dump();
  EXPECT_TRUE(idle["worker_id"].is_string()) << idle.dump();
  json empty = SlotOf("slot-2");
  for (const char* key : {"worker_id", "worker_status", "task_id", "heartbeat_age_ms"}) {
    EXPECT_TRUE(empty[key].is_null()) << key << " in " << empty.dump();
  }
  RunResult text = Tx({"orchestrator", "status"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("pending"), std::string::npos) << text.out;
}

TEST_F(OrchestratorTest, BadFlagsAreRefusedWithOneLineAndStartNothing) {
  for (Args bad :
       {Args{"--workers", "abc"}, Args{"--workers", "-1"}, Args{"--reconcile-interval", "soon"},
        Args{"--shutdown-timeout", "0s"}, Args{"--heartbeat-interval", "soon"},
        Args{"--lease", "1 hour"}, Args{"--max-workers", "0"}, Args{"--max-queue-depth", "x"},
        Args{"--config", "nope.toml"}, Args{"--no-such-flag"}}) {
    Args args = {"orchestrator", "start"};
    args.insert(args.end(), bad.begin(), bad.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << ": " << r.err;
    EXPECT_FALSE(r.timed_out) << bad[0] << " started an orchestrator";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::ofstream(Path(".tx/config.toml")) << "[orchestrator]\nworkerz = 2\n";
  RunResult r = Tx({"orchestrator", "start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("workerz"), std::string::npos) << r.err;
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(Workers().empty());
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
  EXPECT_TRUE(OurProcesses().empty());
}

// The worker flags the orchestrator passes through are checked before any worker starts: a typo
// is refused at once (exit 2), not turned into a pool of crash-looping workers.
TEST_F(OrchestratorTest, BadWorkerFlagsAreRefusedBeforeAnyWorkerStarts) {
  for (Args bad : {Args{"--agent", "nosuchprofile"}, Args{"--memory-mb", "abc"},
                   Args{"--cpu-percent", "lots"}, Args{"--heartbeat-interval", "0s"}}) {
    std::error_code ec;
    fs::remove_all(Path(".tx/logs/workers"), ec);
    Args args = {"orchestrator", "start", "--workers", "1", "--max-restarts", "1"};
    args.insert(args.end(), bad.begin(), bad.end());
    std::string log = Path("bad-" + bad[0].substr(2) + ".out");
    BackgroundProcess o(TX_BINARY, args, Env{}, dir_.str(), log);
    // Refused (it exits) or not (a worker of it starts and writes its log).
    WaitFor([&] { return o.Wait(0ms) >= 0 || fs::exists(Path(".tx/logs/workers/slot-1.log")); },
            30s);
    int code = o.Wait(500ms);
    EXPECT_EQ(code, 2) << bad[0] << " " << bad[1] << ":\n" << o.Output();
    if (code < 0) {  // it runs: stop it and its crash-looping pool
      Tx({"orchestrator", "stop", "--force"});
      o.Wait(30s);
    } else {
      std::string out = o.Output();
      EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    }
  }
  EXPECT_TRUE(Workers().empty());
  EXPECT_TRUE(Events("slot.failed").empty());
}

// A slot's own agent in config.toml is checked the same way, and the error names the slot.
TEST_F(OrchestratorTest, ABadAgentForOneSlotInTheConfigIsRefusedNamingTheSlot) {
  std::ofstream(Path(".tx/config.toml"))
      << "[orchestrator.slots.slot-2]\nagent = \"nosuchprofile\"\n";
  RunResult r = Tx({"orchestrator", "start", "--workers", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.err.find("slot-2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nosuchprofile"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(Workers().empty());
  EXPECT_EQ(Status()["status"], "stopped");
}

// ---------------------------------------------------------------------------------------------
// Races and limits

TEST_F(OrchestratorTest, TwoOrchestratorsStartedAtOnceLeaveExactlyOneRunning) {
  for (int round = 0; round < 3; ++round) {
    Args args = {"orchestrator", "start", "--workers", "1", "--heartbeat-interval", "500ms"};
    BackgroundProcess a(TX_BINARY, args, Env{}, dir_.str(), Path("race-a.out"));
    BackgroundProcess b(TX_BINARY, args, Env{}, dir_.str(), Path("race-b.out"));
    // One of them is refused (exit 4); the other runs.
    ASSERT_TRUE(WaitFor([&] { return a.Wait(0ms) >= 0 || b.Wait(0ms) >= 0; }, 30s))
        << "both run:\n"
        << a.Output() << b.Output();
    BackgroundProcess& loser = a.Wait(0ms) >= 0 ? a : b;
    BackgroundProcess& winner = &loser == &a ? b : a;
    EXPECT_EQ(loser.Wait(0ms), 4) << loser.Output();
    ASSERT_TRUE(WaitFor([&] {
      json s = Status();
      return s.value("status", "") == "running" && s.value("pid", 0) == winner.pid();
    })) << winner.Output();
    EXPECT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1u; }));
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(LiveWorkers().size(), 1u) << LiveWorkers().dump(2);
    RunResult stop = Tx({"orchestrator", "stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_EQ(winner.Wait(30s), 0) << winner.Output();
    ASSERT_TRUE(WaitFor([&] { return OurProcesses().empty(); }, 30s));
  }
}

TEST_F(OrchestratorTest, TheShutdownTimeoutCutsTheDrainShortAndReleasesTasksUncounted) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 60", {"--max-attempts", "1"});
  BackgroundProcess& o = StartOrchestrator({"--workers", "1", "--shutdown-timeout", "1s"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "running"; }));
  std::string worker_id = LiveWorkers()[0]["id"];
  o.Signal(SIGTERM);
  EXPECT_EQ(o.Wait(60s), 0) << Log();
  EXPECT_FALSE(Running(agent));
  EXPECT_TRUE(WaitFor([&] { return ProcessesWith("TX_WORKER_ID=" + worker_id).empty(); }, 10s));
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready") << t.dump(2);
  EXPECT_EQ(t["attempt"], 0) << t.dump(2);
  ASSERT_EQ(t["attempts"].size(), 1u) << t.dump(2);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown") << t.dump(2);
  EXPECT_EQ(Workers()[0]["status"], "stopped");
  EXPECT_EQ(Status()["status"], "stopped");
}

// The orchestrator is the store's reconciler: a worker it does not supervise (started by hand) is
// judged by its heartbeats. When it dies, it is declared dead, its task requeued, and no process
// of its agent's group goes on running.
TEST_F(OrchestratorTest, AnUnsupervisedWorkerThatDiesIsDeclaredDeadByItsHeartbeats) {
  BackgroundProcess& o = StartOrchestrator({"--workers", "0"});
  std::string id =
      AddShellTask("if [ -e first.pid ]; then exit 0; fi; echo $$ > first.pid; sleep 60");
  auto manual = StartHandWorker();
  pid_t agent = ReadPid("first.pid");
  ASSERT_GT(agent, 0);
  json w = WaitForTheLiveWorkerWithAgent([&](int pid) { return pid == agent; });
  ASSERT_FALSE(w.is_null()) << "its heartbeat has not recorded the agent: " << Workers().dump(2);
  ASSERT_GE(ProcessesWith("TX_WORKER_ID=" + w["id"].get<std::string>()).size(), 2u)
      << "the agent: sh and its sleep";
  manual->Signal(SIGKILL);
  manual->Wait(10s);
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "ready"; }, 30s)) << Log();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "worker_died");
  EXPECT_TRUE(WaitFor(
      [&] { return ProcessesWith("TX_WORKER_ID=" + w["id"].get<std::string>()).empty(); }, 10s))
      << "a process of the dead worker's agent group runs on";
  for (const auto& x : Workers()) {
    if (x["id"] == w["id"]) {
      EXPECT_EQ(x["status"], "dead");
    }
  }
  EXPECT_LT(o.Wait(0ms), 0) << "the orchestrator runs on";
}

// Where no orchestrator runs, a hand-run `tx orchestrator reconcile` does the same for the workers
// of its own host: the agent group of a worker it declares dead is killed before the requeue.
TEST_F(OrchestratorTest, AHandRunReconcileKillsTheAgentGroupOfAStaleWorkerOnThisHost) {
  std::string id = AddShellTask("sleep 60 & echo $! > child.pid; wait");
  auto manual = StartHandWorker();
  pid_t child = ReadPid("child.pid");
  ASSERT_GT(child, 0);
  json w = WaitForTheLiveWorkerWithAgent([](int pid) { return pid > 0; });
  ASSERT_FALSE(w.is_null()) << "its heartbeat has not recorded the agent: " << Workers().dump(2);
  manual->Signal(SIGKILL);
  manual->Wait(10s);
  // The agent (sh) got its parent-death signal; its child, the sleep, did not.
  ASSERT_TRUE(Running(child));
  json report;
  ASSERT_TRUE(WaitFor(
      [&] {
        RunResult r = Tx({"--json", "orchestrator", "reconcile"});
        if (r.exit_code != 0) return false;
        report = json::parse(r.out);
        return report.value("dead_workers", 0) == 1;
      },
      30s))
      << report.dump();
  EXPECT_EQ(report["agents_killed"], 1) << report.dump();
  EXPECT_TRUE(WaitFor([&] { return !Running(child); }, 10s))
      << "the dead worker's agent's child runs on beside the requeued task";
  EXPECT_TRUE(ProcessesWith("TX_WORKER_ID=" + w["id"].get<std::string>()).empty());
  EXPECT_EQ(TaskStatus(id), "ready");
  EXPECT_EQ(Show(id)["attempts"][0]["end_reason"], "worker_died");
  RunResult again = Tx({"orchestrator", "reconcile"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("killed the agents"), std::string::npos) << again.out;
}

// The port of an http://HOST:PORT address, 0 when there is none.
int PortOf(const std::string& url) {
  auto colon = url.rfind(':');
  return colon == std::string::npos || url.find("http://") != 0
             ? 0
             : std::atoi(url.c_str() + colon + 1);
}

TEST_F(OrchestratorTest, WithHttpThePoolIsServedAndAKilledWorkerShowsOnItsEventStream) {
  StartOrchestrator({"--workers", "2", "--http", "127.0.0.1:0"});
  std::string url = Status()["config"].value("http", "");
  int port = PortOf(url);
  ASSERT_GT(port, 0) << Status().dump();
  RunResult text = Tx({"orchestrator", "status"});
  EXPECT_NE(text.out.find("http: " + url), std::string::npos) << text.out;
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30, 0);
  auto live_workers = [&] {
    auto r = c.Get("/api/workers?status=idle");
    return r && r->status == 200 ? json::parse(r->body)["workers"].size() : 0u;
  };
  ASSERT_TRUE(WaitFor([&] { return live_workers() == 2; }, 30s));

  EventStream events(port, "/api/events");
  ASSERT_TRUE(WaitFor([&] { return events.status() == 200; }, 30s));
  pid_t victim = static_cast<pid_t>(IntAt(SlotOf("slot-1"), "pid"));
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& e : events.Events()) {
          if (e["type"] == "worker.crashed") return true;
        }
        return false;
      },
      30s))
      << Log();
  json crashed;
  for (const auto& e : events.Events()) {
    if (e["type"] == "worker.crashed") crashed = e;
  }
  EXPECT_EQ(crashed["data"]["class"], "killed") << crashed.dump();
  EXPECT_EQ(crashed["data"]["slot"], "slot-1");
  // The slot is filled again, and the stream shows the new worker registering.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::vector<std::string> types = TypesOf(events.Events());
        auto at = std::find(types.begin(), types.end(), "worker.crashed");
        return std::find(at, types.end(), "worker.registered") != types.end();
      },
      30s));
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_EQ(Sample(metrics->body, "tx_orchestrator_up"), 1) << metrics->body;
  EXPECT_EQ(Sample(metrics->body, R"(tx_worker_crashes_total{class="killed"})"), 1);
  events.Close();

  ASSERT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  ASSERT_EQ(orchestrators_.back()->Wait(30s), 0) << Log();
  EXPECT_FALSE(c.Get("/healthz"));  // the server went with it
}

TEST_F(OrchestratorTest, AnHttpAddressThatCannotBeServedStopsTheStartWithNothingLeft) {
  RunResult bad = Tx({"orchestrator", "start", "--http", "8787"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("invalid listen address '8787'"), std::string::npos) << bad.err;

  // A port someone else holds: the daemon cannot serve it, and says so through the terminal.
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(sock, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string taken = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  RunResult r = Tx({"orchestrator", "start", "--daemon", "--workers", "2", "--http", taken});
  ::close(sock);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot listen on " + taken), std::string::npos) << r.err;
  EXPECT_TRUE(WaitFor([&] { return OurProcesses().empty(); }, 20s));
  EXPECT_NE(Status().value("status", ""), "running");
  // The lock went with it: the next start runs.
  StartOrchestrator({"--workers", "1"});
}

}  // namespace
