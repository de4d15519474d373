#include "exec/child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec/cgroup.h"
#include "exec/process_info.h"

extern char** environ;

namespace tx::exec {
namespace {

using namespace std::chrono_literals;
using Class = ExitOutcome::Class;
using Clock = std::chrono::steady_clock;

std::string Agent(const std::string& name) { return std::string(TX_AGENTS_DIR) + "/" + name; }

std::vector<std::string> Environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Polls `done` every few milliseconds until it holds or `within` passes.
template <typename F>
bool Eventually(F done, std::chrono::milliseconds within = 10s) {
  const auto deadline = Clock::now() + within;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), or 0 when there is no process.
char ProcState(pid_t pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(") ");
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Dead: no such process, or a zombie its new parent has not reaped yet.
bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state = ProcState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

// Every child of this test process has been reaped.
bool NoChildrenLeft() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

std::vector<pid_t> PidsAfter(const std::string& text, const std::string& prefix) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) pids.push_back(std::stoi(line.substr(prefix.size())));
  }
  return pids;
}

class ChildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tx-exec-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    log_ = dir_ + "/logs/task-1/1.log";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // argv[0] names an agent in tests/agents; the child gets this process's environment.
  SpawnSpec Spec(std::vector<std::string> argv) const {
    SpawnSpec spec;
    spec.argv = std::move(argv);
    spec.argv[0] = Agent(spec.argv[0]);
    spec.env = Environment();
    spec.log_path = log_;
    return spec;
  }

  Child Start(const SpawnSpec& spec) {
    Result<Child> child = Child::Spawn(spec);
    EXPECT_TRUE(child.ok()) << child.error().message();
    return std::move(child).value();
  }

  // Pumps the child's output until the log contains `text`.
  bool AwaitLog(Child& child, const std::string& text, std::chrono::milliseconds within = 10s) {
    return Eventually(
        [&] {
          child.PumpOutput();
          return Contains(ReadAll(log_), text);
        },
        within);
  }

  std::string dir_;
  std::string log_;
};

// --- Output ---------------------------------------------------------------------------------

TEST_F(ChildTest, StdoutAndStderrGoToTheLogCreated0600WithItsDirectories) {
  Child child = Start(Spec({"print_and_exit.sh", "0", "hello"}));
  ExitOutcome outcome = child.Wait();
  EXPECT_EQ(outcome.Classify(), Class::kSuccess);
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "stdout: hello\n")) << log;
  EXPECT_TRUE(Contains(log, "stderr: hello\n")) << log;
  EXPECT_EQ(child.output_bytes(), log.size());
  struct stat st {};
  ASSERT_EQ(::stat(log_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(child.output_fd(), -1) << "the pipe is closed once the child is reaped";
}

TEST_F(ChildTest, OutputStraightToTheLogNeedsNoReaderAndLeavesNoPipe) {
  SpawnSpec spec = Spec({"print_and_exit.sh", "0", "direct"});
  spec.output_straight_to_log = true;
  Child child = Start(spec);
  EXPECT_EQ(child.output_fd(), -1) << "the child holds the log itself";
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "stdout: direct\n")) << log;
  EXPECT_TRUE(Contains(log, "stderr: direct\n")) << log;
}

TEST_F(ChildTest, AChildWritingStraightToItsLogHasItAloneAndMayRotateIt_Issue24) {
  SpawnSpec spec = Spec({"hang_silent.sh"});
  spec.output_straight_to_log = true;
  Child child = Start(spec);
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    EXPECT_NE(std::filesystem::read_symlink(e.path(), ec).string(), log_)
        << "the parent holds the child's log open";
  }
  Terminate(child, 5s);
}

TEST_F(ChildTest, ASighupIgnoredFromTheStartEndsNothing_Issue24) {
  SpawnSpec spec = Spec({"print_and_exit.sh"});
  spec.argv = {"/bin/sh", "-c", "kill -HUP $$; echo alive"};
  spec.ignore_sighup = true;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  EXPECT_TRUE(Contains(ReadAll(log_), "alive\n")) << ReadAll(log_);
  spec.ignore_sighup = false;
  Child by_default = Start(spec);
  EXPECT_EQ(by_default.Wait().signal, SIGHUP);
}

TEST_F(ChildTest, ASilentChildLeavesNoLogNorItsFolder) {
  SpawnSpec spec = Spec({"print_and_exit.sh"});
  spec.argv = {"/bin/true"};
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  EXPECT_EQ(child.output_bytes(), 0u);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(log_).parent_path()))
      << "a folder was made for a log nobody wrote";
  // Its first byte makes both.
  Start(Spec({"print_and_exit.sh", "0", "late"})).Wait();
  EXPECT_TRUE(Contains(ReadAll(log_), "stdout: late\n")) << ReadAll(log_);
}

TEST_F(ChildTest, LogIsAppendedTo) {
  Start(Spec({"print_and_exit.sh", "0", "first"})).Wait();
  Start(Spec({"print_and_exit.sh", "0", "second"})).Wait();
  const std::string log = ReadAll(log_);
  EXPECT_LT(log.find("stdout: first"), log.find("stdout: second")) << log;
}

TEST_F(ChildTest, LogCapKeepsTheNewestTailAfterAMarkerLine) {
  constexpr int kLines = 5000;
  constexpr std::size_t kLineBytes = 40;  // print_lines.sh WIDTH 39 + newline
  SpawnSpec spec = Spec({"print_lines.sh", std::to_string(kLines), "39"});
  spec.log_cap_bytes = 20'000;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  EXPECT_EQ(child.output_bytes(), kLines * kLineBytes);

  const std::string log = ReadAll(log_);
  EXPECT_LE(log.size(), spec.log_cap_bytes);
  ASSERT_EQ(log.rfind("[tx: ", 0), 0u) << log.substr(0, 100);
  const std::size_t marker_end = log.find(" earlier bytes dropped]\n");
  ASSERT_NE(marker_end, std::string::npos);
  const std::uint64_t dropped = std::stoull(log.substr(5, marker_end - 5));
  const std::string tail = log.substr(log.find('\n') + 1);
  // Nothing lost but what the marker counts, and the tail is whole consecutive lines.
  EXPECT_EQ(dropped + tail.size(), kLines * kLineBytes);
  ASSERT_EQ(tail.size() % kLineBytes, 0u);
  const int first = kLines - static_cast<int>(tail.size() / kLineBytes) + 1;
  for (std::size_t i = 0; i < tail.size(); i += kLineBytes) {
    char expected[16];
    std::snprintf(expected, sizeof expected, "line %08d", first + static_cast<int>(i / kLineBytes));
    ASSERT_EQ(tail.substr(i, 13), expected) << "at offset " << i;
  }
  EXPECT_TRUE(Contains(tail, "line 00005000")) << "the newest line is kept";
  EXPECT_GT(tail.size(), spec.log_cap_bytes / 4) << "about half the cap is kept";
}

TEST_F(ChildTest, WithoutALogPathOutputIsDrainedAndDiscarded) {
  // 800 KB: far more than a pipe holds, so the child would block if nobody read.
  SpawnSpec spec = Spec({"print_lines.sh", "20000", "39"});
  spec.log_path.clear();
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  EXPECT_EQ(child.output_bytes(), 20000u * 40);
  EXPECT_FALSE(std::filesystem::exists(log_));
}

TEST_F(ChildTest, LastOutputAtAdvancesWithOutputOnly) {
  Child silent = Start(Spec({"hang_silent.sh"}));
  const auto spawned = silent.last_output_at();
  EXPECT_LE(spawned, Clock::now());
  for (int i = 0; i < 10; ++i) {
    silent.PumpOutput();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(silent.last_output_at(), spawned) << "no output, no progress";

  Child talker = Start(Spec({"print_forever.sh", "0.02"}));
  const auto t0 = talker.last_output_at();
  ASSERT_TRUE(Eventually([&] {
    talker.PumpOutput();
    return talker.last_output_at() > t0;
  }));
  const auto t1 = talker.last_output_at();
  ASSERT_TRUE(Eventually([&] {
    talker.PumpOutput();
    return talker.last_output_at() > t1;
  }));
  EXPECT_GT(talker.output_bytes(), 0u);
}

// --- Outcomes -------------------------------------------------------------------------------

TEST_F(ChildTest, ExitCodesAreClassified) {
  struct Case {
    const char* code;
    Class expected;
    const char* text;
  };
  for (const Case& c :
       {Case{"0", Class::kSuccess, "exited 0"}, Case{"1", Class::kFailed, "exited 1"},
        Case{"137", Class::kKilled, "exited 137"}, Case{"143", Class::kTerminated, "exited 143"}}) {
    ExitOutcome o = Start(Spec({"print_and_exit.sh", c.code})).Wait();
    EXPECT_EQ(o.kind, ExitOutcome::Kind::kExited) << c.code;
    EXPECT_EQ(o.exit_code, std::atoi(c.code));
    EXPECT_EQ(o.Classify(), c.expected) << c.code;
    EXPECT_EQ(o.Describe().rfind(c.text, 0), 0u) << o.Describe();
  }
}

TEST_F(ChildTest, KilledBySigkillIsKilled) {
  Child child = Start(Spec({"hang_silent.sh"}));
  child.Signal(SIGKILL);
  ExitOutcome o = child.Wait();
  EXPECT_EQ(o.kind, ExitOutcome::Kind::kSignalled);
  EXPECT_EQ(o.signal, SIGKILL);
  EXPECT_EQ(o.exit_code, 137);
  EXPECT_EQ(o.Classify(), Class::kKilled);
  EXPECT_EQ(o.Describe(), "killed by SIGKILL (sent by tx)");  // not the OOM killer: we sent it
  EXPECT_TRUE(child.exited());
}

TEST_F(ChildTest, ASigkillFromElsewhereMayBeTheOutOfMemoryKiller) {
  Child child = Start(Spec({"hang_silent.sh"}));
  ::kill(child.pid(), SIGKILL);  // as the kernel's OOM killer or someone's kill -9 would
  ExitOutcome o = child.Wait();
  EXPECT_EQ(o.signal, SIGKILL);
  EXPECT_FALSE(o.sent_by_tx);
  EXPECT_EQ(o.Describe(), "killed by SIGKILL (possibly out of memory)");
}

TEST_F(ChildTest, KilledBySigtermIsTerminated) {
  Child child = Start(Spec({"hang_silent.sh"}));
  child.Signal(SIGTERM);
  ExitOutcome o = child.Wait();
  EXPECT_EQ(o.signal, SIGTERM);
  EXPECT_EQ(o.Classify(), Class::kTerminated);
  EXPECT_EQ(o.Describe(), "terminated by SIGTERM");
}

TEST_F(ChildTest, ExitFdIsReadableOnceTheChildHasExited) {
  Child child = Start(Spec({"print_and_exit.sh", "4"}));
  ASSERT_GE(child.exit_fd(), 0) << "pidfd_open needs Linux 5.3";
  ASSERT_GE(child.output_fd(), 0);
  pollfd p{child.exit_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10'000), 1);
  std::optional<ExitOutcome> o = child.TryWait();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->exit_code, 4);
  EXPECT_TRUE(Contains(ReadAll(log_), "stdout: print_and_exit 4")) << "output drained";
  EXPECT_EQ(child.TryWait()->exit_code, 4) << "the same outcome again";
}

TEST_F(ChildTest, TryWaitIsNonBlockingWhileTheChildRuns) {
  Child child = Start(Spec({"hang_silent.sh"}));
  const auto start = Clock::now();
  EXPECT_FALSE(child.TryWait().has_value());
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_FALSE(child.exited());
}

// --- Spawn failures -------------------------------------------------------------------------

TEST_F(ChildTest, MissingProgramFailsSynchronouslyAndLeavesNoChild) {
  SpawnSpec spec = Spec({"x"});
  spec.argv = {"tx-no-such-program", "arg"};
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(child.error().message(), "spawn 'tx-no-such-program': No such file or directory");
  EXPECT_TRUE(NoChildrenLeft());

  // With a path, the failure comes from execve in the child, reported back the same way.
  spec.argv = {dir_ + "/no-such-agent"};
  child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(child.error().message(),
            "spawn '" + dir_ + "/no-such-agent': No such file or directory");
  EXPECT_TRUE(NoChildrenLeft());
}

TEST_F(ChildTest, NonExecutableProgramFailsWithPermissionDenied) {
  const std::string script = dir_ + "/not-executable.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  ::chmod(script.c_str(), 0644);
  SpawnSpec spec = Spec({"x"});
  spec.argv = {script};
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "spawn '" + script + "': Permission denied");
  EXPECT_TRUE(NoChildrenLeft());
}

TEST_F(ChildTest, MissingCwdFailsCleanly) {
  SpawnSpec spec = Spec({"print_env.sh"});
  spec.cwd = dir_ + "/no-such-dir";
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(child.error().message(),
            "spawn '" + spec.argv[0] + "': cwd '" + spec.cwd + "': No such file or directory");
  EXPECT_TRUE(NoChildrenLeft());
}

TEST_F(ChildTest, UnopenableLogFailsBeforeAnythingStarts) {
  SpawnSpec spec = Spec({"print_and_exit.sh", "0"});
  spec.log_path = "/dev/null/sub/1.log";
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(Contains(child.error().message(), "log directory '/dev/null/sub'"))
      << child.error().message();
  EXPECT_TRUE(NoChildrenLeft());
}

TEST_F(ChildTest, EmptyArgvIsInvalid) {
  SpawnSpec spec;
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(ChildTest, RlimitThatCannotBeSetFailsTheSpawn) {
  SpawnSpec spec = Spec({"print_limits.sh"});
  spec.limits.open_files = 1ull << 40;  // above fs.nr_open: refused even to root
  Result<Child> child = Child::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(),
            "spawn '" + spec.argv[0] + "': setrlimit RLIMIT_NOFILE: Operation not permitted");
  EXPECT_TRUE(NoChildrenLeft());
}

// --- What the child gets --------------------------------------------------------------------

TEST_F(ChildTest, EnvironmentAndCwdAreExactlyTheSpecs) {
  const std::string work = dir_ + "/work dir";
  std::filesystem::create_directories(work);
  SpawnSpec spec = Spec({"print_env.sh", "FOO", "HOME"});
  spec.env = {"FOO=bar baz", "PATH=/usr/bin:/bin"};
  spec.cwd = work;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "FOO=bar baz\n")) << log;
  EXPECT_TRUE(Contains(log, "\nHOME\n")) << "HOME is not inherited: " << log;
  EXPECT_TRUE(Contains(log, "cwd=" + std::filesystem::canonical(work).string() + "\n")) << log;
}

TEST_F(ChildTest, ArgvIsPassedLiterallyWithoutAShell) {
  const std::string marker = dir_ + "/expanded";
  const std::vector<std::string> args = {
      "two words", "it's",  "\"double\"", "$(touch " + marker + ")", "`touch " + marker + "`", "*",
      "",          "$HOME", "a;b|c&&d",
  };
  std::vector<std::string> argv = {"echo_args.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  Child child = Start(Spec(argv));
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  std::string expected = "argc=" + std::to_string(args.size()) + "\n";
  for (const std::string& a : args) expected += "<" + a + ">\n";
  EXPECT_EQ(ReadAll(log_), expected);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(ChildTest, ProgramIsLookedUpInTheSpecsPath) {
  SpawnSpec spec = Spec({"x"});
  spec.argv = {"print_and_exit.sh", "3"};
  spec.env = {std::string("PATH=/nonexistent:") + TX_AGENTS_DIR + ":/usr/bin:/bin"};
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().exit_code, 3);
}

TEST_F(ChildTest, OtherDescriptorsAreNotInherited) {
  const std::string secret = dir_ + "/leaky-descriptor";
  // Deliberately without O_CLOEXEC: the child must close it anyway.
  const int leaky = ::open(secret.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(leaky, 0);
  Child child = Start(Spec({"list_fds.sh"}));
  child.Wait();
  ::close(leaky);
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "fd 0 -> /dev/null\n")) << log;
  EXPECT_TRUE(Contains(log, "fd 1 -> pipe:")) << log;
  EXPECT_TRUE(Contains(log, "fd 2 -> pipe:")) << log;
  EXPECT_FALSE(Contains(log, secret)) << log;
  EXPECT_FALSE(Contains(log, log_)) << "the log itself is the parent's: " << log;
}

TEST_F(ChildTest, RlimitsAreApplied) {
  SpawnSpec spec = Spec({"print_limits.sh"});
  spec.limits.open_files = 64;
  spec.limits.address_space_bytes = 512ull << 20;
  spec.limits.cpu_seconds = 100;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  EXPECT_TRUE(child.limits_warning().empty()) << child.limits_warning();
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "nofile=64\n")) << log;
  EXPECT_TRUE(Contains(log, "as_kb=524288\n")) << log;
  EXPECT_TRUE(Contains(log, "cpu_s=100\n")) << log;
}

TEST_F(ChildTest, AgentStartsWithDefaultSignalsWhateverTheWorkerBlocksOrIgnores) {
  // The worker blocks SIGTERM (it reads it from a signalfd) and may ignore others: an agent
  // inheriting either would be unstoppable by SIGTERM or SIGINT.
  sigset_t term, old_mask;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &old_mask);
  struct sigaction ignore {
  }, old_int{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  Child by_term = Start(Spec({"hang_silent.sh"}));
  Child by_int = Start(Spec({"hang_silent.sh"}));
  ::sigaction(SIGINT, &old_int, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  StopResult r = Terminate(by_term, 5s);
  EXPECT_EQ(r.phase, StopPhase::kTerminated);
  EXPECT_EQ(r.outcome.signal, SIGTERM);
  by_int.Signal(SIGINT);
  ExitOutcome o = by_int.Wait();
  EXPECT_EQ(o.signal, SIGINT);
  EXPECT_EQ(o.Describe(), "killed by SIGINT");
}

// --- Stopping -------------------------------------------------------------------------------

TEST_F(ChildTest, TerminateEndsACooperativeChildWithSigterm) {
  Child child = Start(Spec({"hang_silent.sh"}));
  StopResult r = Terminate(child, 5s);
  EXPECT_EQ(r.phase, StopPhase::kTerminated);
  EXPECT_EQ(r.outcome.signal, SIGTERM);
  EXPECT_EQ(r.outcome.Classify(), Class::kTerminated);
  EXPECT_TRUE(child.exited());
}

TEST_F(ChildTest, TerminateLetsAChildExitOnItsOwnTerms) {
  Child child = Start(Spec({"exit_on_sigterm.sh"}));
  ASSERT_TRUE(AwaitLog(child, "ready\n"));
  StopResult r = Terminate(child, 5s);
  EXPECT_EQ(r.phase, StopPhase::kTerminated);
  EXPECT_EQ(r.outcome.kind, ExitOutcome::Kind::kExited);
  EXPECT_EQ(r.outcome.exit_code, 143);
  EXPECT_EQ(r.outcome.Classify(), Class::kTerminated);
  EXPECT_TRUE(Contains(ReadAll(log_), "got SIGTERM\n")) << "output after SIGTERM is kept";
}

TEST_F(ChildTest, TerminateKillsAChildIgnoringSigtermAfterTheGrace) {
  Child child = Start(Spec({"ignore_sigterm.sh"}));
  ASSERT_TRUE(AwaitLog(child, "ready\n"));
  const auto grace = 500ms;
  const auto start = Clock::now();
  StopResult r = Terminate(child, grace);
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.phase, StopPhase::kKilled);
  EXPECT_EQ(r.outcome.signal, SIGKILL);
  EXPECT_EQ(r.outcome.Classify(), Class::kKilled);
  EXPECT_GE(took, grace);
  EXPECT_LT(took, grace + 3s);
  EXPECT_TRUE(Contains(ReadAll(log_), "ignoring SIGTERM")) << "it did get SIGTERM first";
}

TEST_F(ChildTest, TerminateReportsAChildThatHadAlreadyExited) {
  Child child = Start(Spec({"print_and_exit.sh", "5"}));
  // Exited but not yet reaped.
  pollfd p{child.exit_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10'000), 1);
  StopResult r = Terminate(child, 5s);
  EXPECT_EQ(r.phase, StopPhase::kAlreadyExited);
  EXPECT_EQ(r.outcome.exit_code, 5);
  // And after it was reaped.
  StopResult again = Terminate(child, 5s);
  EXPECT_EQ(again.phase, StopPhase::kAlreadyExited);
  EXPECT_EQ(again.outcome.exit_code, 5);
}

TEST_F(ChildTest, GrandchildrenDieWithTerminate) {
  Child child = Start(Spec({"fork_grandchildren.sh", "3", "wait"}));
  ASSERT_TRUE(AwaitLog(child, "started 3\n"));
  std::vector<pid_t> grandchildren = PidsAfter(ReadAll(log_), "grandchild ");
  ASSERT_EQ(grandchildren.size(), 3u);
  for (pid_t pid : grandchildren) ASSERT_FALSE(Gone(pid));
  // The grandchildren ignore SIGTERM; the leader does not, so it ends within the grace.
  StopResult r = Terminate(child, 5s);
  EXPECT_EQ(r.phase, StopPhase::kTerminated);
  for (pid_t pid : grandchildren) EXPECT_TRUE(Eventually([&] { return Gone(pid); })) << pid;
}

TEST_F(ChildTest, GrandchildrenDieWhenTheLeaderExits) {
  Child child = Start(Spec({"fork_grandchildren.sh", "2", "exit"}));
  const auto start = Clock::now();
  // The sleepers hold the output pipe open: Wait must not wait for its EOF.
  ExitOutcome o = child.Wait();
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(o.Classify(), Class::kSuccess);
  std::vector<pid_t> grandchildren = PidsAfter(ReadAll(log_), "grandchild ");
  ASSERT_EQ(grandchildren.size(), 2u);
  for (pid_t pid : grandchildren) EXPECT_TRUE(Eventually([&] { return Gone(pid); })) << pid;
}

TEST_F(ChildTest, DestructorKillsTheWholeGroupAndReaps) {
  pid_t leader = -1;
  std::vector<pid_t> grandchildren;
  {
    Child child = Start(Spec({"fork_grandchildren.sh", "2", "wait"}));
    leader = child.pid();
    ASSERT_TRUE(AwaitLog(child, "started 2\n"));
    grandchildren = PidsAfter(ReadAll(log_), "grandchild ");
  }
  // Reaped by the destructor: not even a zombie is left.
  EXPECT_EQ(::waitpid(leader, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_TRUE(Gone(leader));
  ASSERT_EQ(grandchildren.size(), 2u);
  for (pid_t pid : grandchildren) EXPECT_TRUE(Eventually([&] { return Gone(pid); })) << pid;
  EXPECT_TRUE(NoChildrenLeft());
}

TEST_F(ChildTest, MovingHandsOverTheProcess) {
  Child a = Start(Spec({"hang_silent.sh"}));
  const pid_t first = a.pid();
  Child b(std::move(a));
  EXPECT_EQ(b.pid(), first);
  EXPECT_FALSE(Gone(first));
  Child c = Start(Spec({"hang_silent.sh"}));
  const pid_t second = c.pid();
  c = std::move(b);  // the process c held is killed and reaped
  EXPECT_EQ(c.pid(), first);
  EXPECT_TRUE(Gone(second));
  EXPECT_FALSE(Gone(first));
  EXPECT_EQ(Terminate(c, 5s).phase, StopPhase::kTerminated);
}

TEST_F(ChildTest, ParentDeathKillsTheChild) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    // The helper plays the worker: it spawns an agent, says its pid, and waits to be killed.
    ::close(fds[0]);
    SpawnSpec spec = Spec({"hang_silent.sh"});
    spec.log_path.clear();
    Result<Child> child = Child::Spawn(spec);
    pid_t pid = child.ok() ? child->pid() : -1;
    if (::write(fds[1], &pid, sizeof pid) != sizeof pid) ::_exit(1);
    while (true) ::pause();
  }
  ::close(fds[1]);
  pid_t agent = -1;
  ASSERT_EQ(::read(fds[0], &agent, sizeof agent), static_cast<ssize_t>(sizeof agent));
  ::close(fds[0]);
  ASSERT_GT(agent, 0);
  ASSERT_FALSE(Gone(agent));

  ASSERT_EQ(::kill(helper, SIGKILL), 0);
  const auto start = Clock::now();
  ASSERT_EQ(::waitpid(helper, nullptr, 0), helper);
  EXPECT_TRUE(Eventually([&] { return Gone(agent); }, 2s));
  EXPECT_LT(Clock::now() - start, 2s);
  ::kill(-agent, SIGKILL);  // only if the test failed
}

TEST_F(ChildTest, FreezeStopsOutputAndThawResumesIt) {
  Child child = Start(Spec({"print_forever.sh", "0.02"}));
  ASSERT_TRUE(AwaitLog(child, "tick 3\n"));
  Freeze(child);
  ASSERT_TRUE(Eventually([&] { return ProcState(child.pid()) == 'T'; }));
  // Drain what was written before the stop, then nothing more may come.
  std::this_thread::sleep_for(50ms);
  child.PumpOutput();
  const std::uint64_t frozen = child.output_bytes();
  std::this_thread::sleep_for(300ms);
  child.PumpOutput();
  EXPECT_EQ(child.output_bytes(), frozen);
  EXPECT_FALSE(child.TryWait().has_value()) << "a stopped child has not exited";

  Thaw(child);
  EXPECT_TRUE(Eventually([&] {
    child.PumpOutput();
    return child.output_bytes() > frozen;
  }));
}

TEST_F(ChildTest, TerminateEndsAFrozenChild) {
  Child child = Start(Spec({"hang_silent.sh"}));
  Freeze(child);
  ASSERT_TRUE(Eventually([&] { return ProcState(child.pid()) == 'T'; }));
  StopResult r = Terminate(child, 5s);
  EXPECT_EQ(r.phase, StopPhase::kTerminated);
  EXPECT_EQ(r.outcome.signal, SIGTERM);
}

// --- Memory and cpu limits ------------------------------------------------------------------

// Whether this machine gives us a memory cgroup (the Child makes its own; this one is a probe).
bool MemoryCgroupAvailable() {
  ResourceLimits limits;
  limits.memory_bytes = 64ull << 20;
  return Cgroup::Create(CurrentCgroupLayout(), limits).memory_limited();
}

TEST_F(ChildTest, MemoryLimitStopsAnAgentAllocatingPastIt) {
  SpawnSpec spec = Spec({"alloc.py", "1024"});
  spec.limits.memory_bytes = 128ull << 20;
  Child child = Start(spec);
  ExitOutcome o = child.Wait();
  const std::string log = ReadAll(log_);
  EXPECT_FALSE(Contains(log, "done")) << log;
  if (MemoryCgroupAvailable()) {
    EXPECT_TRUE(child.limits_warning().empty()) << child.limits_warning();
    EXPECT_EQ(o.Classify(), Class::kKilled) << o.Describe() << "\n" << log;
  } else {
    // RLIMIT_AS instead: the allocation fails inside the agent (MemoryError, exit 1).
    EXPECT_TRUE(Contains(child.limits_warning(), "RLIMIT_AS=134217728")) << child.limits_warning();
    EXPECT_EQ(o.Classify(), Class::kFailed) << o.Describe() << "\n" << log;
    EXPECT_TRUE(Contains(log, "MemoryError")) << log;
  }
}

TEST_F(ChildTest, MemoryLimitLeavesAnAgentWithinItAlone) {
  SpawnSpec spec = Spec({"alloc.py", "32"});
  spec.limits.memory_bytes = 512ull << 20;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess) << ReadAll(log_);
  EXPECT_TRUE(Contains(ReadAll(log_), "done\n"));
}

TEST_F(ChildTest, MemoryLimitUsesACgroupElseRlimitAs) {
  SpawnSpec spec = Spec({"print_limits.sh"});
  spec.limits.memory_bytes = 256ull << 20;
  Child child = Start(spec);
  EXPECT_EQ(child.Wait().Classify(), Class::kSuccess);
  const std::string log = ReadAll(log_);
  if (MemoryCgroupAvailable()) {
    EXPECT_TRUE(child.limits_warning().empty()) << child.limits_warning();
    EXPECT_TRUE(Contains(log, "as_kb=unlimited\n")) << log;
  } else {
    EXPECT_FALSE(child.limits_warning().empty());
    EXPECT_TRUE(Contains(log, "as_kb=262144\n")) << log;
  }
}

TEST_F(ChildTest, ChildJoinsItsCgroupWhichIsRemovedAfterwards) {
  if (!MemoryCgroupAvailable()) GTEST_SKIP() << "no memory cgroup here (covered by the fallback)";
  SpawnSpec spec = Spec({"hang_silent.sh"});
  spec.limits.memory_bytes = 256ull << 20;
  spec.limits.cpu_percent = 50;
  std::string memory_dir;
  {
    Child child = Start(spec);
    const std::string own = ReadAll("/proc/" + std::to_string(child.pid()) + "/cgroup");
    CgroupLayout layout = ParseCgroupLayout(ReadAll("/proc/self/mountinfo"), own);
    memory_dir = layout.v1.count("memory") > 0 ? layout.v1["memory"] : layout.unified;
    const std::string name = "/tx-" + std::to_string(::getpid()) + "-";
    EXPECT_TRUE(Contains(memory_dir, name)) << own;
    ASSERT_TRUE(std::filesystem::exists(memory_dir));
    EXPECT_EQ(Terminate(child, 5s).phase, StopPhase::kTerminated);
  }
  EXPECT_FALSE(std::filesystem::exists(memory_dir));
}

// Where cgroups work, the fallback is still exercised: a process without permission to make
// cgroups (root turned `nobody`) gets the warning and RLIMIT_AS.
TEST_F(ChildTest, WithoutCgroupPermissionMemoryFallsBackToRlimitAs) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to nobody";
  ::chmod(dir_.c_str(), 0777);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    SpawnSpec spec = Spec({"print_limits.sh"});
    spec.limits.memory_bytes = 256ull << 20;
    Result<Child> child = Child::Spawn(spec);
    if (!child.ok()) ::_exit(3);
    child->Wait();
    const std::string& warning = child->limits_warning();
    if (::write(fds[1], warning.data(), warning.size()) < 0) ::_exit(4);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string warning;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) warning.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(Contains(warning, "memory")) << warning;
  EXPECT_TRUE(Contains(warning, "RLIMIT_AS=268435456 instead")) << warning;
  EXPECT_TRUE(Contains(ReadAll(log_), "as_kb=262144\n")) << ReadAll(log_);
}

}  // namespace
}  // namespace tx::exec

namespace tx::exec {
namespace {

// What a new worker checks before killing an agent its replaced predecessor left: the pid must
// still carry that worker's id in its environment.
TEST_F(ChildTest, AnAgentIsRecognisedByItsEnvironmentAndKilledWithItsGroup) {
  SpawnSpec spec = Spec({"hang_silent.sh"});
  spec.env.push_back("TX_WORKER_ID=worker-aaaaaaaa");
  Child child = Start(spec);
  EXPECT_TRUE(Eventually(
      [&] { return ProcessHasEnvironmentEntry(child.pid(), "TX_WORKER_ID=worker-aaaaaaaa"); }));
  EXPECT_FALSE(ProcessHasEnvironmentEntry(child.pid(), "TX_WORKER_ID=worker-bbbbbbbb"));
  EXPECT_FALSE(ProcessHasEnvironmentEntry(child.pid(), "TX_WORKER_ID=worker-aaaa"));
  KillGroup(child.pid());
  ExitOutcome o = child.Wait();
  EXPECT_EQ(o.Classify(), ExitOutcome::Class::kKilled);
  EXPECT_FALSE(Hostname().empty());
  EXPECT_GT(SelfResidentMb(), 0);
}

// What is left of a dead worker's agents is found by the TX_WORKER_ID they carry: an agent's
// whole group goes, grandchildren too; a process that made a session of its own (a container
// engine's monitor, a daemon) and a group without the entry stay.
TEST_F(ChildTest, KillGroupsCarryingKillsTheAgentsGroupsAndSparesOthers) {
  const std::string marker = "TX_WORKER_ID=worker-kill-test-" + std::to_string(::getpid());
  SpawnSpec agent_spec = Spec({"fork_grandchildren.sh", "2", "wait"});
  agent_spec.env.push_back(marker);
  Child agent = Start(agent_spec);
  ASSERT_TRUE(AwaitLog(agent, "started 2\n"));
  std::vector<pid_t> grandchildren = PidsAfter(ReadAll(log_), "grandchild ");
  ASSERT_EQ(grandchildren.size(), 2u);

  const std::string pid_file = dir_ + "/session.pid";
  SpawnSpec session_spec;
  // The outer shell waits for the pid file, written once setsid has made the new session: a
  // leader that exits first has its group killed (ChildTest.GrandchildrenDieWhenTheLeaderExits),
  // the forked setsid with it if it had not left the group yet.
  session_spec.argv = {"/bin/sh", "-c",
                       "setsid -f sh -c 'echo $$ > \"$0\"; exec sleep 600' \"$0\"; "
                       "while [ ! -s \"$0\" ]; do sleep 0.01; done",
                       pid_file};
  session_spec.env = Environment();
  session_spec.env.push_back(marker);
  Start(session_spec).Wait();
  pid_t own_session = 0;
  ASSERT_TRUE(Eventually([&] { return (own_session = std::atoi(ReadAll(pid_file).c_str())) > 0; }));

  SpawnSpec other_spec = Spec({"fork_grandchildren.sh", "1", "wait"});
  other_spec.log_path = dir_ + "/other.log";
  Child other = Start(other_spec);

  EXPECT_EQ(KillGroupsCarrying(marker), 1);
  EXPECT_TRUE(Eventually([&] { return Gone(agent.pid()); }));
  for (pid_t pid : grandchildren) EXPECT_TRUE(Eventually([&] { return Gone(pid); })) << pid;
  EXPECT_FALSE(Gone(own_session)) << "a session of its own is spared";
  EXPECT_FALSE(Gone(other.pid())) << "a group without the entry is spared";
  ::kill(own_session, SIGKILL);
  EXPECT_EQ(KillGroupsCarrying(marker), 0);
}

}  // namespace
}  // namespace tx::exec
