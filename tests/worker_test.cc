// End-to-end tests of `tx worker start` (issue 3): the real tx binary as worker, real agent
// processes (sh -c scripts given as the task's command), real signals, the real clock with short
// intervals and generous polling bounds. Each test runs in a fresh directory with its own store.

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_probes.h"
#include "run_process.h"
#include "stop_between_transactions.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using tx::testing::BackgroundProcess;
using tx::testing::Env;
using tx::testing::RunResult;
using tx::testing::RunTx;
using tx::testing::TempDir;
using namespace tx::testing;  // process_probes.h: ReadFile, Running, WaitFor …
using Args = std::vector<std::string>;

class WorkerTest : public ::testing::Test {
 public:
  RunResult Tx(const Args& args, const Env& env = {}) { return RunTx(args, env, dir_.str()); }

 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  // Adds a task whose command is `sh -c SCRIPT`; returns its id.
  std::string AddShellTask(const std::string& script, Args extra = {}) {
    Args args = {"--json", "task", "add", "t", "--command", "sh -c '" + script + "'"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["id"];
  }

  json Show(const std::string& id) {
    RunResult r = Tx({"--json", "task", "show", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  std::string Status(const std::string& id) { return Show(id)["status"]; }

  // `tx worker start` with short intervals; a flag in `extra` replaces its default. `env` is added
  // to the worker's environment.
  std::unique_ptr<BackgroundProcess> StartWorker(Args extra = {}, const Env& env = {}) {
    Args args = {"worker", "start"};
    for (auto [flag, value] :
         {std::pair{"--heartbeat-interval", "300ms"}, std::pair{"--kill-grace", "500ms"},
          std::pair{"--poll-interval", "1s"}}) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
        args.insert(args.end(), {flag, value});
      }
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::string log = Path("worker-" + std::to_string(++workers_) + ".log");
    return std::make_unique<BackgroundProcess>(TX_BINARY, args, env, dir_.str(), log);
  }

  // Polls `pred` every 50 ms for up to `limit`.

  bool WaitForStatus(const std::string& id, const std::string& status,
                     std::chrono::milliseconds limit = 60s) {
    return WaitFor([&] { return Status(id) == status; }, limit);
  }

  pid_t ReadPid(const std::string& file) { return ReadPidFile(Path(file)); }

  // Runs SQL on the store directly, as an operator's repair or a fault would.
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path(".tx/tx.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10'000);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }

  TempDir dir_;
  int workers_ = 0;
};

// The worker's registration as `worker list --json` shows it (the only one in these tests).
json OnlyWorker(WorkerTest& t) {
  RunResult r = t.Tx({"--json", "worker", "list"});
  json list = json::parse(r.out);
  return list.empty() ? json() : list[0];
}

TEST_F(WorkerTest, AnAgentThatExitsZeroCompletesTheTaskAndItsOutputIsLogged) {
  std::string id = AddShellTask("echo hello from $TX_TASK_ID attempt $TX_ATTEMPT; exit 0");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "exited");
  EXPECT_EQ(t["attempts"][0]["exit_code"], 0);

  std::string log = Path(".tx/logs/" + id + "/1.log");
  EXPECT_EQ(ReadFile(log), "hello from " + id + " attempt 1\n");
  struct stat st {};
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  RunResult r = Tx({"task", "log", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello from " + id + " attempt 1\n");
  r = Tx({"task", "log", id, "--attempt", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.err;

  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(30s), 0) << worker->Output();
}

TEST_F(WorkerTest, ASilentAttemptLeavesNoLogFileAndItsLogIsEmpty) {
  std::string id = AddShellTask("exit 0");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  EXPECT_FALSE(fs::exists(Path(".tx/logs/" + id)));
  RunResult r = Tx({"task", "log", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("attempt 1 printed nothing"), std::string::npos) << r.err;
  r = Tx({"task", "log", id, "--follow"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(30s), 0) << worker->Output();
}

TEST_F(WorkerTest, TaskLogFollowPrintsTheOutputAsItComesUntilTheAttemptEnds) {
  std::string id = AddShellTask("for i in 1 2 3 4 5; do echo line $i; sleep 0.3; done");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "running")) << worker->Output();
  RunResult r = Tx({"task", "log", id, "--follow"});  // returns once the attempt has ended
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "line 1\nline 2\nline 3\nline 4\nline 5\n");
  EXPECT_EQ(Status(id), "done");
}

TEST_F(WorkerTest, AFailingAgentIsRetriedWithBackoffUntilMaxAttemptsThenFails) {
  std::string id = AddShellTask("echo failing >&2; exit 3", {"--max-attempts", "2"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 2u);
  for (const auto& a : t["attempts"]) {
    EXPECT_EQ(a["end_reason"], "failed");
    EXPECT_EQ(a["exit_code"], 3);
  }
  EXPECT_NE(t["error"].get<std::string>().find("exited 3"), std::string::npos) << t.dump();
  EXPECT_EQ(ReadFile(Path(".tx/logs/" + id + "/2.log")), "failing\n");
}

TEST_F(WorkerTest, ExitCode137IsRecordedAsKilled) {
  std::string id = AddShellTask("exit 137", {"--max-attempts", "1"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["exit_code"], 137);
  EXPECT_NE(t["error"].get<std::string>().find("possibly out of memory"), std::string::npos)
      << t.dump();
}

TEST_F(WorkerTest, AnAgentReportingItselfWinsOverItsExitCode) {
  std::string id = AddShellTask("tx task done \"$TX_TASK_ID\" --result reported-by-agent; exit 1");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["result"], "reported-by-agent");
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "exited");
}

TEST_F(WorkerTest, ATaskThatAsksForReviewGoesToReviewOnExitZero) {
  std::string id = AddShellTask("exit 0", {"--review"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "review")) << worker->Output();
}

TEST_F(WorkerTest, ATimedOutAgentIgnoringSigtermIsKilledWithItsGrandchildren) {
  std::string id = AddShellTask(
      "trap \"\" TERM; sleep 300 & echo $! > grandchild.pid; echo $$ > agent.pid; "
      "while true; do sleep 1; done",
      {"--timeout", "1s", "--max-attempts", "1"});
  auto worker = StartWorker();
  pid_t agent = ReadPid("agent.pid");
  pid_t grandchild = ReadPid("grandchild.pid");
  ASSERT_GT(agent, 0);
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "timed_out");
  EXPECT_TRUE(WaitFor([&] { return !Running(agent) && !Running(grandchild); }, 10s));
}

TEST_F(WorkerTest, ASilentAgentIsStoppedByTheStallTimeout) {
  std::string id = AddShellTask("echo started; sleep 300", {"--max-attempts", "1"});
  auto worker = StartWorker({"--stall-timeout", "1s"});
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "stalled");
  EXPECT_NE(t["error"].get<std::string>().find("stalled"), std::string::npos);
}

TEST_F(WorkerTest, AnAgentThatKeepsPrintingIsNotStalled) {
  std::string id = AddShellTask("for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.3; done");
  auto worker = StartWorker({"--stall-timeout", "1s"});
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
}

TEST_F(WorkerTest, AgentsSeeTheirTaskInTheEnvironmentAndTheAllowList) {
  std::string id = AddShellTask(
      "echo id=$TX_TASK_ID worker=$TX_WORKER_ID token=$TX_CLAIM_TOKEN attempt=$TX_ATTEMPT "
      "db=$TX_DB socket=$TX_AGENT_SOCKET allowed=$TX_ALLOWED_COMMANDS; tx task add sneaky; "
      "echo add-exit=$?");
  auto worker = StartWorker({"--allowed-commands", "task.show,task.done"});
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  json t = Show(id);
  std::string log = ReadFile(Path(".tx/logs/" + id + "/1.log"));
  std::string worker_id = t["attempts"][0]["worker_id"];
  std::string token = std::to_string(t["attempts"][0]["token"].get<int>());
  // No way to the store of its own: its tx reaches the worker's socket.
  EXPECT_NE(log.find("id=" + id + " worker=" + worker_id + " token=" + token +
                     " attempt=1 db= socket=/tmp/tx-agent-"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("/tx.sock allowed=task.show,task.done"), std::string::npos) << log;
  EXPECT_NE(log.find("'tx task add' is not allowed here: the worker's allowed_commands="
                     "task.show,task.done"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("add-exit=2"), std::string::npos) << log;
  RunResult list = Tx({"--json", "task", "list"});
  EXPECT_EQ(json::parse(list.out).size(), 1u) << list.out;  // nothing was added
}

// Issue 25: the allow-list is the worker's, not the agent's environment's. Unsetting or widening
// TX_ALLOWED_COMMANDS, --force, another task's id, --db: all refused by the worker, while the
// agent's own report works.
TEST_F(WorkerTest, AnAgentCannotWidenItsAllowListOrActOnAnotherTask_Issue25) {
  std::string other = AddShellTask("exit 0", {"--queue", "elsewhere"});
  std::string script = "env -u TX_ALLOWED_COMMANDS tx task cancel " + other + "; echo unset=$?; " +
                       "TX_ALLOWED_COMMANDS=\"*\" tx task done " + other +
                       " --force; echo widened=$?; " + "tx task done " + other +
                       "; echo other=$?; " + "tx --db " + Path(".tx/tx.db") +
                       " task list; echo db=$?; " + "tx task show; echo show=$?; " +
                       "tx task done --result mine; echo mine=$?";
  std::string id = AddShellTask(script);
  auto worker = StartWorker({"--allowed-commands", "task.*"});
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  // Done once its report is in, which is before it says so.
  std::string log;
  ASSERT_TRUE(WaitFor([&] {
    log = ReadFile(Path(".tx/logs/" + id + "/1.log"));
    return log.find("\nmine=") != std::string::npos;  // not the command line tx task show printed
  })) << log;
  for (const char* refused : {"unset=2", "widened=2", "other=2", "db=2"}) {
    EXPECT_NE(log.find(refused), std::string::npos) << refused << "\n" << log;
  }
  EXPECT_NE(log.find("'tx task cancel' is not for an agent"), std::string::npos) << log;
  EXPECT_NE(log.find("'--force' is not for an agent"), std::string::npos) << log;
  EXPECT_NE(log.find("task " + other + " is not this agent's"), std::string::npos) << log;
  EXPECT_NE(log.find("'--db' is not for an agent"), std::string::npos) << log;
  EXPECT_NE(log.find("show=0"), std::string::npos) << log;
  EXPECT_NE(log.find("mine=0"), std::string::npos) << log;
  EXPECT_EQ(Show(id)["result"], "mine");
  EXPECT_EQ(Status(other), "ready") << "the other task was left alone";
}

// Issue 25: an agent's environment is built from [worker] pass_env, not inherited: a variable of
// the worker's that no pattern names never reaches it, nor do the worker's own TX_* variables.
// `tx worker start --print-env` shows what the agent gets.
TEST_F(WorkerTest, AnAgentGetsOnlyTheWorkersVariablesPassEnvAllows_Issue25) {
  const std::string print_env = std::string(TX_SOURCE_DIR) + "/tests/agents/print_env.sh";
  const Env worker_env = {{"TX_TEST_SECRET", "hunter2"},
                          {"MY_TOOL_HOME", "x"},
                          {"AWS_SECRET_ACCESS_KEY", "aws-secret"},
                          {"ANTHROPIC_API_KEY", "sk-ant-test"}};
  // Runs `command` as a task's agent under a worker with worker_env; returns the task's id.
  auto run = [&](const Args& command) {
    std::string joined;
    for (const auto& word : command) joined += (joined.empty() ? "" : " ") + word;
    RunResult r = Tx({"--json", "task", "add", "t", "--command", joined});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = json::parse(r.out)["id"];
    auto worker = StartWorker({}, worker_env);
    EXPECT_TRUE(WaitForStatus(id, "done")) << worker->Output();
    worker->Signal(SIGTERM);
    EXPECT_EQ(worker->Wait(30s), 0) << worker->Output();
    return id;
  };
  auto printed = [&](const std::string& id) {
    std::string log = ReadFile(Path(".tx/logs/" + id + "/1.log"));
    return log.substr(0, log.find("cwd="));
  };
  // "NAME=value" lines as a map, without the values of one claim.
  auto variables = [](const std::string& lines) {
    std::map<std::string, std::string> out;
    std::istringstream in(lines);
    for (std::string line; std::getline(in, line);) {
      std::size_t eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    for (const char* per_claim :
         {"TX_ATTEMPT", "TX_CLAIM_TOKEN", "TX_WORKER_ID", "TX_AGENT_SOCKET", "TX_AGENT_KEY"}) {
      EXPECT_EQ(out.erase(per_claim), 1u) << per_claim << " missing from\n" << lines;
    }
    return out;
  };

  std::ofstream(Path(".tx/config.toml"))
      << "[worker]\npass_env = [\"MY_TOOL_*\", \"PATH\", \"HOME\"]\n";
  std::string id = run(
      {print_env, "MY_TOOL_HOME", "TX_TEST_SECRET", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY"});
  EXPECT_EQ(printed(id),
            "MY_TOOL_HOME=x\nTX_TEST_SECRET\nAWS_SECRET_ACCESS_KEY\nANTHROPIC_API_KEY\n");
  // The whole environment, as env(1) prints it: the three allowed and the task's variables.
  id = run({"/usr/bin/env"});
  std::map<std::string, std::string> got = variables(ReadFile(Path(".tx/logs/" + id + "/1.log")));
  std::vector<std::string> names;
  for (const auto& [name, value] : got) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"HOME", "MY_TOOL_HOME", "PATH", "TX_MAX_SUBTASKS",
                                             "TX_TASK_ID"}));
  // --print-env, from the same config and environment, shows just that (a new claim's values
  // aside).
  RunResult shown = Tx({"worker", "start", "--print-env", id}, worker_env);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(variables(shown.out), got) << shown.out;

  // The default list: an agent CLI's API key passes, another service's secret does not.
  fs::remove(Path(".tx/config.toml"));
  id = run(
      {print_env, "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "MY_TOOL_HOME", "TX_TEST_SECRET"});
  EXPECT_EQ(printed(id),
            "ANTHROPIC_API_KEY=sk-ant-test\nAWS_SECRET_ACCESS_KEY\nMY_TOOL_HOME\nTX_TEST_SECRET\n");
}

TEST_F(WorkerTest, AnIdleWorkerHearsOfANewTaskWithoutWaitingForThePoll) {
  auto worker = StartWorker({"--poll-interval", "10m"});
  ASSERT_TRUE(WaitFor([&] {
    RunResult r = Tx({"--json", "worker", "list"});
    return r.exit_code == 0 && json::parse(r.out).size() == 1;
  }));
  std::this_thread::sleep_for(300ms);  // let it settle into its idle wait
  std::string id = AddShellTask("exit 0");
  EXPECT_TRUE(WaitForStatus(id, "done", 20s)) << worker->Output();
}

// Between two tasks a worker commits once: the outcome of one and the claim of the next share
// the transaction's instant (issue 27). Two commits, a moment apart, fall in the same
// millisecond about two times in three here: never 29 times running.
TEST_F(WorkerTest, TheOutcomeOfATaskAndTheClaimOfTheNextAreOneCommit) {
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) {
    ids.push_back(AddShellTask("exit 0", {"--priority", std::to_string(100 - i)}));
  }
  auto worker = StartWorker();
  for (const auto& id : ids) ASSERT_TRUE(WaitForStatus(id, "done", 30s)) << worker->Output();
  for (std::size_t i = 1; i < ids.size(); ++i) {
    json before = Show(ids[i - 1])["attempts"][0];
    json next = Show(ids[i])["attempts"][0];
    EXPECT_EQ(before["ended_at"], next["started_at"]) << ids[i - 1] << " then " << ids[i];
  }
}

TEST_F(WorkerTest, SigtermLetsTheRunningAgentFinishThenTheWorkerStops) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 1; exit 0");
  auto worker = StartWorker();
  ASSERT_GT(ReadPid("agent.pid"), 0);
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(60s), 0) << worker->Output();
  EXPECT_EQ(Status(id), "done");
  RunResult r = Tx({"--json", "worker", "list"});
  json w = json::parse(r.out)[0];
  EXPECT_EQ(w["status"], "stopped");
  EXPECT_EQ(w["reason"], "graceful-shutdown");
}

TEST_F(WorkerTest, ASecondSigtermCutsTheRunShortAndTheAttemptIsNotCounted) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 300");
  auto worker = StartWorker();
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  worker->Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return OnlyWorker(*this)["status"] == "stopping"; }, 10s));
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(60s), 0) << worker->Output();
  EXPECT_FALSE(Running(agent));
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown");
}

TEST_F(WorkerTest, KillingTheWorkerKillsItsAgentAndTheTaskRunsAgainElsewhere) {
  std::string id =
      AddShellTask("if [ -e first.pid ]; then exit 0; fi; echo $$ > first.pid; sleep 300");
  auto first = StartWorker();
  pid_t agent = ReadPid("first.pid");
  ASSERT_GT(agent, 0);
  first->Signal(SIGKILL);
  first->Wait(10s);
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 5s)) << "agent outlived its worker";
  // Once its heartbeats stop, a reconcile declares it dead and requeues the task.
  ASSERT_TRUE(WaitFor([&] {
    Tx({"orchestrator", "reconcile"});
    return Status(id) == "ready";
  }));
  auto second = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << second->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 2u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "worker_died");
  EXPECT_NE(t["attempts"][0]["worker_id"], t["attempts"][1]["worker_id"]);
}

TEST_F(WorkerTest, ANewWorkerInASlotKillsTheAgentTheHungOldOneLeftAndRedoesItsTask) {
  std::string id =
      AddShellTask("if [ -e first.pid ]; then exit 0; fi; echo $$ > first.pid; sleep 300");
  auto old = StartWorker({"--slot", "slot-1"});
  pid_t agent = ReadPid("first.pid");
  ASSERT_GT(agent, 0);
  ASSERT_TRUE(WaitFor(
      [&] {  // its heartbeat has recorded the agent's pid
        RunResult r = Tx({"--json", "worker", "status", "slot-1"});
        return json::parse(r.out)["metadata"].value("agent_pid", 0) == agent;
      },
      10s));
  // Hung: alive, silent, its agent still running.
  tx::testing::StopBetweenTransactions(*old, Path(".tx/tx.db"));
  auto fresh = StartWorker({"--slot", "slot-1"});
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << fresh->Output();
  ASSERT_TRUE(WaitForStatus(id, "done")) << fresh->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 2u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "worker_died");
  old->Signal(SIGKILL);
}

TEST_F(WorkerTest, ALostLeaseKillsTheAgentAndALateReportWithTheOldTokenIsRefused) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 300");
  auto worker = StartWorker();
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  json t = Show(id);
  std::string token = std::to_string(t["attempts"][0]["token"].get<int>());
  // Expired on both clocks the store keeps (core/claim.h): the worker and a report judge alike.
  Sql("UPDATE claims SET lease_expires_at = 1, lease_expires_steady = "
      "CASE WHEN lease_expires_steady IS NULL THEN NULL ELSE 1 END WHERE token = " +
      token);
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << worker->Output();
  RunResult late = Tx({"task", "done", id, "--token", token});
  EXPECT_EQ(late.exit_code, 4) << late.err;
  t = Show(id);
  EXPECT_NE(t["status"], "done");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "lease_lost");
}

TEST_F(WorkerTest, PauseFreezesTheAgentWithoutTimingItOutAndResumeLetsItFinish) {
  // Prints a line every 100 ms for about 2 s; the task times out after 3 s of running time.
  std::string id = AddShellTask("for i in $(seq 20); do echo $i; sleep 0.1; done",
                                {"--timeout", "3s", "--max-attempts", "1"});
  auto worker = StartWorker();
  std::string log = Path(".tx/logs/" + id + "/1.log");
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log).size() >= 4; })) << worker->Output();
  std::string wid = OnlyWorker(*this)["id"];
  RunResult r = Tx({"worker", "pause", wid});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitFor([&] { return OnlyWorker(*this)["status"] == "paused"; }, 10s))
      << worker->Output();
  std::this_thread::sleep_for(300ms);
  std::string frozen = ReadFile(log);
  std::this_thread::sleep_for(3500ms);  // longer than the task's timeout
  EXPECT_EQ(ReadFile(log), frozen) << "the agent kept printing while paused";
  EXPECT_EQ(Status(id), "running");
  EXPECT_EQ(Tx({"worker", "pause", wid}).exit_code, 4);  // already paused
  r = Tx({"worker", "resume", wid});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitForStatus(id, "done", 30s)) << worker->Output();
  EXPECT_EQ(ReadFile(log).substr(ReadFile(log).size() - 3), "20\n");
  EXPECT_EQ(Tx({"worker", "resume", wid}).exit_code, 4);  // not paused
}

TEST_F(WorkerTest, APausedIdleWorkerClaimsNothingUntilResumed) {
  auto worker = StartWorker();
  ASSERT_TRUE(WaitFor([&] { return OnlyWorker(*this)["status"] == "idle"; }));
  ASSERT_EQ(Tx({"worker", "pause", OnlyWorker(*this)["id"]}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return OnlyWorker(*this)["status"] == "paused"; }, 10s));
  std::string id = AddShellTask("exit 0");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(Status(id), "ready");
  ASSERT_EQ(Tx({"worker", "resume", OnlyWorker(*this)["id"]}).exit_code, 0);
  EXPECT_TRUE(WaitForStatus(id, "done", 30s)) << worker->Output();
}

TEST_F(WorkerTest, StopGracefulLetsTheTaskFinishAndStopReleasesItAtOnce) {
  std::string first = AddShellTask("sleep 1; exit 0");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(first, "running"));
  RunResult r = Tx({"worker", "stop", OnlyWorker(*this)["id"], "--graceful"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(worker->Wait(30s), 0) << worker->Output();
  EXPECT_EQ(Status(first), "done");
  EXPECT_EQ(OnlyWorker(*this)["status"], "stopped");

  std::string second = AddShellTask("echo $$ > agent.pid; sleep 300");
  auto again = StartWorker();
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  r = Tx({"worker", "stop", "--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(again->Wait(30s), 0) << again->Output();
  EXPECT_FALSE(Running(agent));
  json t = Show(second);
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "shutdown");
  EXPECT_EQ(Tx({"worker", "stop"}).exit_code, 2);
}

TEST_F(WorkerTest, AMemoryHungryAgentIsKilledAtItsLimit) {
  RunResult r = Tx({"--json", "task", "add", "hog", "--command",
                    "python3 -c 'b = bytearray(512 << 20); b[::4096] = b\"x\" * len(b[::4096]); "
                    "print(\"survived\")'",
                    "--max-attempts", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = json::parse(r.out)["id"];
  auto worker = StartWorker({"--memory-mb", "64"});
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_NE(t["attempts"][0]["exit_code"], 0);
  EXPECT_EQ(ReadFile(Path(".tx/logs/" + id + "/1.log")).find("survived"), std::string::npos);
}

TEST_F(WorkerTest, TheHeartbeatDocumentShowsEachSlotWorkingIdleOrOffline) {
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 300");
  auto worker = StartWorker({"--slot", "slot-1"});
  pid_t agent = ReadPid("agent.pid");
  ASSERT_GT(agent, 0);
  json doc;
  ASSERT_TRUE(WaitFor(
      [&] {  // the agent pid arrives with the next heartbeat
        RunResult r = Tx({"--json", "worker", "status", "--format", "heartbeats"});
        doc = json::parse(r.out);
        return doc["workers"]["slot-1"]["metadata"].value("agentPid", 0) == agent;
      },
      10s))
      << doc.dump();
  const json& slot = doc["workers"]["slot-1"];
  EXPECT_EQ(slot["slot"], "slot-1");
  EXPECT_EQ(slot["status"], "working");
  EXPECT_EQ(slot["task"], id);
  EXPECT_EQ(slot["taskTitle"], "t");
  EXPECT_EQ(slot["metadata"]["workerPid"], worker->pid());
  EXPECT_TRUE(slot["lastUpdate"].is_number_integer());
  EXPECT_TRUE(slot["startedAt"].is_number_integer());
  // Two signals sent back to back may arrive as one (POSIX does not queue them): the second
  // waits until the first has been seen.
  worker->Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return OnlyWorker(*this)["status"] == "stopping"; }, 10s));
  worker->Signal(SIGTERM);
  ASSERT_EQ(worker->Wait(30s), 0) << worker->Output();
  RunResult r = Tx({"--json", "worker", "status", "--format", "heartbeats"});
  doc = json::parse(r.out);
  EXPECT_EQ(doc["workers"]["slot-1"]["status"], "offline");
  EXPECT_EQ(doc["workers"]["slot-1"]["task"], nullptr);
  EXPECT_EQ(doc["workers"]["slot-1"]["metadata"]["offlineReason"], "graceful-shutdown");
  EXPECT_EQ(Tx({"worker", "status", "--format", "yaml"}).exit_code, 2);
}

TEST_F(WorkerTest, ATasksOwnLimitsOverrideTheWorkers) {
  std::string id = AddShellTask("ulimit -n", {"--metadata", "{\"limits\": {\"open_files\": 77}}"});
  auto worker = StartWorker({"--open-files", "500"});
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  EXPECT_EQ(ReadFile(Path(".tx/logs/" + id + "/1.log")), "77\n");
  RunResult bad = Tx({"task", "add", "x", "--metadata", "{\"limits\": {\"memory_mb\": -5}}"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("metadata.limits.memory_mb"), std::string::npos) << bad.err;
}

TEST_F(WorkerTest, AMissingProgramIsAFailedAttemptNamingIt) {
  RunResult r = Tx({"--json", "task", "add", "t", "--command", "/nonexistent/agent --go",
                    "--max-attempts", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = json::parse(r.out)["id"];
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  EXPECT_NE(Show(id)["error"].get<std::string>().find("/nonexistent/agent"), std::string::npos);
}

TEST_F(WorkerTest, AnAgentProfileTemplateGetsThePromptAsOneArgument) {
  RunResult r = Tx({"--json", "task", "add", "Fix it; rm -rf $HOME", "--description",
                    "The `login` page", "--step", "reproduce"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = json::parse(r.out)["id"];
  // printf prints its arguments one per line: the prompt arrives whole, nothing expanded.
  auto worker = StartWorker({"--agent", "printf '%s\\n' {task_id} {prompt}"});
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  std::string log = ReadFile(Path(".tx/logs/" + id + "/1.log"));
  EXPECT_EQ(log.rfind(id + "\nYou are working on task " + id + ": Fix it; rm -rf $HOME\n", 0), 0u)
      << log;
  EXPECT_NE(log.find("The `login` page"), std::string::npos);
  EXPECT_NE(log.find("1. reproduce"), std::string::npos);
}

TEST_F(WorkerTest, BadWorkerFlagsAreRefusedBeforeRegistering) {
  RunResult r = Tx({"worker", "start", "--lease", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'soon'"), std::string::npos) << r.err;
  r = Tx({"worker", "start", "--agent", "nosuchprofile"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown agent profile 'nosuchprofile'"), std::string::npos) << r.err;
  r = Tx({"worker", "start", "--agent", "run {promt}"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("{promt}"), std::string::npos) << r.err;
  RunResult list = Tx({"--json", "worker", "list"});
  EXPECT_EQ(json::parse(list.out).size(), 0u);
}

TEST_F(WorkerTest, ABadConfigFileIsRefusedNamingTheKey) {
  std::ofstream(Path(".tx/config.toml")) << "[worker]\nheartbeat_intervall = \"5s\"\n";
  RunResult r = Tx({"worker", "start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("worker.heartbeat_intervall"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// A cancel or a forced outcome revokes the claim and wakes the worker through the store's change
// watch: the agent is stopped within moments, not at the next heartbeat (30 s here).
TEST_F(WorkerTest, CancellingARunningTaskStopsItsAgentAtOnce) {
  auto worker = StartWorker({"--heartbeat-interval", "30s"});
  std::string id = AddShellTask("echo $$ > agent.pid; exec sleep 60");
  pid_t agent = ReadPid("agent.pid");
  ASSERT_TRUE(Running(agent));
  RunResult r = Tx({"task", "cancel", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << "agent still running";
  EXPECT_EQ(Status(id), "cancelled");

  std::string other = AddShellTask("echo $$ > agent2.pid; exec sleep 60");
  pid_t agent2 = ReadPid("agent2.pid");
  r = Tx({"task", "done", other, "--force", "--result", "by hand"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor([&] { return !Running(agent2); }, 10s)) << "agent still running";
  EXPECT_EQ(Status(other), "done");
  EXPECT_EQ(Show(other)["result"], "by hand") << "the worker does not overwrite the outcome";
}

}  // namespace
