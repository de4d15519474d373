// tx top end to end (issue 24): the real binary beside a running pool — one frame (--once) with
// the pool's workers, the queue and the newest events; plain frames every interval when stdout
// is no terminal, without a single escape; and on a pseudo-terminal of the test's own (forkpty):
// the alternate screen, colours unless NO_COLOR is set, a redraw at a new size, and SIGINT
// giving the screen back with exit 0; and one frame of a pool on PostgreSQL.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "orchestrator_fixture.h"
#include "pg_test_db.h"
#include "process_probes.h"
#include "run_process.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;
using Args = std::vector<std::string>;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t CountOf(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// An SGR sequence that sets a colour or an attribute: ESC [ digits;… m.
bool HasColour(const std::string& text) {
  return std::regex_search(text, std::regex("\x1b\\[[0-9;]*m"));
}

// tx run on a pseudo-terminal of its own (its stdin, stdout and stderr), `rows` × `cols`, with
// the test's environment minus TX_* plus `env`. What it writes is read from the master side.
class PtyTx {
 public:
  PtyTx(const Args& args, const Env& env, const std::string& cwd, unsigned short rows,
        unsigned short cols) {
    std::vector<std::string> argv_s{TX_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = detail::ChildEnvironment(env);
    std::vector<char*> argv = detail::CStrings(argv_s);
    std::vector<char*> envp = detail::CStrings(env_s);
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      // The child: only async-signal-safe calls before exec.
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      ::execve(TX_BINARY, argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~PtyTx() {
    if (pid_ > 0 && !exit_code_) {
      ::kill(pid_, SIGKILL);
      int status;
      ::waitpid(pid_, &status, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  PtyTx(const PtyTx&) = delete;
  PtyTx& operator=(const PtyTx&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Reads what it writes until `done(everything so far)` holds, or `limit` passes, or it closes
  // the terminal. Whether `done` held.
  bool ReadUntil(const std::function<bool(const std::string&)>& done,
                 std::chrono::milliseconds limit = 30s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done(out_)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || closed_) return done(out_);
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(master_, buf, sizeof buf);
      if (n > 0) {
        out_.append(buf, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        closed_ = true;  // EIO: every descriptor of the terminal's other side is closed
      }
    }
    return true;
  }

  // The terminal's new size: the kernel sends SIGWINCH to its foreground process group.
  void Resize(unsigned short rows, unsigned short cols) {
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    ::ioctl(master_, TIOCSWINSZ, &ws);
  }

  // Its exit code (128 + N for signal N) once it has ended within `limit`, reading what it
  // writes meanwhile; -1 if it has not.
  int Wait(std::chrono::milliseconds limit = 30s) {
    ReadUntil([](const std::string&) { return false; }, limit);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!exit_code_) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      ::usleep(10'000);
    }
    return *exit_code_;
  }

  const std::string& out() const { return out_; }

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  bool closed_ = false;
  std::string out_;
  std::optional<int> exit_code_;
};

class Top : public OrchestratorTest {
 protected:
  // A pool of two workers, each busy with a long task, one task done and one failed: states
  // of every colour, and events to show.
  void StartBusyPool() {
    done_ = AddShellTask("true");
    failed_ = AddShellTask("exit 3", {"--max-attempts", "1"});
    StartOrchestrator({"--workers", "2"});
    ASSERT_TRUE(WaitFor([&] {
      return TaskStatus(done_) == "done" && TaskStatus(failed_) == "failed";
    })) << Log();
    long_[0] = AddShellTask("sleep 60");
    long_[1] = AddShellTask("sleep 60");
    ASSERT_TRUE(WaitFor([&] { return CountTasks("running") == 2; })) << Log();
  }

  std::string done_, failed_, long_[2];
};

TEST_F(Top, OnceShowsThePoolsWorkersTheQueueAndTheNewestEvents_Issue24) {
  StartBusyPool();
  RunResult r = Tx({"top", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string& out = r.out;
  EXPECT_TRUE(Contains(out, "orchestrator: running (pid ")) << out;
  EXPECT_TRUE(Contains(out, "pool: 2 running of 2 wanted")) << out;
  for (const auto& w : LiveWorkers()) {
    EXPECT_TRUE(Contains(out, w["id"].get<std::string>())) << w["id"] << " in\n" << out;
  }
  EXPECT_TRUE(Contains(out, "slot-1")) << out;
  EXPECT_TRUE(Contains(out, "slot-2")) << out;
  EXPECT_TRUE(Contains(out, long_[0])) << "a running task: " << out;
  EXPECT_TRUE(Contains(out, "queue: running 2 · done 1 · failed 1\n")) << out;
  EXPECT_TRUE(Contains(out, "events (newest first):")) << out;
  EXPECT_TRUE(Contains(out, "task.claimed  " + long_[1])) << out;
  EXPECT_TRUE(Contains(out, "task.failed  " + failed_)) << out;
  EXPECT_FALSE(Contains(out, "\x1b")) << "not a terminal: no escape at all";
  EXPECT_TRUE(r.err.empty()) << r.err;

  RunResult j = Tx({"--json", "top", "--once"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["pool"]["status"], "running");
  EXPECT_EQ(doc["pool"]["slots"].size(), 2u);
  EXPECT_EQ(doc["workers"].size(), 2u);
  EXPECT_EQ(doc["pool"]["queue"]["running"], 2);
  EXPECT_FALSE(doc["events"].empty());
}

TEST_F(Top, OffATerminalItPrintsPlainFramesEveryIntervalAndStopsOnSigint) {
  StartBusyPool();
  BackgroundProcess top(TX_BINARY, {"top", "--interval", "200ms"}, {}, dir_.str(), Path("top.out"));
  ASSERT_TRUE(WaitFor([&] { return CountOf(top.Output(), "tx top — ") >= 3; }, 30s))
      << top.Output();
  top.Signal(SIGINT);
  EXPECT_EQ(top.Wait(10s), 0) << top.Output();
  std::string out = top.Output();
  EXPECT_FALSE(Contains(out, "\x1b")) << "no escape at all";
  EXPECT_TRUE(Contains(out, "every 200ms")) << out;
  EXPECT_TRUE(Contains(out, "\n\ntx top — ")) << "frames are separated by a blank line: " << out;
  EXPECT_TRUE(Contains(out, "queue: running 2")) << out;
}

TEST_F(Top, OnATerminalItDrawsInPlaceInColourRedrawsOnResizeAndGivesTheScreenBackOnSigint) {
  StartBusyPool();
  PtyTx top({"top", "--interval", "300ms"}, {{"TERM", "xterm"}}, dir_.str(), 40, 120);
  ASSERT_TRUE(top.started());
  ASSERT_TRUE(top.ReadUntil([](const std::string& s) { return CountOf(s, "tx top — ") >= 2; }))
      << top.out();
  EXPECT_EQ(top.out().rfind("\x1b[?1049h", 0), 0u) << "the alternate screen first";
  EXPECT_TRUE(Contains(top.out(), "\x1b[?25l")) << "the cursor hidden";
  EXPECT_TRUE(Contains(top.out(), "\x1b[H")) << "drawn from the top left";
  EXPECT_TRUE(HasColour(top.out())) << top.out();
  EXPECT_TRUE(Contains(top.out(), "\x1b[32mrunning\x1b[0m")) << top.out();
  EXPECT_TRUE(Contains(top.out(), "\x1b[31mfailed\x1b[0m")) << top.out();

  // A narrower terminal: the next frame fits it.
  std::size_t frames = CountOf(top.out(), "\x1b[H");
  top.Resize(30, 60);
  ASSERT_TRUE(top.ReadUntil([&](const std::string& s) { return CountOf(s, "\x1b[H") > frames; }))
      << top.out();
  EXPECT_TRUE(Contains(top.out(), "…")) << "lines cut at 60 columns: " << top.out();

  ::kill(top.pid(), SIGINT);
  EXPECT_EQ(top.Wait(), 0) << top.out();
  const std::string& out = top.out();
  std::size_t restored = out.rfind("\x1b[?1049l");
  ASSERT_NE(restored, std::string::npos) << "the screen given back: " << out;
  EXPECT_NE(out.find("\x1b[?25h", out.rfind("\x1b[H")), std::string::npos) << "the cursor shown";
  EXPECT_GT(restored, out.rfind("\x1b[H")) << "after the last frame";
}

TEST_F(Top, NoColorMeansNoColourOnATerminal) {
  StartBusyPool();
  PtyTx top({"top", "--interval", "300ms"}, {{"TERM", "xterm"}, {"NO_COLOR", "1"}}, dir_.str(), 40,
            120);
  ASSERT_TRUE(top.started());
  ASSERT_TRUE(top.ReadUntil([](const std::string& s) { return CountOf(s, "tx top — ") >= 2; }))
      << top.out();
  ::kill(top.pid(), SIGTERM);
  EXPECT_EQ(top.Wait(), 0) << top.out();
  EXPECT_FALSE(HasColour(top.out())) << top.out();
  EXPECT_TRUE(Contains(top.out(), "\x1b[?1049h")) << "still drawn in place";
  EXPECT_TRUE(Contains(top.out(), "\x1b[?1049l")) << "and given back";
  EXPECT_TRUE(Contains(top.out(), "running")) << top.out();

  // An empty NO_COLOR is no NO_COLOR (no-color.org); --once on a terminal: one frame, in colour,
  // on the screen as it is.
  PtyTx once({"top", "--once"}, {{"TERM", "xterm"}, {"NO_COLOR", ""}}, dir_.str(), 40, 120);
  EXPECT_EQ(once.Wait(), 0) << once.out();
  EXPECT_TRUE(HasColour(once.out())) << once.out();
  EXPECT_FALSE(Contains(once.out(), "\x1b[?1049h")) << once.out();
}

TEST(TopOnPostgres, OnceShowsThePoolAndTheQueueOfAPostgresStore) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir;
  auto tx = [&](Args args) {
    args.insert(args.begin(), {"--db", db.url()});
    return RunTx(args, {}, dir.str());
  };
  ASSERT_EQ(tx({"init"}).exit_code, 0);
  ASSERT_EQ(tx({"task", "add", "long", "--command", "sleep 60"}).exit_code, 0);
  ASSERT_EQ(tx({"task", "add", "waits", "--command", "true", "--queue", "later"}).exit_code, 0);
  BackgroundProcess orchestrator(TX_BINARY,
                                 {"--db", db.url(), "orchestrator", "start", "--workers", "1",
                                  "--heartbeat-interval", "500ms"},
                                 {}, dir.str(), dir.str() + "/orchestrator.out");
  ASSERT_TRUE(WaitFor([&] {
    RunResult r = tx({"--json", "task", "list", "--status", "running"});
    return r.exit_code == 0 && json::parse(r.out).size() == 1;
  })) << orchestrator.Output();
  RunResult r = tx({"top", "--once"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "tx top — postgresql://")) << r.out;
  EXPECT_TRUE(Contains(r.out, "orchestrator: running (pid ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "slot-1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "queue: ready 1 · running 1\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "task.claimed")) << r.out;
  EXPECT_EQ(tx({"orchestrator", "stop", "--force"}).exit_code, 0);
  EXPECT_EQ(orchestrator.Wait(30s), 0) << orchestrator.Output();
}

TEST(TopUsage, IsCompleted) {
  TempDir dir;
  RunResult r = RunTx({"completion", "bash"}, {}, dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {" top ", "--once", "--interval"}) {
    EXPECT_TRUE(Contains(r.out, word)) << word;
  }
}

TEST(TopUsage, ABadIntervalIsAUsageError) {
  TempDir dir;
  ASSERT_EQ(RunTx({"init"}, {}, dir.str()).exit_code, 0);
  RunResult r = RunTx({"top", "--interval", "soon"}, {}, dir.str());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  RunResult zero = RunTx({"top", "--interval", "0s"}, {}, dir.str());
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
}

}  // namespace
