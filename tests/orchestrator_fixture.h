#pragma once
// The fixture of the end-to-end tests of a pool: a store in a fresh directory, `tx orchestrator
// start` as a background process with short intervals, the CLI to read the store back, and a
// TearDown that stops everything and fails the test if any process of it is left behind.

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_probes.h"
#include "run_process.h"

namespace tx::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using Args = std::vector<std::string>;

// j[key] as an integer; 0 when absent, null or not a number.
inline std::int64_t IntAt(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<std::int64_t>()
                                                                        : 0;
}

class OrchestratorTest : public ::testing::Test {
 public:
  RunResult Tx(const Args& args) { return RunTx(args, {}, dir_.str()); }

 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    db_ = fs::canonical(dir_.path() / ".tx" / "tx.db").string();
  }

  void TearDown() override {
    Tx({"orchestrator", "stop", "--force"});  // nothing to stop is fine (exit 4)
    for (auto& o : orchestrators_) {
      if (o->Wait(30s) < 0) ADD_FAILURE() << "orchestrator " << o->pid() << " did not stop";
    }
    // Safety net: nothing of this test may outlive it — its workers carry TX_POOL_DB, its agents
    // TX_DB with this store, and both run inside the test directory.
    if (!WaitFor([&] { return OurProcesses().empty(); }, 20s)) {
      std::string left;
      for (pid_t pid : OurProcesses())
        left += std::to_string(pid) + ": " + CommandLineOf(pid) + "\n";
      ADD_FAILURE() << "processes left behind by the test:\n" << left;
    }
    for (int round = 0; round < 3; ++round) {
      for (pid_t pid : OurProcesses()) ::kill(pid, SIGKILL);
      if (WaitFor([&] { return OurProcesses().empty(); }, 5s)) break;
    }
  }

  // Every running process of this test: by the store in its environment or by its cwd.
  std::vector<pid_t> OurProcesses() {
    std::vector<pid_t> out;
    const std::string dir = dir_.str();
    for (pid_t pid : AllPids()) {
      if (pid == ::getpid() || !Running(pid)) continue;
      bool ours = false;
      for (const auto& e : EnvironOf(pid)) {
        if (e == "TX_POOL_DB=" + db_ || e == "TX_DB=" + db_) ours = true;
      }
      std::error_code ec;
      std::string cwd = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec).string();
      if (!ec && (cwd == dir || cwd.rfind(dir + "/", 0) == 0)) ours = true;
      if (ours) out.push_back(pid);
    }
    return out;
  }

  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  // `tx orchestrator start` in the foreground, as a background process of the test, with short
  // intervals (a flag in `extra` replaces its default); waits until the store shows it running.
  BackgroundProcess& StartOrchestrator(Args extra) {
    Args args = {"orchestrator", "start"};
    for (auto [flag, value] :
         {std::pair{"--heartbeat-interval", "500ms"}, std::pair{"--poll-interval", "1s"}}) {
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
        args.insert(args.end(), {flag, value});
      }
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::string log = Path("orchestrator-" + std::to_string(orchestrators_.size()) + ".out");
    orchestrators_.push_back(
        std::make_unique<BackgroundProcess>(TX_BINARY, args, Env{}, dir_.str(), log));
    BackgroundProcess& o = *orchestrators_.back();
    EXPECT_TRUE(WaitFor([&] {
      if (o.Wait(0ms) >= 0) return true;  // it exited: no point waiting
      json s = Status();
      return s.value("status", "") == "running" && s.value("pid", 0) == o.pid();
    })) << o.Output();
    EXPECT_LT(o.Wait(0ms), 0) << "the orchestrator exited at start:\n" << o.Output();
    return o;
  }

  // The last orchestrator's own output (its log lines).
  std::string Log() { return orchestrators_.empty() ? "" : orchestrators_.back()->Output(); }

  json Status() {
    RunResult r = Tx({"--json", "orchestrator", "status"});
    if (r.exit_code != 0) return json::object();
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json::object() : j;
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

  json Show(const std::string& id) {
    RunResult r = Tx({"--json", "task", "show", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
  std::string TaskStatus(const std::string& id) { return Show(id).value("status", ""); }

  json Tasks() { return json::parse(Tx({"--json", "task", "list"}).out); }
  std::vector<std::string> TaskIds(const std::string& status) {
    std::vector<std::string> out;
    for (const auto& t : Tasks()) {
      if (t["status"] == status) out.push_back(t["id"]);
    }
    return out;
  }
  int CountTasks(const std::string& status) { return static_cast<int>(TaskIds(status).size()); }

  json Workers() { return json::parse(Tx({"--json", "worker", "list"}).out); }
  json LiveWorkers() {
    json out = json::array();
    for (const auto& w : Workers()) {
      std::string s = w["status"];
      if (s != "stopped" && s != "dead") out.push_back(w);
    }
    return out;
  }

  // A worker started by hand, which no orchestrator supervises, heartbeating every 500 ms.
  std::unique_ptr<BackgroundProcess> StartHandWorker() {
    return std::make_unique<BackgroundProcess>(
        TX_BINARY,
        Args{"worker", "start", "--name", "by-hand", "--heartbeat-interval", "500ms",
             "--poll-interval", "1s"},
        Env{}, dir_.str(), Path("manual.out"));
  }

  // The only live worker, once its heartbeat has recorded an agent pid that `agent_ok` accepts;
  // null if that does not happen in time.
  json WaitForTheLiveWorkerWithAgent(const std::function<bool(int)>& agent_ok) {
    json w;
    WaitFor([&] {
      json live = LiveWorkers();
      if (live.size() != 1 || !agent_ok(live[0]["metadata"].value("agent_pid", 0))) return false;
      w = live[0];
      return true;
    });
    return w;
  }
  json Events(const std::string& type) {
    json out = json::array();
    for (const auto& e : json::parse(Tx({"--json", "events"}).out)) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }

  pid_t ReadPid(const std::string& file) { return ReadPidFile(Path(file)); }

  // A single-value SQL query on the store, read directly.
  std::string SqlValue(const std::string& sql) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 10'000);
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
        out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out;
  }

  TempDir dir_;
  std::string db_;
  std::vector<std::unique_ptr<BackgroundProcess>> orchestrators_;
};

}  // namespace tx::testing
