// Git isolation (worktree.h) on real repositories made in a temp dir, with the real git.

#include "git/worktree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "exec/command.h"
#include "exec/unique_fd.h"
#include "git/git_test_repo.h"

namespace tx::git {
namespace {

namespace fs = std::filesystem;

class WorktreeTest : public GitRepoTest {
 protected:
  WorktreeTest() : GitRepoTest("a.txt", "one\n") {}
};

TEST_F(WorktreeTest, ATaskGetsAWorktreeOnItsOwnBranchFromTheBaseTipOutOfTheMainStatus) {
  Result<Worktree> wt = PrepareWorktree(repo_, "", "task-aaaa1111");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  EXPECT_EQ(wt->repo, fs::canonical(repo_).string());
  EXPECT_EQ(wt->path, wt->repo + "/.tx/worktrees/task-aaaa1111");
  EXPECT_EQ(wt->branch, "tx/task-aaaa1111");
  EXPECT_EQ(wt->base, "main");  // the repository's checked-out branch
  EXPECT_TRUE(wt->created);
  EXPECT_TRUE(wt->needs_setup);
  EXPECT_EQ(Read(wt->path + "/a.txt"), "one\n");
  EXPECT_EQ(Git(wt->path, {"rev-parse", "HEAD"}), Git(repo_, {"rev-parse", "main"}));
  EXPECT_EQ(Git(repo_, {"status", "--porcelain"}), "");  // .tx/ is excluded

  // The base moves on; a new task starts from its new tip, the first stays where it was.
  Write(repo_ + "/a.txt", "two\n");
  Git(repo_, {"commit", "-q", "-am", "second"});
  Result<Worktree> other = PrepareWorktree(repo_, "main", "task-bbbb2222");
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_EQ(Read(other->path + "/a.txt"), "two\n");
  EXPECT_EQ(Read(wt->path + "/a.txt"), "one\n");
}

TEST_F(WorktreeTest, ARetryReusesTheWorktreeAsItWasAndAfterRemovalTheBranch) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-cccc3333");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  Write(wt->path + "/committed.txt", "c\n");
  Git(wt->path, {"add", "committed.txt"});
  Git(wt->path, {"commit", "-q", "-m", "work"});
  Write(wt->path + "/uncommitted.txt", "u\n");

  Result<Worktree> again = PrepareWorktree(repo_, "main", "task-cccc3333");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->path, wt->path);
  EXPECT_EQ(again->base, "main");
  EXPECT_EQ(Read(again->path + "/uncommitted.txt"), "u\n");

  ASSERT_TRUE(RemoveWorktree(repo_, "task-cccc3333").ok());
  EXPECT_FALSE(fs::exists(wt->path));
  EXPECT_EQ(Git(repo_, {"worktree", "list", "--porcelain"}).find("task-cccc3333"),
            std::string::npos);
  // The branch stays, free: it can be checked out anywhere, and a retry starts from it.
  EXPECT_NE(Git(repo_, {"branch", "--list", "tx/task-cccc3333"}), "");
  Result<Worktree> retry = PrepareWorktree(repo_, "main", "task-cccc3333");
  ASSERT_TRUE(retry.ok()) << retry.error().message();
  EXPECT_TRUE(retry->created);
  EXPECT_EQ(Read(retry->path + "/committed.txt"), "c\n");
  EXPECT_FALSE(fs::exists(retry->path + "/uncommitted.txt"));
  EXPECT_TRUE(RemoveWorktree(repo_, "task-cccc3333").ok());
  EXPECT_TRUE(RemoveWorktree(repo_, "task-cccc3333").ok());  // nothing left: fine
}

TEST_F(WorktreeTest, ASpareTakesNothingOfItsLastTaskToTheNext) {
  Write(repo_ + "/.gitignore", "build/\n");
  Write(repo_ + "/CLAUDE.md", "rules\n");
  Git(repo_, {"add", ".gitignore", "CLAUDE.md"});
  Git(repo_, {"commit", "-q", "-m", "ignore"});
  Result<Worktree> first = PrepareWorktree(repo_, "main", "task-jjjj0000");
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(WriteInstructions(*first, "first task\n").ok());
  Write(first->path + "/a.txt", "changed\n");
  Write(first->path + "/new.txt", "untracked\n");
  fs::create_directories(first->path + "/build");
  Write(first->path + "/build/out.o", "ignored\n");
  Git(first->path, {"add", "a.txt"});
  Git(first->path, {"commit", "-q", "-m", "first's work"});
  Write(first->path + "/a.txt", "uncommitted\n");
  { std::ofstream(first->git_dir + "/tx-setup-done"); }

  ASSERT_TRUE(RemoveWorktree(repo_, "task-jjjj0000", 1).ok());
  EXPECT_FALSE(fs::exists(first->path));
  EXPECT_EQ(CountSpares(repo_), 1);
  EXPECT_EQ(Git(repo_, {"status", "--porcelain"}), "");
  // Its branch is free: checked out nowhere.
  EXPECT_EQ(Git(repo_, {"worktree", "list"}).find("tx/task-jjjj0000"), std::string::npos);
  ASSERT_TRUE(RemoveWorktree(repo_, "task-jjjj0000", 1).ok());  // nothing left: fine

  Result<Worktree> next = PrepareWorktree(repo_, "main", "task-kkkk0000");
  ASSERT_TRUE(next.ok()) << next.error().message();
  EXPECT_TRUE(next->created);
  EXPECT_TRUE(next->needs_setup);
  EXPECT_EQ(CountSpares(repo_), 0);
  EXPECT_EQ(next->path, next->repo + "/.tx/worktrees/task-kkkk0000");
  EXPECT_EQ(Git(next->path, {"symbolic-ref", "--short", "HEAD"}), "tx/task-kkkk0000\n");
  EXPECT_EQ(Git(next->path, {"rev-parse", "HEAD"}), Git(repo_, {"rev-parse", "main"}));
  EXPECT_EQ(Read(next->path + "/a.txt"), "one\n");
  EXPECT_FALSE(fs::exists(next->path + "/new.txt"));
  EXPECT_FALSE(fs::exists(next->path + "/build"));
  EXPECT_EQ(Read(next->path + "/CLAUDE.md"), "rules\n");
  EXPECT_EQ(Git(next->path, {"status", "--porcelain"}), "");
  ASSERT_TRUE(WriteInstructions(*next, "second task\n").ok());
  EXPECT_EQ(Read(next->path + "/CLAUDE.md"), "rules\n\nsecond task\n");
  EXPECT_EQ(Git(next->path, {"status", "--porcelain"}, AgentGitEnv(*next, {})), "");

  // The first task's retry gets its branch back, in a fresh worktree (no spare is left).
  Result<Worktree> retry = PrepareWorktree(repo_, "main", "task-jjjj0000");
  ASSERT_TRUE(retry.ok()) << retry.error().message();
  EXPECT_EQ(Read(retry->path + "/a.txt"), "changed\n");
  // With no room for another spare, a removal deletes.
  ASSERT_TRUE(RemoveWorktree(repo_, "task-kkkk0000", 1).ok());
  ASSERT_TRUE(RemoveWorktree(repo_, "task-jjjj0000", 1).ok());
  EXPECT_EQ(CountSpares(repo_), 1);
  EXPECT_FALSE(fs::exists(retry->path));
}

TEST_F(WorktreeTest, AWorktreeLeftHalfMadeOrDeletedByHandIsMadeAgain) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-dddd4444");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  fs::remove_all(wt->path);  // git still has it registered, holding the branch
  Result<Worktree> again = PrepareWorktree(repo_, "main", "task-dddd4444");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->created);
  fs::remove_all(wt->path);
  fs::create_directories(wt->path + "/junk");  // a directory that is no worktree
  again = PrepareWorktree(repo_, "main", "task-dddd4444");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_FALSE(fs::exists(wt->path + "/junk"));
  EXPECT_EQ(Read(wt->path + "/a.txt"), "one\n");
}

TEST_F(WorktreeTest, BadRepositoriesAndBasesAreRefusedNamingThem) {
  Result<Worktree> r = PrepareWorktree(dir_.str() + "/nowhere", "", "task-eeee5555");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("is not a directory"), std::string::npos);
  fs::create_directories(dir_.str() + "/plain");
  r = PrepareWorktree(dir_.str() + "/plain", "", "task-eeee5555");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is not a git repository"), std::string::npos);
  r = PrepareWorktree(repo_, "no-such-branch", "task-eeee5555");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("base branch 'no-such-branch' not found"), std::string::npos);
  Git(repo_, {"checkout", "-q", "--detach"});
  r = PrepareWorktree(repo_, "", "task-eeee5555");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("detached HEAD"), std::string::npos);
  EXPECT_EQ(Git(repo_, {"branch", "--list", "tx/*"}), "");  // nothing made
}

TEST_F(WorktreeTest, InstructionFilesReachTheAgentButNotItsCommits) {
  // CLAUDE.md is tracked by the repository, AGENTS.md is not.
  Write(repo_ + "/CLAUDE.md", "# Project rules\n");
  Git(repo_, {"add", "CLAUDE.md"});
  Git(repo_, {"commit", "-q", "-m", "rules"});
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-ffff6666");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  ASSERT_TRUE(WriteInstructions(*wt, "Do the thing.\n").ok());
  EXPECT_EQ(Read(wt->path + "/CLAUDE.md"), "# Project rules\n\nDo the thing.\n");
  EXPECT_EQ(Read(wt->path + "/AGENTS.md"), "Do the thing.\n");

  // An agent that adds everything and commits commits its own work only.
  std::vector<std::string> env = AgentGitEnv(*wt, {});
  Write(wt->path + "/work.txt", "w\n");
  EXPECT_EQ(Git(wt->path, {"status", "--porcelain"}, env), "?? work.txt\n");
  Git(wt->path, {"add", "-A"}, env);
  Git(wt->path, {"commit", "-q", "-am", "agent work"}, env);
  EXPECT_EQ(Git(wt->path, {"show", "--name-only", "--format=", "HEAD"}, env), "work.txt\n");

  // A second attempt's instructions replace the first's (the rules stay).
  ASSERT_TRUE(WriteInstructions(*wt, "Do it again.\n").ok());
  EXPECT_EQ(Read(wt->path + "/CLAUDE.md"), "# Project rules\n\nDo it again.\n");
  EXPECT_EQ(Git(wt->path, {"status", "--porcelain"}, env), "");
  // The main checkout is untouched.
  EXPECT_EQ(Read(repo_ + "/CLAUDE.md"), "# Project rules\n");
  EXPECT_EQ(Git(repo_, {"status", "--porcelain"}), "");
}

TEST_F(WorktreeTest, TheAgentEnvironmentNamesTheWorktreeAndAddsToGitConfigCount) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-gggg7777");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  std::vector<std::string> env =
      AgentGitEnv(*wt, {"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=x.y", "GIT_CONFIG_VALUE_0=z"});
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has("TX_WORKTREE=" + wt->path));
  EXPECT_TRUE(has("TX_BRANCH=tx/task-gggg7777"));
  EXPECT_TRUE(has("TX_BASE_BRANCH=main"));
  EXPECT_TRUE(has("TX_REPO=" + wt->repo));
  EXPECT_TRUE(has("GIT_CONFIG_KEY_1=core.excludesFile"));
  EXPECT_TRUE(has("GIT_CONFIG_COUNT=2"));
}

TEST_F(WorktreeTest, SetupCommandsRunInOrderBeforeTheAgentAndStopAtTheFirstFailure) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-hhhh8888");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  std::vector<std::string> agent = {"/bin/sh", "-c", "cat steps; echo agent \"$1\"", "sh", "x y"};
  Result<exec::CommandResult> r = exec::RunCommand(
      WithSetup(*wt, {"echo one > steps", "echo 'two; three' >> steps"}, agent), wt->path);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(r->out,
            "tx setup: echo one > steps\ntx setup: echo 'two; three' >> steps\n"
            "one\ntwo; three\nagent x y\n");
  Result<Worktree> again = PrepareWorktree(repo_, "main", "task-hhhh8888");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->needs_setup);
  EXPECT_EQ(WithSetup(*again, {}, agent), agent);

  Result<Worktree> failing = PrepareWorktree(repo_, "main", "task-iiii9999");
  ASSERT_TRUE(failing.ok());
  r = exec::RunCommand(WithSetup(*failing, {"exit 7", "echo never"}, agent), failing->path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->out, "tx setup: exit 7\n");
  EXPECT_EQ(r->err, "tx setup: exit status 7: exit 7\n");
  again = PrepareWorktree(repo_, "main", "task-iiii9999");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->needs_setup);  // to be run again by the next attempt
}

TEST_F(WorktreeTest, TheBaseIsRecordedBesideTheWorktreesAndOutlivesThem) {
  Git(repo_, {"branch", "release"});
  Result<Worktree> wt = PrepareWorktree(repo_, "release", "task-llll0000");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  ASSERT_TRUE(RemoveWorktree(repo_, "task-llll0000").ok());
  Git(repo_, {"checkout", "-q", "-b", "elsewhere"});  // the main checkout moves on
  Result<std::string> base = TaskBase(repo_, "task-llll0000", "");
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_EQ(*base, "release");
  Result<Worktree> retry = PrepareWorktree(repo_, "", "task-llll0000");
  ASSERT_TRUE(retry.ok()) << retry.error().message();
  EXPECT_EQ(retry->base, "release");
  ForgetBase(repo_, "task-llll0000");
  EXPECT_EQ(*TaskBase(repo_, "task-llll0000", ""), "elsewhere");
  // A base must be a branch's name, not any revision.
  Result<Worktree> bad = PrepareWorktree(repo_, "main~1", "task-llll0001");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'main~1' is not a branch name"), std::string::npos)
      << bad.error().message();
}

TEST_F(WorktreeTest, AWorktreeOffItsBranchIsPutBackOnItWithItsEditsNotDeleted) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-mmmm0000");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  Git(wt->path, {"checkout", "-q", "--detach"});
  Write(wt->path + "/wip.txt", "unsaved\n");
  Result<Worktree> again = PrepareWorktree(repo_, "main", "task-mmmm0000");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(Git(again->path, {"symbolic-ref", "--short", "HEAD"}), "tx/task-mmmm0000\n");
  EXPECT_EQ(Read(again->path + "/wip.txt"), "unsaved\n");
}

TEST_F(WorktreeTest, ACancelByHandLeavesAWorktreeItsWorkerHolds) {
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-nnnn0000");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  {
    Result<exec::UniqueFd> held = LockTaskWorktree(repo_, "task-nnnn0000");
    ASSERT_TRUE(held.ok()) << held.error().message();
    ASSERT_TRUE(RemoveIdleWorktree(repo_, "task-nnnn0000").ok());
    EXPECT_TRUE(fs::exists(wt->path));  // its worker removes it
  }
  ASSERT_TRUE(RemoveIdleWorktree(repo_, "task-nnnn0000").ok());
  EXPECT_FALSE(fs::exists(wt->path));
  EXPECT_TRUE(RemoveIdleWorktree("", "task-nnnn0000").ok());
}

TEST(CommandTest, ACommandIsNotWaitedForPastItsExitNorPastItsTimeout) {
  // A background child holding stdout open: the command's exit ends the wait, and the child goes.
  auto started = std::chrono::steady_clock::now();
  Result<exec::CommandResult> r =
      exec::RunCommand({"/bin/sh", "-c", "sleep 30 & echo $! > /dev/null; echo done"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "done\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  started = std::chrono::steady_clock::now();
  r = exec::RunCommand({"/bin/sh", "-c", "echo before; sleep 30"}, "", {}, 1024, 300);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 137);
  EXPECT_EQ(r->out, "before\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(CommandTest, ACommandIsStoppedWhenItsCancelFdBecomesReadable) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  exec::UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(::write(write_end.get(), "x", 1), 1);
  });
  auto started = std::chrono::steady_clock::now();
  Result<exec::CommandResult> r =
      exec::RunCommand({"/bin/sh", "-c", "echo before; sleep 30"}, "", {}, 1024, 0, read_end.get());
  cancel.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 137);
  EXPECT_EQ(r->out, "before\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  char c;
  EXPECT_EQ(::read(read_end.get(), &c, 1), 1) << "the fd is polled, never read";
}

TEST(CommandTest, RunCommandCapturesOutputAndStatusAndNamesWhatCannotStart) {
  Result<exec::CommandResult> r =
      exec::RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, "/", {"A=b"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->FirstLine(), "err");
  r = exec::RunCommand({"/bin/sh", "-c", "printf %s \"$A\"; pwd"}, "/tmp", {"A=b"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "b/tmp\n");
  r = exec::RunCommand({"no-such-program-tx"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "run 'no-such-program-tx': No such file or directory");
  r = exec::RunCommand({"/bin/sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 137);
}

}  // namespace
}  // namespace tx::git
