// Logs and signals, end to end (issue 24): SIGHUP reopens the orchestrator's and the workers' log
// files and reloads the config without stopping anything; a config that no longer reads is kept
// out with an error line; --log-format json makes every line of every log an object; the logs
// rotate past [orchestrator] log_max_mb.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator_fixture.h"
#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using tx::testing::Args;
using tx::testing::ReadFile;
using tx::testing::RunResult;
using tx::testing::WaitFor;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

class LogsTest : public tx::testing::OrchestratorTest {
 protected:
  // `tx orchestrator start --daemon` with short intervals; its pid once it runs (0 if it did not).
  pid_t StartDaemon(Args extra) {
    Args args = {"orchestrator", "start",           "--daemon", "--heartbeat-interval",
                 "500ms",        "--poll-interval", "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    json s = Status();
    EXPECT_EQ(s.value("status", ""), "running") << s.dump(2);
    return r.exit_code == 0 ? s.value("pid", 0) : 0;
  }

  std::string OrchestratorLog() { return ReadFile(Path(".tx/orchestrator.log")); }
  std::string WorkerLog(const std::string& slot) {
    return ReadFile(Path(".tx/logs/workers/" + slot + ".log"));
  }
  std::string AllLogs() {
    std::string all = OrchestratorLog();
    for (const auto& e : fs::directory_iterator(Path(".tx/logs/workers"))) {
      all += ReadFile(e.path().string());
    }
    return all;
  }

  // The live workers' pids by slot.
  std::map<std::string, pid_t> WorkerPids() {
    std::map<std::string, pid_t> out;
    for (const auto& w : LiveWorkers()) out[w.value("slot", "")] = w["pid"].get<pid_t>();
    return out;
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }
};

// logrotate's way without copytruncate: move the files away, then SIGHUP. Nothing stops — the
// same orchestrator and workers, their tasks finished in their first attempt — and each log
// starts again under its own name.
TEST_F(LogsTest, SighupReopensEveryLogAndStopsNothing_Issue24) {
  pid_t daemon = StartDaemon({"--workers", "2"});
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 2; })) << OrchestratorLog();
  std::map<std::string, pid_t> workers = WorkerPids();
  std::vector<std::string> tasks = {AddShellTask("sleep 5; echo one"),
                                    AddShellTask("sleep 5; echo two")};
  ASSERT_TRUE(WaitFor([&] { return CountTasks("running") == 2; })) << AllLogs();

  for (std::string name :
       {".tx/orchestrator.log", ".tx/logs/workers/slot-1.log", ".tx/logs/workers/slot-2.log"}) {
    fs::rename(Path(name), Path(name + ".moved"));
  }
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);

  // The orchestrator says so in a fresh orchestrator.log; each worker has a fresh file at once.
  ASSERT_TRUE(WaitFor([&] {
    return OrchestratorLog().find("Hangup received") != std::string::npos;
  })) << ReadFile(Path(".tx/orchestrator.log.moved"));
  EXPECT_NE(OrchestratorLog().find("orchestrator.log reopened"), std::string::npos)
      << OrchestratorLog();
  EXPECT_NE(OrchestratorLog().find("passed on to 2 workers"), std::string::npos)
      << OrchestratorLog();
  EXPECT_EQ(ReadFile(Path(".tx/orchestrator.log.moved")).find("Hangup received"),
            std::string::npos);
  EXPECT_TRUE(WaitFor([&] {
    return fs::exists(Path(".tx/logs/workers/slot-1.log")) &&
           fs::exists(Path(".tx/logs/workers/slot-2.log"));
  }));

  for (const auto& id : tasks) {
    EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }, 30s)) << AllLogs();
    EXPECT_EQ(Show(id)["attempts"].size(), 1u) << Show(id).dump(2);
  }
  // The next lines of each worker (its task's outcome, the reload it did after it) are in the
  // fresh file, none in the moved one.
  for (std::string slot : {"slot-1", "slot-2"}) {
    EXPECT_TRUE(WaitFor([&] {
      return WorkerLog(slot).find("Hangup received") != std::string::npos;
    })) << slot
        << ":\n"
        << WorkerLog(slot);
    EXPECT_NE(WorkerLog(slot).find("→ done"), std::string::npos) << WorkerLog(slot);
    std::string moved = ReadFile(Path(".tx/logs/workers/" + slot + ".log.moved"));
    EXPECT_NE(moved.find("registered"), std::string::npos) << moved;
    EXPECT_EQ(moved.find("→ done"), std::string::npos) << moved;
  }
  EXPECT_TRUE(tx::testing::Running(daemon));
  EXPECT_EQ(Status().value("pid", 0), daemon);
  EXPECT_EQ(WorkerPids(), workers) << "a worker was restarted";
  json status = Status();
  for (const auto& s : status["slots"]) EXPECT_EQ(s.value("restarts", -1), 0) << s.dump();

  // And it stops as ever.
  EXPECT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return !tx::testing::Running(daemon); }, 30s));
}

// A config that no longer reads is not applied: the orchestrator and its workers each say so in
// one error line, run on with the one they had, and still run tasks.
TEST_F(LogsTest, AConfigThatNoLongerReadsIsKeptOutWithAnErrorLine_Issue24) {
  Write(".tx/config.toml", "[orchestrator]\nworkers = 1\n");
  pid_t daemon = StartDaemon({});
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 1; })) << OrchestratorLog();
  std::map<std::string, pid_t> workers = WorkerPids();

  Write(".tx/config.toml", "[orchestrator\nworkers = 3\n");
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);
  const std::string kept = "the config was not reloaded, the running one is kept";
  ASSERT_TRUE(WaitFor([&] { return OrchestratorLog().find(kept) != std::string::npos; }))
      << OrchestratorLog();
  EXPECT_NE(OrchestratorLog().find("config.toml:1:"), std::string::npos) << OrchestratorLog();
  EXPECT_EQ(Count(OrchestratorLog(), kept), 1);
  EXPECT_TRUE(WaitFor([&] { return WorkerLog("slot-1").find(kept) != std::string::npos; }))
      << WorkerLog("slot-1");
  EXPECT_EQ(Count(WorkerLog("slot-1"), kept), 1);

  // (tx task add reads the file too.)
  Write(".tx/config.toml", "[orchestrator]\nworkers = 1\n");
  std::string id = AddShellTask("true");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << AllLogs();
  EXPECT_TRUE(tx::testing::Running(daemon));
  EXPECT_EQ(Status().value("status", ""), "running");
  EXPECT_EQ(Status().value("desired", 0), 1) << "the bad file's workers = 3 was not applied";
  EXPECT_EQ(WorkerPids(), workers);
}

// What may change at runtime does: the pool's size and backpressure at once, a worker's stall
// timeout for its next attempts; each process names what changed.
TEST_F(LogsTest, AChangedReloadableSettingTakesEffect_Issue24) {
  Write(".tx/config.toml", "[orchestrator]\nworkers = 1\n");
  tx::testing::BackgroundProcess& o = StartOrchestrator({});
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 1; })) << Log();
  pid_t first = WorkerPids().at("slot-1");

  Write(".tx/config.toml",
        "[worker]\nstall_timeout = \"1s\"\n\n[orchestrator]\nworkers = 2\nmax_queue_depth = 1\n");
  o.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 2; })) << Log();
  EXPECT_NE(Log().find("config reloaded (workers 1 → 2, max_queue_depth 0 → 1)"), std::string::npos)
      << Log();
  EXPECT_EQ(WorkerPids().at("slot-1"), first);
  EXPECT_TRUE(WaitFor([&] {
    return WorkerLog("slot-1").find("config reloaded (stall_timeout)") != std::string::npos;
  })) << WorkerLog("slot-1");

  // The stall timeout: a silent task is stopped after a second, not left to run.
  std::string id = AddShellTask("sleep 30", {"--max-attempts", "1"});
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "failed"; }, 20s)) << AllLogs();
  EXPECT_NE(Show(id).value("error", "").find("stalled"), std::string::npos) << Show(id).dump(2);
  // Backpressure: one ready task (in a queue no worker serves) fills the queue.
  EXPECT_EQ(Tx({"task", "add", "waits", "--queue", "nobody", "--command", "true"}).exit_code, 0);
  RunResult full = Tx({"task", "add", "refused", "--queue", "nobody", "--command", "true"});
  EXPECT_EQ(full.exit_code, 5) << full.err;
  EXPECT_LT(o.Wait(0ms), 0);
}

// Every line of the orchestrator's log and of its workers' is a JSON object with ts (UTC, Z),
// level and msg, through tasks, a failure whose message holds quotes, and a worker's death.
TEST_F(LogsTest, WithJsonLogsEveryLineOfEveryLogParses_Issue24) {
  pid_t daemon = StartDaemon({"--workers", "2", "--log-format", "json"});
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 2; })) << OrchestratorLog();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(AddShellTask("echo \"quoted\" \\\\ back; exit 0"));
  RunResult odd = Tx(
      {"--json", "task", "add", "odd", "--max-attempts", "1", "--command", "'no\"such-program'"});
  ASSERT_EQ(odd.exit_code, 0) << odd.err;
  ids.push_back(json::parse(odd.out)["id"]);
  for (const auto& id : ids) {
    EXPECT_TRUE(WaitFor([&] {
      std::string s = TaskStatus(id);
      return s == "done" || s == "failed";
    })) << AllLogs();
  }
  // A worker killed with its task running: the orchestrator marks it crashed and restarts it.
  std::string doomed = AddShellTask("sleep 30");
  json holder;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& w : LiveWorkers()) {
      if (w["current_task_id"].is_string() && w["current_task_id"] == doomed) holder = w;
    }
    return !holder.is_null();
  })) << AllLogs();
  ::kill(holder["pid"].get<pid_t>(), SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return OrchestratorLog().find("requeued") != std::string::npos; }))
      << OrchestratorLog();
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 2; })) << OrchestratorLog();
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);
  ASSERT_TRUE(
      WaitFor([&] { return OrchestratorLog().find("Hangup received") != std::string::npos; }));
  EXPECT_EQ(Tx({"task", "cancel", doomed}).exit_code, 0);
  EXPECT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return !tx::testing::Running(daemon); }, 30s));

  const std::regex ts(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  std::map<std::string, int> lines_of;
  bool slot_field = false, worker_field = false, task_field = false, quoted = false;
  std::vector<std::string> files = {Path(".tx/orchestrator.log")};
  for (const auto& e : fs::directory_iterator(Path(".tx/logs/workers"))) {
    files.push_back(e.path().string());
  }
  for (const auto& file : files) {
    for (const std::string& line : Lines(ReadFile(file))) {
      json j = json::parse(line, nullptr, false);
      ASSERT_TRUE(j.is_object()) << file << ": not a JSON object: " << line;
      ASSERT_TRUE(j["ts"].is_string() && std::regex_match(j["ts"].get<std::string>(), ts))
          << file << ": " << line;
      ASSERT_TRUE(j["level"].is_string()) << file << ": " << line;
      ASSERT_TRUE(j["msg"].is_string()) << file << ": " << line;
      ++lines_of[file];
      slot_field = slot_field || (file == files[0] && j.contains("slot"));
      worker_field = worker_field || (file != files[0] && j.contains("worker"));
      task_field = task_field || j.contains("task");
      quoted = quoted || j["msg"].get<std::string>().find("no\"such") != std::string::npos;
    }
  }
  EXPECT_GE(files.size(), 2u);
  for (const auto& file : files) EXPECT_GT(lines_of[file], 0) << file;
  EXPECT_TRUE(slot_field) << "no orchestrator line names its slot";
  EXPECT_TRUE(worker_field) << "no worker line names its worker";
  EXPECT_TRUE(task_field) << "no line names its task";
  EXPECT_TRUE(quoted) << "the failure with a quote was not logged";
  EXPECT_NE(OrchestratorLog().find("\"level\":\"warning\""), std::string::npos);
}

// [orchestrator] log_max_mb caps orchestrator.log and each worker's log: past it the file is
// NAME.1 (the one before NAME.2) and a fresh NAME takes the next lines.
TEST_F(LogsTest, TheLogsRotatePastLogMaxMb_Issue24) {
  Write(".tx/config.toml", "[orchestrator]\nworkers = 1\nlog_max_mb = 0.01\n");  // 10 KiB
  pid_t daemon = StartDaemon({});
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(WaitFor([&] { return WorkerPids().size() == 1; })) << OrchestratorLog();
  pid_t worker = WorkerPids().at("slot-1");
  // Each SIGHUP is a line of the orchestrator's and one of its worker's.
  auto rotated = [&] {
    return fs::exists(Path(".tx/orchestrator.log.2")) &&
           fs::exists(Path(".tx/logs/workers/slot-1.log.2"));
  };
  for (int i = 0; i < 600 && !rotated(); ++i) {
    ::kill(daemon, SIGHUP);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(WaitFor(rotated)) << OrchestratorLog();
  EXPECT_TRUE(tx::testing::Running(daemon));
  EXPECT_EQ(WorkerPids().at("slot-1"), worker);
  for (std::string base : {".tx/orchestrator.log", ".tx/logs/workers/slot-1.log"}) {
    EXPECT_FALSE(fs::exists(Path(base + ".3"))) << base << ": two older files are kept";
    for (const std::string& name : {base, base + ".1", base + ".2"}) {
      std::string text = ReadFile(Path(name));
      // The cap (10486 bytes) and at most the line that passed it.
      EXPECT_LT(text.size(), 11'000u) << name;
      EXPECT_TRUE(text.empty() || text.back() == '\n') << name << ": whole lines";
      for (const std::string& line : Lines(text)) {
        EXPECT_TRUE(line.size() > 24 && line[23] == 'Z') << name << ": " << line;
      }
    }
  }
  std::string id = AddShellTask("true");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << WorkerLog("slot-1");
}

}  // namespace
