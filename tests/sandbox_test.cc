// End-to-end tests of agents in a bubblewrap sandbox (issue 25): the real tx worker, real bwrap,
// real agent processes, a real TCP server on the loopback. docs/sandbox.md says what each check
// stands for.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;
using Args = std::vector<std::string>;

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Tx({"init"}).exit_code, 0);
    fs::create_directories(Path("work"));
  }

  RunResult Tx(const Args& args, const Env& env = {}) { return RunTx(args, env, dir_.str()); }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  // A task running `SHELL work/agent.sh` (the script written there) in work/.
  std::string AddScriptTask(const std::string& script, Args extra = {},
                            const std::string& shell = "bash") {
    std::ofstream(Path("work/agent.sh")) << script;
    Args args = {"--json",    "task",      "add",
                 "sandboxed", "--command", shell + " " + Path("work/agent.sh"),
                 "--workdir", Path("work")};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  }

  std::unique_ptr<BackgroundProcess> StartWorker(Args extra = {}) {
    Args args = {"worker", "start",        "--sandbox", "bwrap",           "--heartbeat-interval",
                 "300ms",  "--kill-grace", "500ms",     "--poll-interval", "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<BackgroundProcess>(TX_BINARY, args, Env{}, dir_.str(),
                                               Path("worker.log"));
  }

  json Show(const std::string& id) {
    RunResult r = Tx({"--json", "task", "show", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
  bool WaitForStatus(const std::string& id, const std::string& status,
                     std::chrono::seconds limit = 60s) {
    return WaitFor([&] { return Show(id).value("status", "") == status; }, limit);
  }
  std::string Log(const std::string& id) { return ReadFile(Path(".tx/logs/" + id + "/1.log")); }

  TempDir dir_;
};

// A TCP server on the loopback that accepts (the kernel does, from its backlog) while it lives.
class LoopbackServer {
 public:
  LoopbackServer() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~LoopbackServer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST_F(SandboxTest, AnAgentWritesItsWorkdirButNotBesideItSeesAPrivateTmpAndNoNetwork_Issue25) {
  LoopbackServer server;
  ASSERT_GT(server.port(), 0);
  std::string marker = "/tmp/tx-sandbox-host-" + std::to_string(::getpid());
  std::ofstream(marker) << "host";
  std::string agent_tmp = "/tmp/tx-sandbox-agent-" + std::to_string(::getpid());
  std::string db = Path(".tx/tx.db");
  std::string port = std::to_string(server.port());
  // A path outside /tmp, on the host's root (/var/tmp): read-only in the sandbox.
  std::string on_root = "/var/tmp/tx-sandbox-probe-" + std::to_string(::getpid());
  std::string id = AddScriptTask(
      "echo in > inside.txt; echo inside=$?\n"
      "echo out > ../beside.txt; echo beside=$?\n"
      "echo out > " +
      on_root +
      "; echo rootwrite=$?\n"
      "cat " +
      marker +
      "; echo hostmarker=$?\n"
      "echo agent > " +
      agent_tmp +
      "; echo agenttmp=$?\n"
      "echo x >> " +
      db +
      "; echo storewrite=$?\n"
      "cat " +
      Path(".tx/token") +
      "; echo token=$?\n"
      "(exec 3<>/dev/tcp/127.0.0.1/" +
      port +
      ") 2>/dev/null; echo tcp=$?\n"
      "rm -f \"$TX_AGENT_SOCKET\"; echo sockrm=$?\n"
      "tx task done --result sandboxed; echo done=$?\n");
  // The same script outside a sandbox reaches the server: the refusal below is the sandbox's.
  RunResult reach =
      RunProcess("/bin/bash", {"-c", "exec 3<>/dev/tcp/127.0.0.1/" + port}, {}, "", 10s);
  ASSERT_EQ(reach.exit_code, 0) << reach.err;

  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output() << Log(id);
  // Done once its report is in, which is before it says so.
  ASSERT_TRUE(WaitFor([&] { return Log(id).find("done=") != std::string::npos; })) << Log(id);
  std::string log = Log(id);
  EXPECT_EQ(Show(id)["result"], "sandboxed") << log;
  EXPECT_NE(log.find("inside=0"), std::string::npos) << log;
  EXPECT_EQ(ReadFile(Path("work/inside.txt")), "in\n");
  // (Beside it is under /tmp here, the agent's own tmpfs: what it wrote there never reached the
  // host. Outside /tmp the read-only root refuses the write.)
  EXPECT_FALSE(fs::exists(Path("beside.txt"))) << log;
  EXPECT_EQ(log.find("rootwrite=0"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(on_root));
  fs::remove(on_root);
  EXPECT_EQ(log.find("hostmarker=0"), std::string::npos) << log;
  EXPECT_NE(log.find("agenttmp=0"), std::string::npos) << "its own /tmp is writable\n" << log;
  EXPECT_FALSE(fs::exists(agent_tmp)) << "the agent's /tmp is not the host's";
  EXPECT_EQ(log.find("storewrite=0"), std::string::npos) << log;
  EXPECT_EQ(log.find("token=0"), std::string::npos) << log;
  EXPECT_EQ(log.find("tcp=0"), std::string::npos) << log;
  // The worker's socket serves its later attempts: the agent cannot remove it.
  EXPECT_EQ(log.find("sockrm=0"), std::string::npos) << log;
  EXPECT_NE(log.find("done=0"), std::string::npos) << log;
  // The store was not touched from inside: it still opens, its one task done.
  RunResult list = Tx({"--json", "task", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out).size(), 1u);
  fs::remove(marker);
}

TEST_F(SandboxTest, InsideTheSandboxTheStoreCannotBeReachedAroundTheWorker_Issue25) {
  std::string other = Tx({"--json", "task", "add", "not yours", "--queue", "elsewhere"}).out;
  std::string other_id = json::parse(other)["id"];
  std::string id = AddScriptTask(
      "env -u TX_AGENT_SOCKET tx --db " + Path(".tx/tx.db") + " task cancel " + other_id +
      "; echo direct=$?\n"
      "cd " +
      dir_.str() + " 2>/dev/null && env -u TX_AGENT_SOCKET tx task cancel " + other_id +
      "; echo discovered=$?\n"
      "tx task cancel " +
      other_id +
      "; echo relayed=$?\n"
      "tx task ask 'Which port?'; echo ask=$?\n");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "waiting")) << worker->Output() << Log(id);
  ASSERT_TRUE(WaitFor([&] { return Log(id).find("ask=") != std::string::npos; })) << Log(id);
  std::string log = Log(id);
  for (const char* refused : {"direct=0", "discovered=0", "relayed=0"}) {
    EXPECT_EQ(log.find(refused), std::string::npos) << refused << "\n" << log;
  }
  EXPECT_NE(log.find("ask=0"), std::string::npos) << log;
  EXPECT_EQ(Show(other_id)["status"], "ready") << log;
}

// A task in a git worktree commits on its branch from inside the sandbox, but cannot change its
// repository's config or hooks (which the worker's own git would run outside it) nor repoint its
// worktree's .git file.
TEST_F(SandboxTest, InAWorktreeTheAgentCommitsButCannotTouchTheRepositorysConfigOrHooks_Issue25) {
  std::string repo = Path("repo");
  fs::create_directories(repo);
  std::string git = "git -c user.name=t -c user.email=t@example.com";
  std::ofstream(repo + "/agent.sh")
      << "echo change > file.txt && git add file.txt && " << git
      << " commit -qm change; echo commit=$?\n"
         "echo x >> "
      << repo << "/.git/config; echo config=$?\n"
      << "echo x > " << repo << "/.git/hooks/post-commit; echo hook=$?\n"
      << "echo 'gitdir: /tmp/elsewhere' > .git; echo gitfile=$?\n"
      << "tx task done --result committed; echo done=$?\n";
  RunResult made = RunProcess(
      "/bin/sh", {"-c", "git init -q -b main && git add agent.sh && " + git + " commit -qm start"},
      {}, repo, 30s);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string config_before = ReadFile(repo + "/.git/config");
  RunResult added =
      Tx({"--json", "task", "add", "in a worktree", "--repo", repo, "--command", "sh agent.sh"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string id = json::parse(added.out)["id"];
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output() << Log(id);
  ASSERT_TRUE(WaitFor([&] { return Log(id).find("done=") != std::string::npos; })) << Log(id);
  std::string log = Log(id);
  EXPECT_NE(log.find("commit=0"), std::string::npos) << log;
  for (const char* refused : {"config=0", "hook=0", "gitfile=0"}) {
    EXPECT_EQ(log.find(refused), std::string::npos) << refused << "\n" << log;
  }
  EXPECT_EQ(ReadFile(repo + "/.git/config"), config_before);
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/post-commit"));
  RunResult branch = RunProcess("/usr/bin/git", {"log", "--format=%s", "tx/" + id}, {}, repo, 30s);
  EXPECT_NE(branch.out.find("change"), std::string::npos) << branch.out << branch.err;
}

TEST_F(SandboxTest, KillingTheWorkerLeavesNoSandboxedProcess_Issue25) {
  std::string id = AddScriptTask("sleep 300 & sleep 300; wait\n");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitFor([&] { return ProcessesWith("TX_TASK_ID=" + id).size() >= 3u; }, 30s))
      << worker->Output();
  worker->Signal(SIGKILL);
  worker->Wait(10s);
  EXPECT_TRUE(WaitFor([&] { return ProcessesWith("TX_TASK_ID=" + id).empty(); }, 15s))
      << ProcessesWith("TX_TASK_ID=" + id).size() << " processes of the agent left";
}

TEST_F(SandboxTest, TimeoutsAndStallDetectionStillStopASandboxedAgent_Issue25) {
  std::string timed =
      AddScriptTask("echo started; for i in $(seq 3000); do echo $i; sleep 0.1; done\n",
                    {"--timeout", "2s", "--max-attempts", "1"});
  auto worker = StartWorker({"--stall-timeout", "1s"});
  ASSERT_TRUE(WaitForStatus(timed, "failed")) << worker->Output();
  EXPECT_EQ(Show(timed)["attempts"][0]["end_reason"], "timed_out");
  std::string silent = AddScriptTask("echo started; sleep 300\n", {"--max-attempts", "1"});
  ASSERT_TRUE(WaitForStatus(silent, "failed")) << worker->Output();
  EXPECT_EQ(Show(silent)["attempts"][0]["end_reason"], "stalled");
  EXPECT_TRUE(WaitFor(
      [&] {
        return ProcessesWith("TX_TASK_ID=" + timed).empty() &&
               ProcessesWith("TX_TASK_ID=" + silent).empty();
      },
      15s));
}

TEST_F(SandboxTest, AWorkerThatCannotRunBwrapSaysWhyInOneLineAndDoesNotStart_Issue25) {
  RunResult r =
      RunTx({"worker", "start", "--sandbox", "bwrap"}, {{"PATH", "/nonexistent"}}, dir_.str());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("sandbox = bwrap, but bwrap cannot be run here"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  RunResult bad = Tx({"worker", "start", "--sandbox", "podman-ish"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown sandbox 'podman-ish' (none, bwrap, podman or docker)"),
            std::string::npos)
      << bad.err;
}

// A worker without a sandbox of its own: its queue's ([git.queues.NAME] sandbox) or the task's own
// (--sandbox) puts the agent in one; a subtask it adds inherits it; less than its queue's is
// refused.
TEST_F(SandboxTest, AQueueOrATaskAsksForASandboxTheWorkerHasNot_Issue25) {
  std::ofstream(Path(".tx/config.toml")) << "[git.queues.untrusted]\nsandbox = \"bwrap\"\n";
  std::ofstream(Path("work/agent.sh"))
      << "echo out > /var/tmp/tx-queue-probe-$TX_TASK_ID; echo rootwrite=$?\n"
         "tx task add child --queue parked --description 'from the agent'; echo added=$?\n"
         "tx task done; echo done=$?\n";
  auto add = [&](const std::string& title, Args extra) {
    Args args = {"--json",    "task",      "add",
                 title,       "--command", "bash " + Path("work/agent.sh"),
                 "--workdir", Path("work")};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  };
  std::string open = add("open", {});
  std::string queued = add("queued", {"--queue", "untrusted"});
  std::string asked = add("asked", {"--sandbox", "bwrap"});
  EXPECT_EQ(Show(asked)["metadata"]["sandbox"], "bwrap");

  // Less than the queue asks for, or no sandbox's name: refused, nothing added.
  RunResult lower = Tx({"task", "add", "x", "--queue", "untrusted", "--sandbox", "none"});
  EXPECT_EQ(lower.exit_code, 2);
  EXPECT_EQ(lower.err,
            "tx: sandbox 'none' is less than queue 'untrusted' asks for: its tasks run in bwrap at "
            "least ([git.queues.untrusted] sandbox)\n");
  RunResult bogus = Tx({"task", "add", "x", "--sandbox", "chroot"});
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_NE(bogus.err.find("unknown sandbox 'chroot'"), std::string::npos) << bogus.err;
  EXPECT_EQ(json::parse(Tx({"--json", "task", "list"}).out).size(), 3u);

  BackgroundProcess worker(TX_BINARY,
                           {"worker", "start", "--queues", "default,untrusted",
                            "--heartbeat-interval", "300ms", "--poll-interval", "1s"},
                           Env{}, dir_.str(), Path("worker.log"));
  for (const auto& id : {open, queued, asked}) {
    ASSERT_TRUE(WaitForStatus(id, "done")) << worker.Output() << Log(id);
    ASSERT_TRUE(WaitFor([&] { return Log(id).find("done=") != std::string::npos; })) << Log(id);
    EXPECT_NE(Log(id).find("added=0"), std::string::npos) << Log(id);
  }
  // The host's root is read-only in a sandbox (/var/tmp: outside the agent's own /tmp).
  EXPECT_NE(Log(open).find("rootwrite=0"), std::string::npos) << Log(open);
  EXPECT_TRUE(fs::remove("/var/tmp/tx-queue-probe-" + open));
  for (const auto& id : {queued, asked}) {
    EXPECT_EQ(Log(id).find("rootwrite=0"), std::string::npos) << Log(id);
    EXPECT_FALSE(fs::remove("/var/tmp/tx-queue-probe-" + id));
  }
  // Each agent's subtask: in its parent's sandbox at least.
  json children = json::parse(Tx({"--json", "task", "list", "--queue", "parked"}).out);
  ASSERT_EQ(children.size(), 3u) << children.dump();
  for (const auto& child : children) {
    json shown = Show(child["id"]);
    if (shown["metadata"].value("parent", "") == open) {
      EXPECT_FALSE(shown["metadata"].contains("sandbox")) << shown.dump();
    } else {
      EXPECT_EQ(shown["metadata"].value("sandbox", ""), "bwrap") << shown.dump();
    }
  }

  // A worker that serves the queue but cannot run its sandbox says so and does not start.
  RunResult r =
      RunTx({"worker", "start", "--queues", "untrusted"}, {{"PATH", "/nonexistent"}}, dir_.str());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("sandbox bwrap (asked for by a queue this worker serves): "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// ================================ containers (podman) ================================

// The same checks with podman, in an image the test makes from a local root file system (busybox,
// and the libraries tx-agent needs when it is not static) with `podman import`: no registry. On a
// machine where podman cannot start a container even with the runtime options this machine kind
// needs (runc, cgroupfs: hybrid cgroups), each test says so and is reported skipped.
class ContainerTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    image_ = "localhost/tx-test-agent:" + std::to_string(::getpid());
    std::string why;
    if (!MakeImage(why)) GTEST_SKIP() << "podman cannot be tried here: " << why;
    for (const Args& args : {Args{}, Args{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}}) {
      Args run = args;
      run.insert(run.end(), {"run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024",
                             "--ulimit", "nproc=1024:1024", image_, "true"});
      RunResult r = RunProcess("/usr/bin/podman", run, {}, "", 120s);
      if (r.exit_code == 0) {
        engine_args_ = args;
        usable_ = true;
        break;
      }
      why = r.err.substr(0, r.err.find('\n'));
    }
    if (!usable_) {
      GTEST_SKIP() << "podman cannot start a container on this machine: " << why;
    }
    WriteConfig(image_);
  }
  void TearDown() override {
    for (const auto& c : containers_) RunProcess("/usr/bin/podman", {"rm", "-f", c}, {}, "", 60s);
    for (const auto& i : images_) RunProcess("/usr/bin/podman", {"rmi", "-f", i}, {}, "", 60s);
    if (!image_.empty()) RunProcess("/usr/bin/podman", {"rmi", "-f", image_}, {}, "", 60s);
  }

  // A config that runs agents in `image` with the engine options this machine needs.
  void WriteConfig(const std::string& image) {
    std::string engine_args;
    for (const auto& a : engine_args_)
      engine_args += (engine_args.empty() ? "\"" : ", \"") + a + "\"";
    std::ofstream(Path(".tx/config.toml"), std::ios::trunc)
        << "[worker]\nsandbox = \"podman\"\n\n[sandbox]\nengine_args = [" << engine_args
        << "]\n\n[sandbox.images]\ndefault = \"" << image << "\"\n";
  }

  // Another image of the same root file system (MakeImage's), removed at the test's end.
  bool ImportImage(const std::string& name) {
    images_.push_back(name);
    RunResult r =
        RunProcess("/usr/bin/podman", {"import", "-q", "rootfs.tar", name}, {}, dir_.str(), 120s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0;
  }
  static bool ImageExists(const std::string& name) {
    return RunProcess("/usr/bin/podman", {"image", "exists", name}, {}, "", 60s).exit_code == 0;
  }

  bool MakeImage(std::string& why) {
    if (access("/usr/bin/podman", X_OK) != 0) {
      why = "/usr/bin/podman is missing";
      return false;
    }
    const char* busybox = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" : nullptr;
    if (busybox == nullptr) {
      why = "/bin/busybox is missing";
      return false;
    }
    fs::path root = Path("rootfs");
    fs::create_directories(root / "bin");
    fs::create_directories(root / "tmp");
    fs::copy_file(busybox, root / "bin/busybox");
    RunResult list = RunProcess(busybox, {"--list"}, {}, "", 30s);
    std::istringstream applets(list.out);
    for (std::string applet; applets >> applet;) {
      if (applet != "busybox") fs::create_symlink("busybox", root / "bin" / applet);
    }
    // tx-agent's libraries, when it has any (a sanitizer build), at their paths.
    std::string agent = fs::path(TX_BINARY).parent_path() / "tx-agent";
    RunResult ldd = RunProcess("/usr/bin/ldd", {agent}, {}, "", 30s);
    std::istringstream lines(ldd.out);
    for (std::string line; std::getline(lines, line);) {
      std::size_t slash = line.find('/');
      if (slash == std::string::npos) continue;
      std::string lib = line.substr(slash, line.find(' ', slash) - slash);
      fs::create_directories(root / fs::path(lib).relative_path().parent_path());
      fs::copy_file(lib, root / fs::path(lib).relative_path(),
                    fs::copy_options::overwrite_existing);
    }
    RunResult tar = RunProcess("/bin/sh",
                               {"-c",
                                "tar -C rootfs -cf rootfs.tar . && podman import -q "
                                "rootfs.tar " +
                                    image_},
                               {}, dir_.str(), 120s);
    if (tar.exit_code != 0) why = "podman import: " + tar.err;
    return tar.exit_code == 0;
  }

  std::string Podman(Args args) {
    Args full = engine_args_;
    full.insert(full.end(), args.begin(), args.end());
    RunResult r = RunProcess("/usr/bin/podman", full, {}, "", 60s);
    return r.out;
  }
  std::string ContainersLabelled(const std::string& label) {
    return Podman({"ps", "-a", "-q", "--filter", "label=" + label});
  }

  std::unique_ptr<BackgroundProcess> StartPodmanWorker() {
    return std::make_unique<BackgroundProcess>(
        TX_BINARY,
        Args{"worker", "start", "--heartbeat-interval", "300ms", "--kill-grace", "500ms",
             "--poll-interval", "1s"},
        Env{}, dir_.str(), Path("worker.log"));
  }

  std::string image_;
  Args engine_args_;
  bool usable_ = false;
  std::vector<std::string> images_;      // removed at the end
  std::vector<std::string> containers_;  // removed at the end
};

TEST_F(ContainerTest, AnAgentInAContainerWritesItsWorkdirOnlyHasNoNetworkAndItsLimits_Issue25) {
  LoopbackServer server;
  ASSERT_GT(server.port(), 0);
  std::string marker = "/tmp/tx-container-host-" + std::to_string(::getpid());
  std::ofstream(marker) << "host";
  std::string agent_tmp = "/tmp/tx-container-agent-" + std::to_string(::getpid());
  std::string id = AddScriptTask(
      "echo in > inside.txt; echo inside=$?\n"
      "echo out > ../beside.txt; echo beside=$?\n"
      "cat " +
          marker +
          "; echo hostmarker=$?\n"
          "echo agent > " +
          agent_tmp +
          "; echo agenttmp=$?\n"
          "cat " +
          Path(".tx/tx.db") +
          " > /dev/null; echo store=$?\n"
          "nc -z -w 2 127.0.0.1 " +
          std::to_string(server.port()) +
          "; echo tcp=$?\n"
          "sleep 3\n"
          "tx task done --result contained; echo done=$?\n",
      {"--metadata", R"({"limits": {"memory_mb": 64, "processes": 50}})"}, "sh");
  auto worker = StartPodmanWorker();
  std::string name = "tx-" + id + "-1";
  ASSERT_TRUE(WaitFor([&] { return !ContainersLabelled("tx.task=" + id).empty(); }, 60s))
      << worker->Output();
  EXPECT_EQ(
      Podman({"inspect", name, "--format", "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}"}),
      "67108864 50\n");
  ASSERT_TRUE(WaitForStatus(id, "done", 90s)) << worker->Output() << Log(id);
  ASSERT_TRUE(WaitFor([&] { return Log(id).find("done=") != std::string::npos; })) << Log(id);
  std::string log = Log(id);
  EXPECT_EQ(Show(id)["result"], "contained") << log;
  EXPECT_NE(log.find("inside=0"), std::string::npos) << log;
  EXPECT_EQ(ReadFile(Path("work/inside.txt")), "in\n");
  EXPECT_FALSE(fs::exists(Path("beside.txt"))) << log;
  EXPECT_EQ(log.find("hostmarker=0"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(agent_tmp)) << "the agent's /tmp is not the host's";
  EXPECT_EQ(log.find("store=0"), std::string::npos) << log;
  EXPECT_EQ(log.find("tcp=0"), std::string::npos) << log;
  EXPECT_NE(log.find("done=0"), std::string::npos) << log;
  EXPECT_TRUE(WaitFor([&] { return ContainersLabelled("tx.task=" + id).empty(); }, 30s))
      << "the attempt's container was removed";
  fs::remove(marker);
}

TEST_F(ContainerTest, AWorkerKilledWithKill9LeavesNoContainerUnderAnOrchestrator_Issue25) {
  std::string id = AddScriptTask("echo started; sleep 300\n", {"--max-attempts", "1"}, "sh");
  BackgroundProcess orchestrator(TX_BINARY,
                                 {"orchestrator", "start", "--workers", "1", "--heartbeat-interval",
                                  "300ms", "--reconcile-interval", "1s"},
                                 {}, dir_.str(), Path("orchestrator.log"));
  ASSERT_TRUE(WaitFor([&] { return !ContainersLabelled("tx.task=" + id).empty(); }, 90s))
      << orchestrator.Output();
  json worker = json::parse(Tx({"--json", "worker", "list"}).out)[0];
  std::string worker_id = worker["id"];
  ASSERT_GT(worker["pid"].get<int>(), 0);
  ::kill(worker["pid"].get<int>(), SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return ContainersLabelled("tx.worker=" + worker_id).empty(); }, 60s))
      << orchestrator.Output();
  // Removed by the orchestrator: a killed engine client leaves its container running.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFile(Path("orchestrator.log")).find("container(s) of worker " + worker_id) !=
               std::string::npos;
      },
      10s))
      << ReadFile(Path("orchestrator.log"));
  EXPECT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  EXPECT_EQ(orchestrator.Wait(60s), 0) << orchestrator.Output();
}

// A worker started by hand and killed with kill -9 has no orchestrator to clean up after it: its
// container runs on until `tx sandbox gc`, which removes the containers of this store's workers
// that are no longer alive, and only those.
TEST_F(ContainerTest, SandboxGcRemovesTheContainerOfAWorkerKilledByHandOnceItIsDead_Issue25) {
  std::string id = AddScriptTask("echo started; sleep 300\n", {"--max-attempts", "1"}, "sh");
  auto worker = StartPodmanWorker();
  ASSERT_TRUE(WaitFor([&] { return !ContainersLabelled("tx.task=" + id).empty(); }, 90s))
      << worker->Output();
  worker->Signal(SIGKILL);
  worker->Wait(10s);
  // Still alive in the store: gc leaves it.
  RunResult early = Tx({"sandbox", "gc"});
  ASSERT_EQ(early.exit_code, 0) << early.err;
  EXPECT_FALSE(ContainersLabelled("tx.task=" + id).empty()) << early.out;
  // Declared dead by its missed heartbeats: gc removes its container.
  ASSERT_TRUE(WaitFor(
      [&] {
        Tx({"orchestrator", "reconcile"});
        json w = json::parse(Tx({"--json", "worker", "list", "--status", "dead"}).out);
        return w.size() == 1u;
      },
      30s));
  RunResult gc = Tx({"--json", "sandbox", "gc"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(json::parse(gc.out)["removed_containers"].size(), 1u) << gc.out;
  EXPECT_TRUE(ContainersLabelled("tx.task=" + id).empty());
}

// tx sandbox gc removes the images tx ran once nothing used them for --unused-for: never one the
// config names, nor one a container has, nor one tx never ran (the user's own).
TEST_F(ContainerTest,
       SandboxGcRemovesImagesTxRanThatWentUnusedButNotConfiguredHeldOrOthers_Issue25) {
  std::string pid = std::to_string(::getpid());
  std::string a = "localhost/tx-gc-a-" + pid, b = "localhost/tx-gc-b-" + pid,
              other = "localhost/tx-gc-other-" + pid;
  ASSERT_TRUE(ImportImage(a) && ImportImage(b) && ImportImage(other));
  // A task run in a, then the config changed to b and a task run in b.
  for (const std::string& image : {a, b}) {
    WriteConfig(image);
    std::string id = AddScriptTask("echo ran\n", {}, "sh");
    auto worker = StartPodmanWorker();
    ASSERT_TRUE(WaitForStatus(id, "done", 90s)) << worker->Output() << Log(id);
    worker->Signal(SIGTERM);
    ASSERT_EQ(worker->Wait(60s), 0) << worker->Output();
  }
  auto gc = [&](const std::string& unused_for) {
    RunResult r = Tx({"--json", "sandbox", "gc", "--unused-for", unused_for});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  };
  // Both used within the hour: nothing goes.
  json recent = gc("1h");
  EXPECT_EQ(recent["removed_images"], json::array()) << recent;
  EXPECT_EQ(recent["kept_images"], json({a, b})) << recent;
  EXPECT_TRUE(ImageExists(a) && ImageExists(b) && ImageExists(other));
  // A container (not tx's) that has a keeps it.
  std::string holder = "tx-gc-holder-" + pid;
  containers_.push_back(holder);
  Podman({"create", "--name", holder, a, "true"});
  json held = gc("0s");
  EXPECT_EQ(held["removed_images"], json::array()) << held;
  EXPECT_TRUE(ImageExists(a));
  // Without it a goes; b stays (configured), and other (tx never ran it).
  Podman({"rm", holder});
  json unused = gc("0s");
  EXPECT_EQ(unused["removed_images"], json({a})) << unused;
  EXPECT_EQ(unused["kept_images"], json({b})) << unused;
  EXPECT_EQ(unused["failed_images"], json::array()) << unused;
  EXPECT_FALSE(ImageExists(a));
  EXPECT_TRUE(ImageExists(b));
  EXPECT_TRUE(ImageExists(other));
  // Its record went with it; the text form counts.
  RunResult text = Tx({"sandbox", "gc", "--unused-for", "0s"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out,
            "removed 0 container(s) of workers no longer alive and 0 image(s) unused for 0s; kept "
            "1 image(s) tx ran\n");
}

TEST_F(SandboxTest, SandboxGcRefusesABadUnusedForInOneLine_Issue25) {
  RunResult bad = Tx({"sandbox", "gc", "--unused-for", "bogus"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--unused-for: invalid duration 'bogus'"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST_F(SandboxTest, AContainerSandboxWithoutAnImageOrAnEngineIsRefusedInOneLine_Issue25) {
  RunResult no_container = Tx({"sandbox", "gc"});
  EXPECT_EQ(no_container.exit_code, 2);
  EXPECT_NE(no_container.err.find("no container sandbox is configured here"), std::string::npos)
      << no_container.err;
  RunResult no_image = Tx({"worker", "start", "--sandbox", "podman"});
  EXPECT_EQ(no_image.exit_code, 2);
  EXPECT_NE(no_image.err.find("sandbox = podman needs an image: set [sandbox.images] default"),
            std::string::npos)
      << no_image.err;
  std::ofstream(Path(".tx/config.toml")) << "[sandbox.images]\ndefault = \"tx-agent:1\"\n";
  // No docker engine runs on these machines (and its client may be missing).
  RunResult docker = Tx({"worker", "start", "--sandbox", "docker"});
  EXPECT_EQ(docker.exit_code, 1) << docker.err;
  EXPECT_NE(docker.err.find("sandbox = docker, but docker cannot"), std::string::npos)
      << docker.err;
  EXPECT_EQ(std::count(docker.err.begin(), docker.err.end(), '\n'), 1) << docker.err;
}

}  // namespace
