#include "worker/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace tx::worker {
namespace {

using Args = std::vector<std::string>;

// The index of the first `what` after position `from` in `argv`, or npos.
std::size_t Find(const Args& argv, const Args& what) {
  auto it = std::search(argv.begin(), argv.end(), what.begin(), what.end());
  return it == argv.end() ? std::string::npos : static_cast<std::size_t>(it - argv.begin());
}

TEST(Bwrap, TheRootIsReadOnlyTheWorkdirWritableTheStoreHiddenAndTheNetworkOff) {
  SandboxSettings s;
  s.kind = SandboxKind::kBwrap;
  SandboxPaths p;
  p.workdir = "/home/me/project";
  p.hidden = {"/home/me/project/.tx"};
  p.writable = {"/tmp/tx-agent-abc"};
  Args argv = BwrapArgv(s, p, {"claude", "-p", "hi"});
  EXPECT_EQ(Args(argv.begin(), argv.begin() + 4), (Args{"bwrap", "--ro-bind", "/", "/"}));
  std::size_t tmp = Find(argv, {"--tmpfs", "/tmp"});
  std::size_t work = Find(argv, {"--bind", p.workdir, p.workdir});
  std::size_t hidden = Find(argv, {"--tmpfs", "/home/me/project/.tx"});
  std::size_t gateway = Find(argv, {"--bind-try", "/tmp/tx-agent-abc", "/tmp/tx-agent-abc"});
  ASSERT_NE(work, std::string::npos);
  ASSERT_NE(hidden, std::string::npos);
  ASSERT_NE(gateway, std::string::npos);
  EXPECT_LT(work, hidden) << "the store is hidden inside the writable workdir";
  EXPECT_LT(tmp, gateway) << "a path under /tmp is bound after /tmp's tmpfs";
  EXPECT_GT(Find(argv, {"--remount-ro", "/home/me/project/.tx"}), hidden);
  EXPECT_NE(Find(argv, {"--unshare-net"}), std::string::npos);
  EXPECT_NE(Find(argv, {"--die-with-parent"}), std::string::npos);
  EXPECT_EQ(Find(argv, {"--new-session"}), std::string::npos)
      << "the agent stays in the worker's process group for its stop";
  std::size_t dashes = Find(argv, {"--"});
  EXPECT_EQ(Args(argv.begin() + dashes, argv.end()), (Args{"--", "claude", "-p", "hi"}));
}

TEST(Bwrap, NetworkHostAndWritablePathsUnderHome) {
  SandboxSettings s{SandboxKind::kBwrap, true, {"~/.claude", "/var/cache/x"}};
  SandboxPaths p;
  p.workdir = "/w";
  p.home = "/home/me";
  Args argv = BwrapArgv(s, p, {"true"});
  EXPECT_EQ(Find(argv, {"--unshare-net"}), std::string::npos);
  EXPECT_NE(Find(argv, {"--bind-try", "/home/me/.claude", "/home/me/.claude"}), std::string::npos);
  EXPECT_NE(Find(argv, {"--bind-try", "/var/cache/x", "/var/cache/x"}), std::string::npos);
}

TEST(Bwrap, AWorktreeInsideAHiddenDirectoryIsBoundAfterIt) {
  SandboxSettings s{SandboxKind::kBwrap, false, {}};
  SandboxPaths p;
  p.workdir = "/repo/.tx/worktrees/t-1";
  p.hidden = {"/repo/.tx"};
  p.writable = {"/repo/.git"};
  Args argv = BwrapArgv(s, p, {"true"});
  EXPECT_LT(Find(argv, {"--tmpfs", "/repo/.tx"}), Find(argv, {"--bind", p.workdir, p.workdir}));
  EXPECT_GT(Find(argv, {"--remount-ro", "/repo/.tx"}),
            Find(argv, {"--bind", p.workdir, p.workdir}));
}

TEST(Container, TheRunCarriesNameLabelsMountsLimitsAndVariablesByNameOnly) {
  SandboxSettings s{SandboxKind::kPodman,
                    false,
                    {},
                    {{"default", "img:1"}, {"gpu", "img:gpu"}},
                    {"--runtime", "runc"}};
  SandboxPaths p;
  p.workdir = "/w";
  // Only paths that exist are bound.
  std::string gateway = ::testing::TempDir() + "tx-agent-abc";
  std::filesystem::create_directories(gateway);
  p.writable = {gateway, "/nonexistent/tx-agent-x"};
  p.hidden = {"/w/.tx", "/elsewhere/.tx"};
  ContainerRun run;
  run.name = ContainerName("task-1", 2);
  run.labels = {{"tx.task", "task-1"}, {"tx.worker", "worker-9"}};
  run.image = *ImageFor(s, {"python", "gpu"});
  run.env_names = {"HOME", "TX_TASK_ID"};
  run.limits.memory_bytes = 64ull << 20;
  run.limits.cpu_percent = 150;
  run.open_files = 4096;
  run.processes = 999;
  run.relay = "/opt/tx/tx-agent";
  run.relay_at = "/opt/tx/tx";
  Args argv = ContainerArgv(s, p, run, {"claude", "-p", "hi"});
  EXPECT_EQ(Args(argv.begin(), argv.begin() + 7),
            (Args{"podman", "--runtime", "runc", "run", "--rm", "-i", "--name"}));
  EXPECT_EQ(argv[7], "tx-task-1-2");
  for (const Args& want :
       {Args{"--label", "tx.task=task-1"}, Args{"--label", "tx.worker=worker-9"},
        Args{"--network", "none"}, Args{"-v", "/w:/w"}, Args{"-v", gateway + ":" + gateway},
        Args{"--tmpfs", "/w/.tx:ro"}, Args{"-v", "/opt/tx/tx-agent:/opt/tx/tx:ro"},
        Args{"-w", "/w"}, Args{"-e", "HOME"}, Args{"-e", "TX_TASK_ID"},
        Args{"--memory", "67108864b"}, Args{"--cpus", "1.50"}, Args{"--ulimit", "nofile=4096:4096"},
        Args{"--ulimit", "nproc=999:999"}}) {
    EXPECT_NE(Find(argv, want), std::string::npos) << want[0] << " " << want[1];
  }
  EXPECT_EQ(Find(argv, {"--tmpfs", "/elsewhere/.tx:ro"}), std::string::npos)
      << "what is not mounted needs no hiding";
  EXPECT_EQ(Find(argv, {"-v", "/nonexistent/tx-agent-x:/nonexistent/tx-agent-x"}),
            std::string::npos);
  EXPECT_EQ(Args(argv.end() - 4, argv.end()), (Args{"img:gpu", "claude", "-p", "hi"}));
  s.images.erase("default");
  EXPECT_FALSE(ImageFor(s, {"python"}).ok());
  EXPECT_EQ(*ImageFor(s, {"gpu"}), "img:gpu");
}

TEST(SandboxKind, ParsesNoneAndBwrapAndRefusesOthersByName) {
  EXPECT_EQ(*ParseSandboxKind("none"), SandboxKind::kNone);
  EXPECT_EQ(*ParseSandboxKind("bwrap"), SandboxKind::kBwrap);
  EXPECT_EQ(*ParseSandboxKind("podman"), SandboxKind::kPodman);
  EXPECT_EQ(*ParseSandboxKind("docker"), SandboxKind::kDocker);
  Result<SandboxKind> bad = ParseSandboxKind("lxc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "unknown sandbox 'lxc' (none, bwrap, podman or docker)");
}

TEST(SandboxKind, StricterIsNoneThenBwrapThenAContainerTheMoreSpecificAtATie_Issue25) {
  using K = SandboxKind;
  EXPECT_EQ(Stricter(K::kNone, K::kNone), K::kNone);
  EXPECT_EQ(Stricter(K::kNone, K::kBwrap), K::kBwrap);
  EXPECT_EQ(Stricter(K::kBwrap, K::kNone), K::kBwrap);
  EXPECT_EQ(Stricter(K::kPodman, K::kBwrap), K::kPodman);
  EXPECT_EQ(Stricter(K::kBwrap, K::kDocker), K::kDocker);
  EXPECT_EQ(Stricter(K::kPodman, K::kDocker), K::kDocker);
  EXPECT_LT(Strictness(K::kNone), Strictness(K::kBwrap));
  EXPECT_LT(Strictness(K::kBwrap), Strictness(K::kPodman));
  EXPECT_EQ(Strictness(K::kPodman), Strictness(K::kDocker));
}

}  // namespace
}  // namespace tx::worker
