// Review and merge of a task's branch (merge.h) on real repositories made in a temp dir.

#include "git/merge.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "exec/command.h"
#include "git/git_test_repo.h"
#include "git/worktree.h"

namespace tx::git {
namespace {

namespace fs = std::filesystem;

class MergeTest : public GitRepoTest {
 protected:
  MergeTest() : GitRepoTest("shared.txt", "one\ntwo\nthree\n") {}

  // A task's branch with one commit writing `text` to `file` (as its agent would).
  void Work(const std::string& task_id, const std::string& file, const std::string& text,
            const std::string& subject = "work") {
    Result<Worktree> wt = PrepareWorktree(repo_, "main", task_id);
    ASSERT_TRUE(wt.ok()) << wt.error().message();
    Write(wt->path + "/" + file, text);
    Git(wt->path, {"add", "-A"});
    Git(wt->path, {"commit", "-q", "-m", subject});
  }
};

TEST_F(MergeTest, TheSummaryCountsTheBranchsCommitsAndWhatItChanged) {
  Work("task-aaaa0001", "new.txt", "a\nb\n", "add new");
  Result<Worktree> wt = PrepareWorktree(repo_, "main", "task-aaaa0001");
  ASSERT_TRUE(wt.ok());
  Write(wt->path + "/shared.txt", "one\n2\nthree\n");
  Git(wt->path, {"commit", "-q", "-am", "change two"});
  // The base moving on changes nothing of what the branch did.
  Write(repo_ + "/other.txt", "x\n");
  Git(repo_, {"add", "other.txt"});
  Git(repo_, {"commit", "-q", "-m", "elsewhere"});

  Result<BranchSummary> s = SummarizeBranch(repo_, "task-aaaa0001", "");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->branch, "tx/task-aaaa0001");
  EXPECT_EQ(s->base, "main");
  ASSERT_EQ(s->commits.size(), 2u);
  EXPECT_EQ(s->commits[0].subject, "add new");
  EXPECT_EQ(s->commits[1].subject, "change two");
  EXPECT_EQ(s->commits[1].sha, s->head);
  EXPECT_EQ(s->files_changed, 2);
  EXPECT_EQ(s->insertions, 3);
  EXPECT_EQ(s->deletions, 1);
  Result<std::string> diff = BranchDiff(repo_, "task-aaaa0001", "");
  ASSERT_TRUE(diff.ok());
  EXPECT_NE(diff->find("+2"), std::string::npos);
  EXPECT_EQ(diff->find("other.txt"), std::string::npos);

  Result<BranchSummary> none = SummarizeBranch(repo_, "task-nobranch", "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
}

TEST_F(MergeTest, AnApprovedBranchIsRebasedCheckedAndFastForwardedOntoTheCheckedOutBase) {
  Work("task-bbbb0001", "b.txt", "b\n");
  Write(repo_ + "/m.txt", "m\n");  // the base moved on since the branch forked
  Git(repo_, {"add", "m.txt"});
  Git(repo_, {"commit", "-q", "-m", "moved"});
  Result<MergeResult> r =
      MergeBranch(repo_, "task-bbbb0001", "", {true, "test -e b.txt && test -e m.txt", 0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->kind, MergeResult::Kind::kMerged) << r->detail;
  EXPECT_EQ(r->base, "main");
  EXPECT_EQ(Git(repo_, {"rev-parse", "main"}), r->head + "\n");
  EXPECT_EQ(Git(repo_, {"log", "--format=%s"}), "work\nmoved\nbase\n");  // linear
  EXPECT_EQ(Read(repo_ + "/b.txt"), "b\n");  // the main checkout's files followed
  EXPECT_EQ(Git(repo_, {"status", "--porcelain"}), "");
  EXPECT_EQ(Git(repo_, {"branch", "--list", "tx/*"}), "");  // merged: deleted
  EXPECT_FALSE(fs::exists(repo_ + "/.tx/worktrees/task-bbbb0001"));
}

TEST_F(MergeTest, AConflictLeavesTheBaseAndTheBranchAsTheyWereAndNamesTheFile) {
  Work("task-cccc0001", "shared.txt", "one\nmine\nthree\n");
  Work("task-cccc0002", "shared.txt", "one\ntheirs\nthree\n");
  Result<MergeResult> first = MergeBranch(repo_, "task-cccc0001", "", {});
  ASSERT_TRUE(first.ok() && first->kind == MergeResult::Kind::kMerged);
  std::string main_tip = Git(repo_, {"rev-parse", "main"});
  std::string branch_tip = Git(repo_, {"rev-parse", "tx/task-cccc0002"});
  Result<MergeResult> second = MergeBranch(repo_, "task-cccc0002", "", {});
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ(second->kind, MergeResult::Kind::kConflict);
  EXPECT_NE(second->detail.find("stopped at a conflict in: shared.txt"), std::string::npos)
      << second->detail;
  EXPECT_EQ(Git(repo_, {"rev-parse", "main"}), main_tip);
  EXPECT_EQ(Git(repo_, {"rev-parse", "tx/task-cccc0002"}), branch_tip);
  EXPECT_EQ(Read(repo_ + "/shared.txt"), "one\nmine\nthree\n");
  // The task's worktree is left clean, on its branch, for the retry.
  std::string wt = repo_ + "/.tx/worktrees/task-cccc0002";
  EXPECT_EQ(Git(wt, {"status", "--porcelain"}), "");
  EXPECT_EQ(Git(wt, {"symbolic-ref", "--short", "HEAD"}), "tx/task-cccc0002\n");
  // With merge instead of rebase: the same, undone.
  Result<MergeResult> merged = MergeBranch(repo_, "task-cccc0002", "", {false, "", 0});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->kind, MergeResult::Kind::kConflict);
  EXPECT_NE(merged->detail.find("Merging main into tx/task-cccc0002"), std::string::npos);
  EXPECT_EQ(Git(repo_, {"rev-parse", "main"}), main_tip);
  EXPECT_EQ(Git(wt, {"status", "--porcelain"}), "");
}

TEST_F(MergeTest, ABranchTheAgentBroughtUpToDateByAMergeIsTakenAsItIs) {
  Work("task-gggg0001", "shared.txt", "one\nmine\nthree\n");
  Work("task-gggg0002", "shared.txt", "one\ntheirs\nthree\n");
  ASSERT_EQ(MergeBranch(repo_, "task-gggg0001", "", {})->kind, MergeResult::Kind::kMerged);
  ASSERT_EQ(MergeBranch(repo_, "task-gggg0002", "", {})->kind, MergeResult::Kind::kConflict);
  // The retry resolves it with a merge of the base (a rebase would meet the conflict again).
  std::string wt = repo_ + "/.tx/worktrees/task-gggg0002";
  exec::CommandResult merge =
      *exec::RunCommand({"git", "-C", wt, "merge", "-q", "--no-edit", "main"});
  EXPECT_FALSE(merge.ok());  // the conflict
  Write(wt + "/shared.txt", "one\nmine and theirs\nthree\n");
  Git(wt, {"commit", "-q", "-am", "resolved"});
  Result<MergeResult> r = MergeBranch(repo_, "task-gggg0002", "", {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->kind, MergeResult::Kind::kMerged) << r->detail;
  EXPECT_EQ(Read(repo_ + "/shared.txt"), "one\nmine and theirs\nthree\n");
}

TEST_F(MergeTest, TheCheckSeesWhatTheSetupMadeButNotWhatWasLeftUncommitted) {
  Write(repo_ + "/.gitignore", "deps/\n");
  Git(repo_, {"add", ".gitignore"});
  Git(repo_, {"commit", "-q", "-m", "ignore deps"});
  Work("task-hhhh0001", "h.txt", "h\n");
  std::string wt = repo_ + "/.tx/worktrees/task-hhhh0001";
  fs::create_directories(wt + "/deps");
  Write(wt + "/deps/lib", "installed\n");  // as a setup command would have
  Write(wt + "/stray.txt", "never committed\n");
  Result<MergeResult> r =
      MergeBranch(repo_, "task-hhhh0001", "", {true, "test -e deps/lib && test ! -e stray.txt", 0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, MergeResult::Kind::kMerged) << r->detail;
  EXPECT_FALSE(fs::exists(repo_ + "/stray.txt"));
}

TEST_F(MergeTest, ACheckThatHangsIsStoppedAtItsTimeoutAndRefusesTheMerge) {
  Work("task-iiii0001", "i.txt", "i\n");
  MergeSettings settings{true, "echo started; sleep 60", 0};
  settings.check_timeout_ms = 500;
  Result<MergeResult> r = MergeBranch(repo_, "task-iiii0001", "", settings);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, MergeResult::Kind::kCheckFailed);
  EXPECT_NE(r->detail.find("the check was stopped after 0 s"), std::string::npos) << r->detail;
  EXPECT_NE(r->detail.find("started"), std::string::npos) << r->detail;
}

TEST_F(MergeTest, ARedCheckBlocksTheMergeAndHandsBackItsOutput) {
  Work("task-dddd0001", "broken.txt", "x\n");
  std::string main_tip = Git(repo_, {"rev-parse", "main"});
  Result<MergeResult> r =
      MergeBranch(repo_, "task-dddd0001", "",
                  {true, "echo checking; test ! -e broken.txt || { echo broken >&2; exit 3; }", 0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->kind, MergeResult::Kind::kCheckFailed);
  EXPECT_NE(r->detail.find("failed (exit status 3)"), std::string::npos) << r->detail;
  EXPECT_NE(r->detail.find("checking\nbroken"), std::string::npos) << r->detail;
  EXPECT_EQ(Git(repo_, {"rev-parse", "main"}), main_tip);
  EXPECT_FALSE(fs::exists(repo_ + "/broken.txt"));
  EXPECT_NE(Git(repo_, {"branch", "--list", "tx/task-dddd0001"}), "");
}

TEST_F(MergeTest, ABaseCheckedOutNowhereMovesByCompareAndSwap) {
  Git(repo_, {"branch", "release"});
  Git(repo_, {"checkout", "-q", "--detach"});
  Result<Worktree> wt = PrepareWorktree(repo_, "release", "task-eeee0001");
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  Write(wt->path + "/r.txt", "r\n");
  Git(wt->path, {"add", "r.txt"});
  Git(wt->path, {"commit", "-q", "-m", "for release"});
  Result<MergeResult> r = MergeBranch(repo_, "task-eeee0001", "release", {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->kind, MergeResult::Kind::kMerged) << r->detail;
  EXPECT_EQ(r->base, "release");
  EXPECT_EQ(Git(repo_, {"log", "--format=%s", "release"}), "for release\nbase\n");
  EXPECT_EQ(Git(repo_, {"log", "--format=%s", "main"}), "base\n");
}

std::string Numbered(const std::string& prefix, int i) { return prefix + std::to_string(i); }

TEST_F(MergeTest, MergesStartedTogetherLandOneAfterTheOther) {
  for (int i = 0; i < 3; ++i) Work(Numbered("task-ffff000", i), Numbered("f", i), "x\n");
  std::vector<Result<MergeResult>> results(3, Error::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back(
        [&, i] { results[i] = MergeBranch(repo_, Numbered("task-ffff000", i), "", {}); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->kind, MergeResult::Kind::kMerged) << r->detail;
  }
  EXPECT_EQ(Git(repo_, {"rev-list", "--count", "main"}), "4\n");
  EXPECT_EQ(Git(repo_, {"rev-list", "--merges", "--count", "main"}), "0\n");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fs::exists(repo_ + "/" + Numbered("f", i)));
  EXPECT_EQ(Git(repo_, {"status", "--porcelain"}), "");
}

}  // namespace
}  // namespace tx::git
