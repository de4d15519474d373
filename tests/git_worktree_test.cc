// End-to-end tests of git isolation (issue 7): real `tx worker start` processes run scripted
// agents that edit files and commit, each in the worktree of its task, on a real repository made
// in a temp dir. The real clock, short intervals, generous polling bounds.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;
using Args = std::vector<std::string>;

class GitWorktreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    repo_ = Path("repo");
    fs::create_directories(repo_);
    Git({"init", "-q", "-b", "main"});
    Git({"config", "user.email", "agent@example.com"});
    Git({"config", "user.name", "agent"});
    Write(repo_ + "/shared.txt", "base\n");
    Git({"add", "shared.txt"});
    Git({"commit", "-q", "-m", "base"});
  }

  RunResult Tx(const Args& args) { return RunTx(args, {}, dir_.str()); }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }

  // git in the repository (or `-C DIR` given first); expects success, returns stdout.
  std::string Git(Args args) {
    if (args.size() < 2 || args[0] != "-C") args.insert(args.begin(), {"-C", repo_});
    RunResult r = RunProcess("/usr/bin/git", args, {}, dir_.str());
    EXPECT_EQ(r.exit_code, 0) << "git " << args[2] << ": " << r.err;
    return r.out;
  }

  // A task in the repository whose agent is the shell script `body` (written to a file).
  std::string AddAgentTask(const std::string& body, Args extra = {}) {
    std::string script = Path("agent-" + std::to_string(++scripts_) + ".sh");
    Write(script, "set -e\n" + body);
    Args args = {"--json", "task", "add", "t", "--repo", repo_, "--command", "sh " + script};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["id"];
  }

  json Show(const std::string& id) { return json::parse(Tx({"--json", "task", "show", id}).out); }
  std::string Status(const std::string& id) { return Show(id)["status"]; }
  bool WaitForStatus(const std::string& id, const std::string& status) {
    return WaitFor([&] { return Status(id) == status; }, 60s);
  }

  std::unique_ptr<BackgroundProcess> StartWorker(const std::string& name) {
    Args args = {"worker",       "start", "--name",          name, "--heartbeat-interval", "300ms",
                 "--kill-grace", "500ms", "--poll-interval", "1s"};
    return std::make_unique<BackgroundProcess>(TX_BINARY, args, Env{}, dir_.str(),
                                               Path(name + ".log"));
  }

  // The worktrees git knows of besides the main checkout: of tasks, or spares (kept for new
  // tasks: git/worktree.h).
  int Worktrees(bool spares) {
    std::string list = Git({"worktree", "list", "--porcelain"});
    int n = 0;
    for (std::size_t at = list.find("worktree "); at != std::string::npos;
         at = list.find("worktree ", at + 1)) {
      std::string path = list.substr(at + 9, list.find('\n', at) - at - 9);
      if (path == repo_) continue;
      n += (path.find("/.tx/worktrees/.spare-") != std::string::npos) == spares ? 1 : 0;
    }
    return n;
  }
  int LinkedWorktrees() { return Worktrees(false); }
  int Spares() { return Worktrees(true); }
  std::string WorktreeOf(const std::string& id) { return repo_ + "/.tx/worktrees/" + id; }

  TempDir dir_;
  std::string repo_;
  int scripts_ = 0;
};

TEST_F(GitWorktreeTest, ThreeAgentsInParallelEachWorkOnTheirOwnBranchAndNeverSeeTheOthers) {
  // Each agent writes its own file and changes the shared one, waits for the other two to have
  // done the same in their worktrees, then checks it sees neither of their edits, and commits.
  std::string body =
      "echo \"$TX_TASK_ID\" > \"mine-$TX_TASK_ID.txt\"\n"
      "echo \"$TX_TASK_ID\" >> shared.txt\n"
      "touch \"" +
      Path("started-") +
      "$TX_TASK_ID\"\n"
      "i=0; while [ $(ls " +
      Path("") +
      " | grep -c '^started-') -lt 3 ]; do\n"
      "  i=$((i + 1)); [ $i -lt 600 ] || exit 9; sleep 0.1; done\n"
      "[ $(ls mine-*.txt | wc -l) -eq 1 ] || exit 3\n"
      "[ $(wc -l < shared.txt) -eq 2 ] || exit 4\n"
      "[ \"$(git rev-parse --abbrev-ref HEAD)\" = \"tx/$TX_TASK_ID\" ] || exit 5\n"
      "[ \"$PWD\" = \"$TX_WORKTREE\" ] || exit 6\n"
      "grep -q \"$TX_TASK_ID\" CLAUDE.md && grep -q \"$TX_TASK_ID\" AGENTS.md || exit 7\n"
      "git add -A && git commit -q -m \"work of $TX_TASK_ID\"\n";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(AddAgentTask(body));
  std::string main_before = Git({"rev-parse", "main"});
  auto a = StartWorker("a");
  auto b = StartWorker("b");
  auto c = StartWorker("c");
  for (const auto& id : ids) {
    ASSERT_TRUE(WaitForStatus(id, "done")) << id << " " << Show(id).dump() << "\n"
                                           << ReadFile(Path(".tx/logs/" + id + "/1.log"));
  }
  for (const auto& id : ids) {
    // Its branch has its own commit on top of the base, with its own edits alone — and no
    // instruction file.
    EXPECT_EQ(Git({"rev-parse", "tx/" + id + "~1"}), main_before);
    EXPECT_EQ(Git({"show", "--name-only", "--format=", "tx/" + id}),
              "mine-" + id + ".txt\nshared.txt\n");
    EXPECT_EQ(Git({"show", "tx/" + id + ":shared.txt"}), "base\n" + id + "\n");
    // Done without review: the worktree goes (just after the outcome), the branch stays.
    EXPECT_TRUE(WaitFor([&] { return !fs::exists(WorktreeOf(id)); }, 10s));
  }
  EXPECT_EQ(LinkedWorktrees(), 0);
  EXPECT_EQ(Spares(), 1);  // [git] spare_worktrees, 1 by default; the others deleted
  EXPECT_EQ(Git({"rev-parse", "main"}), main_before);
  EXPECT_EQ(Git({"status", "--porcelain"}), "");
}

TEST_F(GitWorktreeTest, AfterKill9OfTheWorkerMidEditTheRetryContinuesOnTheSameBranch) {
  std::string body =
      "if [ -e progress.txt ]; then\n"
      "  cat progress.txt > " +
      Path("seen-by-retry") +
      "\n"
      "  echo \"attempt $TX_ATTEMPT\" >> progress.txt\n"
      "  git add -A && git commit -q -m \"attempt $TX_ATTEMPT\"; exit 0\n"
      "fi\n"
      "echo committed > progress.txt; git add progress.txt; git commit -q -m \"attempt 1\"\n"
      "echo uncommitted >> progress.txt\n"
      "echo $$ > " +
      Path("agent.pid") +
      "\n"
      "exec sleep 300\n";
  std::string id = AddAgentTask(body);
  auto first = StartWorker("first");
  pid_t agent = ReadPidFile(Path("agent.pid"));
  ASSERT_GT(agent, 0) << first->Output();
  first->Signal(SIGKILL);
  first->Wait(10s);
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << "agent outlived its worker";
  EXPECT_TRUE(fs::exists(WorktreeOf(id)));  // a crash removes nothing
  ASSERT_TRUE(WaitFor([&] {
    Tx({"orchestrator", "reconcile"});
    return Status(id) == "ready";
  }));
  auto second = StartWorker("second");
  ASSERT_TRUE(WaitForStatus(id, "done")) << ReadFile(Path(".tx/logs/" + id + "/2.log"));
  // The retry found the first attempt's work, committed and not, on the same branch.
  EXPECT_EQ(ReadFile(Path("seen-by-retry")), "committed\nuncommitted\n");
  EXPECT_EQ(Git({"log", "--format=%s", "tx/" + id}), "attempt 2\nattempt 1\nbase\n");
  EXPECT_EQ(Git({"show", "tx/" + id + ":progress.txt"}), "committed\nuncommitted\nattempt 2\n");
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(WorktreeOf(id)); }, 10s));
  EXPECT_EQ(LinkedWorktrees(), 0);
}

TEST_F(GitWorktreeTest, CancelLeavesNoWorktreeAndNoLockOnTheBranch) {
  std::string body =
      "echo edit > wip.txt; git add wip.txt; git commit -q -m wip\n"
      "echo $$ > " +
      Path("agent.pid") +
      "\n"
      "exec sleep 300\n";
  std::string running = AddAgentTask(body);
  auto worker = StartWorker("w");
  pid_t agent = ReadPidFile(Path("agent.pid"));
  ASSERT_GT(agent, 0) << worker->Output();
  RunResult r = Tx({"task", "cancel", running});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitFor([&] { return !Running(agent); }, 10s)) << "agent still running";
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(WorktreeOf(running)); }, 10s));
  EXPECT_EQ(LinkedWorktrees(), 0);
  // The branch is nobody's checkout any more: the main checkout can take it.
  Git({"checkout", "-q", "tx/" + running});
  EXPECT_EQ(ReadFile(repo_ + "/wip.txt"), "edit\n");
  Git({"checkout", "-q", "main"});

  // A task whose attempt failed keeps its worktree for the retry, until it is cancelled (or
  // fails for good).
  std::string failing = AddAgentTask("echo half > half.txt\nexit 1\n", {"--max-attempts", "2"});
  ASSERT_TRUE(
      WaitFor([&] { return Show(failing)["attempt"] == 1 && Status(failing) == "ready"; }, 60s));
  worker->Signal(SIGTERM);  // idle: stops at once, before the retry's backoff ends
  worker->Wait(30s);
  EXPECT_TRUE(fs::exists(WorktreeOf(failing) + "/half.txt"));
  r = Tx({"task", "cancel", failing});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(WorktreeOf(failing)));

  std::string doomed = AddAgentTask("echo half > half.txt\nexit 1\n", {"--max-attempts", "1"});
  auto again = StartWorker("w2");
  ASSERT_TRUE(WaitForStatus(doomed, "failed"));
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(WorktreeOf(doomed)); }, 10s));
  EXPECT_EQ(LinkedWorktrees(), 0);
  EXPECT_EQ(Git({"status", "--porcelain"}), "");
}

TEST_F(GitWorktreeTest, SetupCommandsRunOnceInANewWorktreeAndABadRepositoryFailsTheAttempt) {
  Write(Path(".tx/config.toml"),
        "[git]\nsetup = [\"echo installed >> deps.txt\", \"test -e shared.txt\"]\n");
  std::string id = AddAgentTask("cat deps.txt > " + Path("deps-$TX_ATTEMPT") +
                                    "\n"
                                    "[ \"$TX_ATTEMPT\" -ge 2 ] || exit 1\n",
                                {"--max-attempts", "2", "--review"});
  auto worker = StartWorker("w");
  ASSERT_TRUE(WaitForStatus(id, "review")) << worker->Output();
  EXPECT_EQ(ReadFile(Path("deps-1")), "installed\n");
  EXPECT_EQ(ReadFile(Path("deps-2")), "installed\n");  // not run again for the retry
  EXPECT_NE(ReadFile(Path(".tx/logs/" + id + "/1.log")).find("tx setup: echo installed"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(WorktreeOf(id)));  // in review: kept for requested changes

  // A relative --repo is kept as the path it names here, not as typed.
  RunResult rel = Tx({"--json", "task", "add", "t", "--repo", "./repo/", "--command", "true",
                      "--after", id});  // blocked: no worker runs it
  ASSERT_EQ(rel.exit_code, 0) << rel.err;
  EXPECT_EQ(json::parse(rel.out)["repo"], repo_ + "/") << rel.out;
  ASSERT_EQ(Tx({"task", "cancel", json::parse(rel.out)["id"]}).exit_code, 0);

  RunResult r = Tx({"--json", "task", "add", "t", "--repo", Path("no-repo"), "--command", "true",
                    "--max-attempts", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string bad = json::parse(r.out)["id"];
  ASSERT_TRUE(WaitForStatus(bad, "failed"));
  EXPECT_NE(Show(bad)["error"].get<std::string>().find("git worktree: repo '" + Path("no-repo") +
                                                       "' is not a directory"),
            std::string::npos)
      << Show(bad).dump();
}

TEST_F(GitWorktreeTest, ApprovedBranchesMergeInTurnAndAConflictingOneComesBackThenLands) {
  // X and Y change the same line; Z adds a file. Y's agent, told of a conflict, brings its branch
  // up to date keeping its own change.
  auto edit = [&](const std::string& line) {
    return "if grep -q 'stopped at a conflict in: shared.txt' CLAUDE.md; then\n"
           "  git rebase -q -X theirs \"$TX_BASE_BRANCH\"; exit 0\n"
           "fi\n"
           "printf 'base\\n" +
           line +
           "\\n' > shared.txt\n"
           "git commit -q -am \"" +
           line + "\"\n";
  };
  std::string x = AddAgentTask(edit("X"), {"--review"});
  std::string y = AddAgentTask(edit("Y"), {"--review"});
  std::string z = AddAgentTask("echo z > z.txt; git add z.txt; git commit -q -m Z\n", {"--review"});
  auto worker = StartWorker("w");
  for (const auto& id : {x, y, z}) ASSERT_TRUE(WaitForStatus(id, "review")) << id;
  // Each went to review with its branch's summary.
  json summary = Show(z)["metadata"]["branch"];
  EXPECT_EQ(summary["branch"], "tx/" + z) << summary.dump();
  EXPECT_EQ(summary["base"], "main");
  ASSERT_EQ(summary["commits"].size(), 1u) << summary.dump();
  EXPECT_EQ(summary["commits"][0]["subject"], "Z");
  EXPECT_EQ(summary["files_changed"], 1);
  EXPECT_EQ(summary["insertions"], 1);

  // A branch is merged only once approved.
  RunResult early = Tx({"task", "merge", x});
  EXPECT_EQ(early.exit_code, 4) << early.err;
  EXPECT_NE(early.err.find("cannot merge task " + x + ": it is review"), std::string::npos);
  RunResult diff = Tx({"task", "diff", y});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_NE(diff.out.find("tx/" + y + " against main: 1 commit, 1 file changed, +1 -0"),
            std::string::npos)
      << diff.out;
  EXPECT_NE(diff.out.find("+Y"), std::string::npos) << diff.out;
  for (const auto& id : {x, y, z}) ASSERT_EQ(Tx({"task", "approve", id}).exit_code, 0);

  // Two merges started together both land, one after the other.
  std::vector<RunResult> merges(2);
  std::thread mx([&] { merges[0] = Tx({"task", "merge", x}); });
  std::thread mz([&] { merges[1] = Tx({"task", "merge", z}); });
  mx.join();
  mz.join();
  for (const auto& m : merges) EXPECT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(Status(x), "done");
  EXPECT_EQ(Status(z), "done");
  EXPECT_EQ(ReadFile(repo_ + "/shared.txt"), "base\nX\n");
  EXPECT_EQ(ReadFile(repo_ + "/z.txt"), "z\n");

  // Y now conflicts: the base is left as it was, and Y goes back with the conflict described.
  std::string main_tip = Git({"rev-parse", "main"});
  RunResult refused = Tx({"task", "merge", y});
  EXPECT_EQ(refused.exit_code, 4) << refused.err;
  EXPECT_NE(refused.err.find("not merged, and sent back to the queue"), std::string::npos)
      << refused.err;
  EXPECT_EQ(Git({"rev-parse", "main"}), main_tip);
  json back = Show(y);
  EXPECT_NE(back["metadata"]["review_notes"][0].get<std::string>().find(
                "stopped at a conflict in: shared.txt"),
            std::string::npos)
      << back.dump();
  // Its retry resolves it; approved again, it merges.
  ASSERT_TRUE(WaitForStatus(y, "review")) << ReadFile(Path(".tx/logs/" + y + "/2.log"));
  EXPECT_EQ(Show(y)["attempt"], 2);
  ASSERT_EQ(Tx({"task", "approve", y}).exit_code, 0);
  RunResult landed = Tx({"task", "merge", y});
  ASSERT_EQ(landed.exit_code, 0) << landed.err;
  EXPECT_EQ(Status(y), "done");
  EXPECT_EQ(ReadFile(repo_ + "/shared.txt"), "base\nY\n");
  // One line of history, X and Z in whichever order their merges took the lock.
  std::string log = Git({"log", "--format=%s", "main"});
  EXPECT_TRUE(log == "Y\nZ\nX\nbase\n" || log == "Y\nX\nZ\nbase\n") << log;
  EXPECT_EQ(Git({"rev-list", "--merges", "--count", "main"}), "0\n");
  EXPECT_EQ(Git({"branch", "--list", "tx/*"}), "");
  EXPECT_EQ(LinkedWorktrees(), 0);
  EXPECT_EQ(Git({"status", "--porcelain"}), "");
}

TEST_F(GitWorktreeTest, ARedCheckBlocksTheMergeAndSendsTheTaskBackWithItsOutput) {
  Write(Path(".tx/config.toml"),
        "[git]\ncheck = \"test ! -e broken.txt || { echo broken.txt must go; exit 1; }\"\n");
  std::string id = AddAgentTask("echo x > broken.txt; git add broken.txt; git commit -q -m oops\n",
                                {"--review", "--max-attempts", "1"});
  auto worker = StartWorker("w");
  ASSERT_TRUE(WaitForStatus(id, "review"));
  worker->Signal(SIGTERM);  // so that the task waits in the queue once sent back
  worker->Wait(30s);
  ASSERT_EQ(Tx({"task", "approve", id}).exit_code, 0);
  std::string main_tip = Git({"rev-parse", "main"});
  RunResult r = Tx({"task", "merge", id});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(Git({"rev-parse", "main"}), main_tip);
  EXPECT_FALSE(fs::exists(repo_ + "/broken.txt"));
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready");
  std::string note = t["metadata"]["review_notes"][0];
  EXPECT_NE(note.find("failed (exit status 1)"), std::string::npos) << note;
  EXPECT_NE(note.find("broken.txt must go"), std::string::npos) << note;
  ASSERT_EQ(Tx({"task", "cancel", id}).exit_code, 0);
  EXPECT_FALSE(fs::exists(WorktreeOf(id)));
  EXPECT_EQ(LinkedWorktrees(), 0);
}

// Auto-merge on a green check, asked for by the task (--auto-merge) or by its queue in the
// config: no person approves. A red check sends the task back with its output, and the retry,
// once green, lands.
TEST_F(GitWorktreeTest, AutoMergeLandsABranchOnAGreenCheckAndSendsARedOneBack) {
  Write(Path(".tx/config.toml"),
        "[git]\ncheck = \"test ! -e broken.txt || { echo broken.txt must go; exit 1; }\"\n"
        "[git.queues.auto]\nrepo = \"" +
            repo_ + "\"\nauto_merge = true\n");
  // By its queue: no --repo, no --auto-merge.
  std::string script = Path("agent-good.sh");
  Write(script, "set -e\necho good > good.txt; git add good.txt; git commit -q -m good\n");
  RunResult added =
      Tx({"--json", "task", "add", "good", "--queue", "auto", "--command", "sh " + script});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  json good = json::parse(added.out);
  EXPECT_EQ(good["repo"], repo_);
  EXPECT_EQ(good["review"], true);
  EXPECT_EQ(good["metadata"]["auto_merge"], true);
  // By the task: red first, then its retry reads the check's output and mends it.
  std::string fixed = AddAgentTask(
      "if grep -q 'broken.txt must go' CLAUDE.md; then\n"
      "  git rm -q broken.txt; git commit -q -m 'remove broken.txt'; exit 0\n"
      "fi\n"
      "echo x > broken.txt; git add broken.txt; git commit -q -m oops\n",
      {"--auto-merge"});
  Args start = {"worker",
                "start",
                "--name",
                "w",
                "--queues",
                "default,auto",
                "--heartbeat-interval",
                "300ms",
                "--poll-interval",
                "1s"};
  BackgroundProcess worker(TX_BINARY, start, Env{}, dir_.str(), Path("w.log"));
  ASSERT_TRUE(WaitForStatus(good["id"], "done")) << ReadFile(Path("w.log"));
  ASSERT_TRUE(WaitForStatus(fixed, "done")) << ReadFile(Path("w.log"));
  EXPECT_EQ(ReadFile(repo_ + "/good.txt"), "good\n");
  EXPECT_FALSE(fs::exists(repo_ + "/broken.txt"));
  json t = Show(fixed);
  EXPECT_EQ(t["attempt"], 2);
  std::string note = t["metadata"]["review_notes"][0];
  EXPECT_NE(note.find("broken.txt must go"), std::string::npos) << note;
  // The green check approved it, once, with the merge; the red one approved nothing.
  json events = json::parse(Tx({"--json", "events"}).out);
  int approvals = 0, merges = 0, refusals = 0;
  for (const auto& e : events) {
    if (e["task_id"] != fixed) continue;
    approvals += e["type"] == "task.approved" ? 1 : 0;
    merges += e["type"] == "task.merged" ? 1 : 0;
    refusals += e["type"] == "task.merge_refused" ? 1 : 0;
  }
  EXPECT_EQ(approvals, 1);
  EXPECT_EQ(refusals, 1);
  EXPECT_EQ(merges, 1);
  EXPECT_EQ(Git({"branch", "--list", "tx/*"}), "");
  EXPECT_EQ(LinkedWorktrees(), 0);
  EXPECT_EQ(Git({"status", "--porcelain"}), "");
}

// Without a check there is no green check to trust: an auto-merge task waits for a person.
TEST_F(GitWorktreeTest, AutoMergeWithoutACheckWaitsInReview) {
  std::string id =
      AddAgentTask("echo a > a.txt; git add a.txt; git commit -q -m a\n", {"--auto-merge"});
  auto worker = StartWorker("w");
  ASSERT_TRUE(WaitForStatus(id, "review"));
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(Path("w.log")).find("no [git] check is set") != std::string::npos; },
      30s))
      << ReadFile(Path("w.log"));
  EXPECT_EQ(Status(id), "review");
  EXPECT_EQ(Git({"log", "--format=%s", "main"}), "base\n");
  ASSERT_EQ(Tx({"task", "approve", id}).exit_code, 0);
  RunResult merged = Tx({"task", "merge", id});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(Git({"log", "--format=%s", "main"}), "a\nbase\n");
}

}  // namespace
