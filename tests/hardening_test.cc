// Hardening, end to end (issue 23): what an operator's day and a hostile client do to a pool.
// Each test failed before its fix: a SIGHUP that stopped the pool, a slot's own agent given twice,
// a task nobody can run added in silence, a clock step that killed a healthy worker, a full disk
// that flooded the log and then killed the live workers, values that make no sense accepted.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator_fixture.h"
#include "process_probes.h"
#include "run_process.h"
#include "stop_between_transactions.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using tx::testing::Args;
using tx::testing::BackgroundProcess;
using tx::testing::Env;
using tx::testing::RunResult;
using tx::testing::WaitFor;

constexpr char kFakeTime[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

class HardeningTest : public tx::testing::OrchestratorTest {
 protected:
  // The pool's live workers, by slot.
  std::map<std::string, json> LiveBySlot() {
    std::map<std::string, json> out;
    for (const auto& w : LiveWorkers()) out[w.value("slot", "")] = w;
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
};

// logrotate sends SIGHUP, and so does a closed terminal: nothing stops (each reloads instead:
// tests/logs_test.cc).
TEST_F(HardeningTest, SighupStopsNeitherTheOrchestratorNorItsWorkers) {
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1; })) << Log();
  pid_t worker = LiveWorkers()[0]["pid"].get<pid_t>();
  o.Signal(SIGHUP);
  ::kill(worker, SIGHUP);
  std::this_thread::sleep_for(1s);
  EXPECT_LT(o.Wait(0ms), 0) << "the orchestrator stopped on SIGHUP:\n" << Log();
  EXPECT_EQ(Status().value("status", ""), "running");
  ASSERT_EQ(LiveWorkers().size(), 1u);
  EXPECT_EQ(LiveWorkers()[0]["pid"].get<pid_t>(), worker) << "the worker was restarted";
  std::string id = AddShellTask("true");
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
  EXPECT_NE(Log().find("Hangup received: config reloaded"), std::string::npos) << Log();
}

// The README's own example: a pool started with --agent, one slot with an agent of its own.
TEST_F(HardeningTest, ASlotsOwnAgentReplacesThePoolsInsteadOfCrashLooping) {
  std::ofstream(Path(".tx/config.toml")) << "[agents.own]\nargv = [\"sh\", \"-c\", \"true\"]\n"
                                         << "[agents.pools]\nargv = [\"sh\", \"-c\", \"true\"]\n"
                                         << "[orchestrator.slots.slot-2]\nagent = \"own\"\n";
  StartOrchestrator({"--workers", "2", "--agent", "pools"});
  ASSERT_TRUE(WaitFor([&] { return LiveBySlot().size() == 2; }, 30s)) << Log();
  std::map<std::string, json> live = LiveBySlot();
  EXPECT_EQ(live["slot-1"]["metadata"].value("agent", ""), "pools");
  EXPECT_EQ(live["slot-2"]["metadata"].value("agent", ""), "own");
  json status = Status();  // (a range over a temporary's member would dangle)
  for (const auto& s : status["slots"]) {
    EXPECT_EQ(s.value("restarts", -1), 0) << s.dump();
    EXPECT_EQ(s.value("state", ""), "running") << s.dump();
  }
  EXPECT_EQ(Log().find("At Most 1"), std::string::npos) << Log();
}

TEST_F(HardeningTest, ATaskNobodyCanRunIsAddedWithAWarningAndMarkedWhileItWaits) {
  RunResult none = Tx({"--json", "task", "add", "first", "--command", "true"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(json::parse(none.out)["warnings"],
            json::array({"no worker can claim it now: no worker is running"}));
  EXPECT_NE(none.err.find("tx: warning: "), std::string::npos) << none.err;

  auto worker = StartHandWorker();
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1; })) << worker->Output();
  ASSERT_TRUE(WaitFor([&] { return CountTasks("done") == 1; })) << worker->Output();

  RunResult gpu =
      Tx({"--json", "task", "add", "needs a gpu", "--requires", "gpu", "--command", "true"});
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  json added = json::parse(gpu.out);
  std::string id = added["id"];
  EXPECT_EQ(added["warnings"],
            json::array({"no worker can claim it now: no running worker of queue 'default' has "
                         "gpu"}));
  RunResult plain = Tx({"task", "add", "for the night", "--queue", "nightly", "--command", "true"});
  ASSERT_EQ(plain.exit_code, 0);
  EXPECT_NE(plain.err.find("no running worker takes queue 'nightly'"), std::string::npos)
      << plain.err;
  RunResult fine = Tx({"--json", "task", "add", "anyone", "--command", "sleep 0.5"});
  EXPECT_FALSE(json::parse(fine.out).contains("warnings")) << fine.out;
  EXPECT_EQ(fine.err, "");

  // Marked while it waits, in the list and in the task, with the reason.
  json listed;
  for (const auto& t : Tasks()) {
    if (t["id"] == id) listed = t;
  }
  EXPECT_EQ(listed.value("unclaimable", ""), "no running worker of queue 'default' has gpu");
  EXPECT_EQ(Show(id).value("unclaimable", ""), "no running worker of queue 'default' has gpu");
  RunResult table = Tx({"task", "list"});
  EXPECT_NE(table.out.find(id + ": no running worker of queue 'default' has gpu"),
            std::string::npos)
      << table.out;
  RunResult shown = Tx({"task", "show", id});
  EXPECT_NE(shown.out.find("no worker can claim it now"), std::string::npos) << shown.out;
}

// A clock two minutes ahead (a step of the wall clock; the monotonic clock does not move):
// silence is judged on the steady clock, so the healthy worker lives.
TEST_F(HardeningTest, AClockStepKillsNoHealthyWorker) {
  ASSERT_TRUE(fs::exists(kFakeTime)) << kFakeTime << " missing: install Debian's faketime";
  auto worker = StartHandWorker();  // heartbeats every 500 ms
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1; })) << worker->Output();
  Env ahead = {{"LD_PRELOAD", kFakeTime},
               {"FAKETIME", "+2m"},
               {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
               {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0"}};
  RunResult date = tx::testing::RunProcess("/bin/date", {"+%s"}, ahead, dir_.str());
  ASSERT_GT(std::stoll(date.out), time(nullptr) + 100) << "faketime did not step the clock";
  RunResult r = tx::testing::RunTx({"--json", "orchestrator", "reconcile"}, ahead, dir_.str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).value("dead_workers", -1), 0) << r.out;
  EXPECT_EQ(json::parse(r.out).value("agents_killed", -1), 0) << r.out;
  ASSERT_EQ(LiveWorkers().size(), 1u) << "declared dead under a clock two minutes ahead";
  EXPECT_EQ(worker->Wait(0ms), -1);
  // Real silence is still found: a worker stopped (SIGSTOP) is dead within its two intervals.
  tx::testing::StopBetweenTransactions(*worker, Path(".tx/tx.db"));
  ASSERT_TRUE(WaitFor(
      [&] {
        RunResult again =
            tx::testing::RunTx({"--json", "orchestrator", "reconcile"}, ahead, dir_.str());
        return LiveWorkers().empty();
      },
      20s));
  json dead = Events("worker.dead");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0]["data"].value("reason", ""), "stale-heartbeat");
  worker->Signal(SIGCONT);
}

// A worker's own wall clock stepped two hours ahead while its agent runs (the lease is 30 min): it
// judges its lease on the steady clock, as the store does, so it neither kills its agent nor
// takes the step for a lost lease, and the task ends done in its first attempt.
TEST_F(HardeningTest, AClockStepUnderARunningAgentIsNotTakenForALostLease) {
  ASSERT_TRUE(fs::exists(kFakeTime)) << kFakeTime << " missing: install Debian's faketime";
  std::string offset = Path("offset");
  std::ofstream(offset) << "+0\n";
  std::string id = AddShellTask("echo $$ > agent.pid; sleep 4; echo finished");
  BackgroundProcess worker(
      TX_BINARY, {"worker", "start", "--heartbeat-interval", "300ms", "--poll-interval", "1s"},
      {{"LD_PRELOAD", kFakeTime},
       {"FAKETIME_TIMESTAMP_FILE", offset},
       {"FAKETIME_NO_CACHE", "1"},
       {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
       {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0"}},
      dir_.str(), Path("stepped.out"));
  ASSERT_TRUE(WaitFor([&] { return fs::exists(Path("agent.pid")); }, 30s)) << worker.Output();
  std::ofstream(offset) << "+2h\n";
  // Nor for an overdue renewal: busy, the worker beats every 75 ms as before (half the 150 ms it
  // promises while busy, half its 300 ms interval), not every 20 ms (a hundred beats in 2 s).
  std::set<std::string> beats;
  for (auto until = std::chrono::steady_clock::now() + 2s;
       std::chrono::steady_clock::now() < until;) {
    for (const auto& w : Workers()) beats.insert(w.value("last_heartbeat_at", ""));
  }
  EXPECT_LE(beats.size(), 40u) << "heartbeats in 2 s after the step";
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }, 60s)) << worker.Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 1u) << t.dump();
  EXPECT_EQ(t["attempts"][0].value("end_reason", ""), "exited") << t.dump();
  EXPECT_EQ(t["attempts"][0].value("exit_code", -1), 0) << t.dump();
  EXPECT_EQ(worker.Output().find("lease"), std::string::npos) << worker.Output();
}

// The store's disk full (a small tmpfs) for a while: the reconciler backs off instead of retrying
// every 50 ms, and once the disk has room again the live workers are not declared dead.
TEST_F(HardeningTest, AFullDiskIsWaitedOutWithBackoffAndKillsNoLiveWorker) {
  fs::path disk = dir_.path() / "disk";
  fs::create_directories(disk);
  ASSERT_EQ(::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=8m"), 0)
      << "cannot mount a tmpfs for the full disk (this test needs root): " << std::strerror(errno);
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{disk.string()};
  ASSERT_EQ(tx::testing::RunTx({"init"}, {}, disk.string()).exit_code, 0);
  std::string log = (disk.parent_path() / "orch-disk.out").string();
  BackgroundProcess o(TX_BINARY,
                      {"orchestrator", "start", "--workers", "2", "--heartbeat-interval", "500ms",
                       "--poll-interval", "1s"},
                      {}, disk.string(), log);
  auto tx = [&](const Args& args) { return tx::testing::RunTx(args, {}, disk.string()); };
  auto live = [&] {
    RunResult r = tx({"--json", "worker", "list"});
    int n = 0;
    if (r.exit_code != 0) return -1;
    for (const auto& w : json::parse(r.out)) {
      n += w["status"] != "dead" && w["status"] != "stopped";
    }
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return live() == 2; }, 30s)) << o.Output();

  // Fill the disk, hold it full for 8 s, then free it.
  fs::path filler = disk / "filler";
  {
    std::ofstream f(filler, std::ios::binary);
    std::string mb(1 << 20, 'x');
    while (f.write(mb.data(), static_cast<std::streamsize>(mb.size()))) {
    }
  }
  std::size_t before = o.Output().size();
  std::this_thread::sleep_for(8s);
  std::string during = o.Output().substr(before);
  fs::remove(filler);
  int warnings = Count(during, "reconcile: ");
  EXPECT_LE(warnings, 10) << "the reconciler retried without backing off:\n" << during;

  // The disk has room again: both workers live on, and work goes on.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(live(), 2) << o.Output();
  RunResult events = tx({"--json", "events"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  for (const auto& e : json::parse(events.out)) {
    EXPECT_NE(e["type"], "worker.dead") << e.dump();
  }
  RunResult added = tx({"--json", "task", "add", "after", "--command", "true"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string id = json::parse(added.out)["id"];
  EXPECT_TRUE(WaitFor(
      [&] {
        RunResult t = tx({"--json", "task", "show", id});
        return t.exit_code == 0 && json::parse(t.out).value("status", "") == "done";
      },
      60s))
      << o.Output();
  tx({"orchestrator", "stop"});
  EXPECT_GE(o.Wait(60s), 0);
}

TEST_F(HardeningTest, ValuesThatMakeNoSenseAreRefusedWithOneLine) {
  struct Case {
    Args args;
    std::string says;
  };
  std::string deep(60'000, '[');
  deep += std::string(60'000, ']');
  std::string deep_object = "{\"a\":" + deep + "}";
  for (const Case& c : std::vector<Case>{
           {{"worker", "start", "--heartbeat-interval", "1ms", "--lease", "1ms"},
            "heartbeat interval must be between 100ms"},
           {{"worker", "start", "--heartbeat-interval", "10s", "--lease", "5s"},
            "must be at least the heartbeat interval"},
           {{"worker", "start", "--poll-interval", "1ms"}, "poll interval must be at least"},
           {{"worker", "start", "--name", "bad name!"}, "worker name"},
           {{"claim", "--next", "--lease", "10ms", "--worker", "w"}, "a lease must be at least"},
           {{"task", "add", "deep", "--metadata", deep_object}, "nests deeper than 128"},
       }) {
    RunResult r = Tx(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(Count(r.err, "\n"), 1) << r.err;
  }
  EXPECT_EQ(CountTasks("ready"), 0);  // nothing written
}

// The interval a busy worker promises (two of them without a beat and it is dead) has a floor,
// and a ceiling: the heartbeat interval.
TEST_F(HardeningTest, ARunningHeartbeatIntervalOutOfRangeIsRefusedWithOneLine) {
  std::ofstream(Path(".tx/config.toml")) << "[worker]\nheartbeat_interval_running = \"10ms\"\n";
  RunResult r = Tx({"worker", "start"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("heartbeat interval while running must be between 50ms"), std::string::npos)
      << r.err;
  EXPECT_EQ(Count(r.err, "\n"), 1) << r.err;
  // Longer than the heartbeat interval: a worker that just ended a task could go stale before
  // its next beat.
  std::ofstream(Path(".tx/config.toml"))
      << "[worker]\nheartbeat_interval = \"1s\"\nheartbeat_interval_running = \"5s\"\n";
  r = Tx({"worker", "start"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("and the heartbeat interval (1s), not 5s"), std::string::npos) << r.err;
  EXPECT_EQ(Tx({"--json", "worker", "list"}).out.find("worker-"), std::string::npos);
}

TEST_F(HardeningTest, ABaseThatDoesNotExistIsRefusedWhenTheTaskIsAdded) {
  fs::path repo = dir_.path() / "repo";
  fs::create_directories(repo);
  auto git = [&](const Args& args) {
    Args all = {"-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@t"};
    all.insert(all.end(), args.begin(), args.end());
    return tx::testing::RunProcess("/usr/bin/git", all, {}, dir_.str());
  };
  ASSERT_EQ(git({"init", "-q", "-b", "main"}).exit_code, 0);
  ASSERT_EQ(git({"commit", "-q", "--allow-empty", "-m", "first"}).exit_code, 0);
  RunResult bad =
      Tx({"task", "add", "t", "--repo", repo.string(), "--base", "nosuch", "--command", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("base 'nosuch' is not a branch or commit of"), std::string::npos)
      << bad.err;
  EXPECT_EQ(CountTasks("ready"), 0);
  RunResult good =
      Tx({"task", "add", "t", "--repo", repo.string(), "--base", "main", "--command", "true"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

// Issue 23, item 15: the store, its tokens and every log are the owner's alone.
TEST_F(HardeningTest, TheStoreAndItsLogsAreTheOwnersAlone) {
  auto mode = [](const fs::path& p) {
    return static_cast<unsigned>(fs::status(p).permissions() & fs::perms::mask);
  };
  EXPECT_EQ(mode(Path(".tx")), 0700u);
  EXPECT_EQ(mode(Path(".tx/tx.db")), 0600u);
  EXPECT_EQ(mode(Path(".tx/token")), 0600u);
  StartOrchestrator({"--workers", "1"});
  std::string id = AddShellTask("echo logged");
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Log();
  for (const char* suffix : {"-wal", "-shm"}) {
    fs::path f = Path(std::string(".tx/tx.db") + suffix);
    if (fs::exists(f)) {
      EXPECT_EQ(mode(f), 0600u) << f;
    }
  }
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(Path(".tx/logs"))) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(mode(e.path()), 0600u) << e.path();
  }
  EXPECT_GE(files, 2);  // the attempt's log and the worker's own
  // An older store is tightened by tx init.
  fs::permissions(Path(".tx"), fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
  fs::permissions(Path(".tx/tx.db"), fs::perms::owner_read | fs::perms::owner_write |
                                         fs::perms::group_read | fs::perms::others_read);
  ASSERT_EQ(Tx({"init"}).exit_code, 0);
  EXPECT_EQ(mode(Path(".tx")), 0700u);
  EXPECT_EQ(mode(Path(".tx/tx.db")), 0600u);
}

// Symlinks planted under .tx are not followed: not for an attempt's log, not for the pid file.
TEST_F(HardeningTest, SymlinksUnderTxAreNotFollowed) {
  fs::path outside = Path("outside.txt");
  std::ofstream(outside) << "keep\n";
  std::string id = AddShellTask("echo overwritten", {"--max-attempts", "1"});
  fs::create_directories(Path(".tx/logs/" + id));
  fs::create_symlink(outside, Path(".tx/logs/" + id + "/1.log"));
  StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] {
    json t = Show(id);
    return !t["attempts"].empty() && t["attempts"][0].contains("end_reason") &&
           !t["attempts"][0]["end_reason"].is_null();
  })) << Show(id).dump();
  EXPECT_EQ(tx::testing::ReadFile(outside.string()), "keep\n");
  Tx({"orchestrator", "stop"});
  ASSERT_GE(orchestrators_.back()->Wait(60s), 0) << Log();

  fs::path pid_target = Path("pid-target.txt");
  std::ofstream(pid_target) << "keep\n";
  fs::remove(Path(".tx/orchestrator.pid"));
  fs::create_symlink(pid_target, Path(".tx/orchestrator.pid"));
  BackgroundProcess start(TX_BINARY, {"orchestrator", "start", "--workers", "0"}, Env{}, dir_.str(),
                          Path("symlinked-start.out"));
  int rc = start.Wait(30s);
  if (rc < 0) start.Signal(SIGKILL);
  EXPECT_NE(rc, 0) << start.Output();
  EXPECT_NE(start.Output().find("orchestrator.pid"), std::string::npos) << start.Output();
  EXPECT_EQ(tx::testing::ReadFile(pid_target.string()), "keep\n");
}

// A title cannot drive the terminal: control characters are shown escaped in tables and details.
TEST_F(HardeningTest, ControlCharactersInTitlesAreEscapedOnTheTerminal) {
  std::string title =
      "\x1b]0;pwned\x07\x1b[31mred\xc2\x9b"
      "2J";
  RunResult added = Tx({"task", "add", title});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string id = added.out.substr(0, added.out.find(' '));
  for (const Args& args : {Args{"task", "list"}, Args{"task", "show", id}}) {
    RunResult r = Tx(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args[1];
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << args[1];
    EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << args[1];
    EXPECT_NE(r.out.find("\\x1b]0;pwned\\x07\\x1b[31mred\\u009b2J"), std::string::npos) << r.out;
  }
  EXPECT_EQ(added.out.find('\x1b'), std::string::npos) << added.out;
  // JSON keeps the title exactly as given.
  EXPECT_EQ(json::parse(Tx({"--json", "task", "show", id}).out)["title"], title);
}

// A pool whose store was deleted under it says so and stops, rather than run on a file nobody
// else can reach.
TEST_F(HardeningTest, ADeletedStoreStopsThePoolWithAnError) {
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1; })) << Log();
  pid_t worker = LiveWorkers()[0]["pid"].get<pid_t>();
  fs::path moved = Path("moved-away");
  fs::rename(Path(".tx"), moved);  // as rm -rf .tx, but the logs stay readable here
  int rc = o.Wait(60s);
  EXPECT_EQ(rc, 1) << Log();
  std::string log = tx::testing::ReadFile((moved / "orchestrator.log").string()) + Log();
  EXPECT_NE(log.find("was deleted or replaced"), std::string::npos) << log;
  EXPECT_TRUE(WaitFor([&] { return ::kill(worker, 0) != 0; }, 10s)) << "its worker still runs";
  fs::rename(moved, Path(".tx"));
}

}  // namespace
