#include "worker/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(SandboxKind, ParsesNoneAndBwrapAndRefusesOthersByName) {
  EXPECT_EQ(*ParseSandboxKind("none"), SandboxKind::kNone);
  EXPECT_EQ(*ParseSandboxKind("bwrap"), SandboxKind::kBwrap);
  Result<SandboxKind> bad = ParseSandboxKind("docker");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "unknown sandbox 'docker' (none or bwrap)");
}

}  // namespace
}  // namespace tx::worker
