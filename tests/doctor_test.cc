// tx doctor end to end (issue 24): the real binary on a real store in a fresh directory, healthy
// and broken — a token others can read, a sandbox this machine cannot run, an agent's program
// missing, worktrees and a pid file left behind — judged by its exit code, its lines and its
// JSON.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pg_test_db.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tx::testing::Env;
using tx::testing::PgTestDb;
using tx::testing::RunProcess;
using tx::testing::RunResult;
using tx::testing::RunTx;
using tx::testing::TempDir;
using Args = std::vector<std::string>;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line of `text` that starts with `level` padded to its column, then `check` and a space
// (the check column is at least 10 wide): "" when there is none.
std::string LineOf(const std::string& text, const std::string& level, const std::string& check) {
  std::string head = level + std::string(6 - level.size(), ' ') + check + " ";
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.starts_with(head)) return line;
    at = end + 1;
  }
  return "";
}

class Doctor : public ::testing::Test {
 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  RunResult Tx(const Args& args, const Env& env = {}) { return RunTx(args, env, dir_.str()); }

  std::string Describe(const RunResult& r) {
    return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
  }

  // tx doctor --json: one JSON document, whatever the exit code.
  json DoctorJson(int expect_exit, const Env& env = {}) {
    RunResult r = Tx({"doctor", "--json"}, env);
    EXPECT_EQ(r.exit_code, expect_exit) << Describe(r);
    json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "not one JSON document: " << Describe(r);
    return j;
  }

  // The findings of check `check` in a --json document.
  static std::vector<json> FindingsOf(const json& doc, const std::string& check) {
    std::vector<json> out;
    for (const auto& f : doc["findings"]) {
      if (f["check"] == check) out.push_back(f);
    }
    return out;
  }

  void WriteConfig(const std::string& toml) { std::ofstream(Tx_() / "config.toml") << toml; }
  fs::path Tx_() const { return dir_.path() / ".tx"; }

  TempDir dir_;
};

TEST_F(Doctor, AFreshStoreIsHealthyAndExitsZero) {
  RunResult r = Tx({"doctor"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string store = LineOf(r.out, "ok", "store");
  EXPECT_TRUE(Contains(store, ".tx/tx.db opens, schema ")) << r.out;
  EXPECT_TRUE(Contains(store, "(current)")) << r.out;
  EXPECT_TRUE(Contains(LineOf(r.out, "ok", "token"), (Tx_() / "token").string() + " is its owner"))
      << r.out;
  EXPECT_NE(LineOf(r.out, "ok", "config"), "") << r.out;
  EXPECT_NE(LineOf(r.out, "ok", "sandbox"), "") << r.out;
  EXPECT_TRUE(Contains(LineOf(r.out, "ok", "clock"), "n/a")) << r.out;
  EXPECT_NE(LineOf(r.out, "ok", "locks"), "") << r.out;
  EXPECT_EQ(LineOf(r.out, "fail", "store"), "") << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(Doctor, JsonHoldsOkAndEveryFinding) {
  json j = DoctorJson(0);
  EXPECT_EQ(j["ok"], true);
  ASSERT_TRUE(j["findings"].is_array());
  for (const char* check : {"store", "config", "token", "git", "cgroup", "sandbox", "disk", "clock",
                            "worktrees", "locks"}) {
    EXPECT_FALSE(FindingsOf(j, check).empty()) << check << " in " << j.dump(2);
  }
  for (const auto& f : j["findings"]) {
    EXPECT_TRUE(f["level"] == "ok" || f["level"] == "warn" || f["level"] == "fail") << f;
    EXPECT_TRUE(f["detail"].is_string() && f["fix"].is_string()) << f;
  }
  EXPECT_EQ(FindingsOf(j, "store")[0]["level"], "ok");
}

TEST_F(Doctor, ATokenOthersCanReadFailsNamingTheFileAndTheChmod) {
  std::string token = (Tx_() / "token").string();
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  std::string line = LineOf(r.out, "fail", "token");
  EXPECT_TRUE(Contains(line, token + " can be read by others (mode 0644)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fix: chmod 600 " + token + "\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 failure")) << r.out;

  json j = DoctorJson(1);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(FindingsOf(j, "token")[0]["level"], "fail");
  EXPECT_EQ(FindingsOf(j, "token")[0]["fix"], "chmod 600 " + token);

  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  EXPECT_EQ(Tx({"doctor"}).exit_code, 0) << "the fix fixes it";
}

TEST_F(Doctor, ASandboxThisMachineCannotRunFailsInOneLineAndExitsOne_Issue25) {
  WriteConfig("[worker]\nsandbox = \"bwrap\"\n");
  // tx is run by its absolute path; nothing else on PATH, bwrap included.
  Env no_path{{"PATH", "/nonexistent"}};
  RunResult r = Tx({"doctor"}, no_path);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  std::string line = LineOf(r.out, "fail", "sandbox");
  EXPECT_TRUE(Contains(line, "sandbox = bwrap, but bwrap cannot be run here")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fix: install bubblewrap")) << r.out;
  // git is missing too, but no task is configured to need it: a warning.
  EXPECT_NE(LineOf(r.out, "warn", "git"), "") << r.out;

  json j = DoctorJson(1, no_path);
  EXPECT_EQ(j["ok"], false);
  ASSERT_EQ(FindingsOf(j, "sandbox").size(), 1u) << j.dump(2);
  EXPECT_EQ(FindingsOf(j, "sandbox")[0]["level"], "fail");
}

TEST_F(Doctor, ASandboxAQueueAsksForIsCheckedToo) {
  WriteConfig("[git.queues.untrusted]\nsandbox = \"bwrap\"\n");
  json j = DoctorJson(1, {{"PATH", "/nonexistent"}});
  ASSERT_EQ(FindingsOf(j, "sandbox").size(), 1u) << j.dump(2);
  EXPECT_TRUE(Contains(FindingsOf(j, "sandbox")[0]["detail"], "queue untrusted"))
      << FindingsOf(j, "sandbox")[0];
}

TEST_F(Doctor, AProfileWhoseProgramIsMissingWarnsNamingTheProfile) {
  WriteConfig(
      "[agents.ghost]\n"
      "argv = [\"tx-doctor-test-no-such-program\", \"{prompt}\"]\n");
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << "a missing agent is a warning: " << Describe(r);
  std::string line = LineOf(r.out, "warn", "agent:ghost");
  EXPECT_TRUE(Contains(line, "'tx-doctor-test-no-such-program' is not on PATH")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fix: install tx-doctor-test-no-such-program")) << r.out;
}

TEST_F(Doctor, AProfilesProgramIsFoundWithTheVersionItPrints) {
  fs::path fake = dir_.path() / "fake-claude";
  std::ofstream(fake) << "#!/bin/sh\n[ \"$1\" = --version ] && echo '9.9.9 (Claude Code)'\n";
  fs::permissions(fake, fs::perms::owner_all);
  WriteConfig("[worker]\nagent = \"mine\"\n[agents.mine]\nadapter = \"claude\"\nargv = [\"" +
              fake.string() + "\", \"-p\", \"{prompt}\"]\n");
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  std::string line = LineOf(r.out, "ok", "agent:mine");
  EXPECT_TRUE(Contains(line, fake.string() + " (the workers' default): 9.9.9 (Claude Code)"))
      << r.out;
}

TEST_F(Doctor, ADefaultAgentMissingWarnsThatCommandTasksStillRun) {
  WriteConfig("[worker]\nagent = \"ghost\"\n[agents.ghost]\nargv = [\"tx-doctor-no-such\"]\n");
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  std::string line = LineOf(r.out, "warn", "agent:ghost");
  EXPECT_TRUE(Contains(line, "(the workers' default)")) << r.out;
  EXPECT_TRUE(Contains(line, "command tasks still run")) << r.out;
}

TEST_F(Doctor, ABrokenConfigFails) {
  WriteConfig("[worker]\nno_such_key = 1\n");
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_TRUE(Contains(LineOf(r.out, "fail", "config"), "no_such_key")) << r.out;
}

TEST(DoctorWithoutStore, NoStoreFailsWithTheFix) {
  TempDir dir;
  RunResult r = RunTx({"doctor"}, {}, dir.str());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(LineOf(r.out, "fail", "store"), ".tx/tx.db does not open")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fix: tx init here")) << r.out;
  EXPECT_FALSE(fs::exists(dir.path() / ".tx" / "tx.db")) << "doctor creates no store";
}

TEST_F(Doctor, WorktreesOfFinishedOrUnknownTasksAreLeftoversAndRunningOnesAreNot) {
  fs::path repo = dir_.path() / "repo";
  fs::create_directories(repo);
  auto git = [&](const Args& args) {
    RunResult r = RunProcess("/usr/bin/git", args, {}, repo.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  git({"init", "-q", "-b", "main"});
  git({"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"});
  auto add = [&](const std::string& title) {
    RunResult r = Tx({"task", "add", title, "--repo", repo.string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["id"].get<std::string>();
  };
  std::string cancelled = add("cancelled");
  std::string waiting = add("still ready");
  ASSERT_EQ(Tx({"task", "cancel", cancelled}).exit_code, 0);
  fs::path worktrees = repo / ".tx" / "worktrees";
  for (const std::string& id :
       {cancelled, waiting, std::string("task-zzzzzzzz"), ".spare-" + cancelled}) {
    fs::create_directories(worktrees / id);
  }
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << "leftovers are a warning: " << Describe(r);
  std::string line = LineOf(r.out, "warn", "worktrees");
  EXPECT_TRUE(Contains(line, "2 leftover worktree(s) in " + repo.string())) << r.out;
  EXPECT_TRUE(Contains(line, cancelled + " (cancelled)")) << r.out;
  EXPECT_TRUE(Contains(line, "task-zzzzzzzz (not in this store)")) << r.out;
  EXPECT_FALSE(Contains(line, waiting)) << "a task that may still run keeps its worktree";
  EXPECT_FALSE(Contains(line, ".spare-")) << "spares are kept on purpose";
  EXPECT_TRUE(Contains(r.out, "fix: remove each with git -C " + repo.string() + " worktree remove"))
      << r.out;
}

TEST_F(Doctor, APidFileNamingAProcessThatIsNoOrchestratorIsAStaleLock) {
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  // This test's own pid: alive, and no orchestrator.
  std::string pid_file = (Tx_() / "orchestrator.pid").string();
  std::ofstream(pid_file) << ::getpid() << " " << host << "\n";
  RunResult r = Tx({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  std::string line = LineOf(r.out, "warn", "locks");
  EXPECT_TRUE(Contains(line, pid_file + " names pid " + std::to_string(::getpid()))) << r.out;
  EXPECT_TRUE(Contains(line, "runs no orchestrator")) << r.out;
  EXPECT_TRUE(Contains(r.out, "rm " + pid_file)) << r.out;
}

TEST(DoctorOnPostgres, TheClockIsComparedWithTheServersAndAHealthyStoreExitsZero) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir;
  RunResult init = RunTx({"--db", db.url(), "init"}, {}, dir.str());
  ASSERT_EQ(init.exit_code, 0) << init.err;
  RunResult r = RunTx({"--db", db.url(), "doctor", "--json"}, {}, dir.str());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  bool clock = false;
  for (const auto& f : j["findings"]) {
    if (f["check"] == "store") {
      EXPECT_EQ(f["level"], "ok") << f;
    }
    if (f["check"] != "clock") continue;
    clock = true;
    // The same machine's clock: never a second off.
    EXPECT_EQ(f["level"], "ok") << f;
    EXPECT_TRUE(Contains(f["detail"], "the PostgreSQL server's")) << f;
  }
  EXPECT_TRUE(clock) << j.dump(2);
}

TEST(DoctorOnPostgres, AServerThatCannotBeReachedFailsTheStore) {
  TempDir dir;
  RunResult r = RunTx({"--db", "postgresql://tx@127.0.0.1:1/none", "doctor"}, {}, dir.str());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(LineOf(r.out, "fail", "store"), "does not open: cannot connect")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fix: check the URL")) << r.out;
  EXPECT_TRUE(Contains(LineOf(r.out, "warn", "clock"), "not compared")) << r.out;
}

}  // namespace
