// The HTTP API over real HTTP: `tx serve` as a child process, requests with httplib::Client, the
// store read back through the CLI. Every route, every error status, auth on and off loopback.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "git/worktree.h"
#include "http_client.h"
#include "process_probes.h"
#include "run_process.h"

namespace {

using namespace std::chrono_literals;
using namespace tx::testing;
using nlohmann::json;
using Args = std::vector<std::string>;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Tx({"init"}).exit_code, 0);
    token_ = ReadFile((dir_.path() / ".tx" / "token").string());
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
    ASSERT_FALSE(token_.empty());
  }

  void TearDown() override {
    if (server_) {
      server_->Signal(SIGTERM);
      EXPECT_EQ(server_->Wait(30s), 0) << server_->Output();
    }
  }

  RunResult Tx(Args args) { return RunTx(std::move(args), {}, dir_.str()); }
  json TxJson(Args args) {
    args.insert(args.begin(), "--json");
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  // Starts `tx serve` on a free port of `host` and returns a client for it.
  void Serve(const std::string& host = "127.0.0.1") {
    server_ = std::make_unique<BackgroundProcess>(
        TX_BINARY, Args{"serve", "--http", host + ":0"}, Env{}, dir_.str(),
        (dir_.path() / ("serve-" + std::to_string(++serves_) + ".out")).string());
    std::smatch m;
    ASSERT_TRUE(WaitFor(
        [&] {
          std::string out = server_->Output();
          if (!std::regex_search(out, m, std::regex(R"(listening on http://\S+:(\d+))")))
            return false;
          port_ = std::stoi(m[1]);
          return true;
        },
        30s))
        << server_->Output();
  }

  httplib::Client Client(const std::string& bearer = "") {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    if (!bearer.empty()) c.set_bearer_token_auth(bearer);
    return c;
  }

  // A request and its JSON reply; status -1 when the request failed.
  using Reply = HttpReply;
  static Reply Of(const httplib::Result& r) { return ReplyOf(r); }
  Reply Get(const std::string& path, const std::string& bearer = "") {
    return Of(Client(bearer).Get(path));
  }
  Reply Post(const std::string& path, const std::string& body, const std::string& bearer) {
    return Of(Client(bearer).Post(path, body, "application/json"));
  }
  Reply Patch(const std::string& path, const std::string& body, const std::string& bearer) {
    return Of(Client(bearer).Patch(path, body, "application/json"));
  }
  std::string AddOverHttp(const std::string& title, json extra = json::object()) {
    extra["title"] = title;
    Reply r = Post("/api/tasks", extra.dump(), token_);
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body.value("id", "");
  }
  static std::string ErrorCode(const Reply& r) { return ErrorCodeOf(r); }
  // Runs git in `repo` (as the user t) and expects it to succeed; returns its stdout.
  static std::string GitIn(const std::string& repo, std::vector<std::string> args) {
    args.insert(args.begin(), {"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"});
    RunResult r = RunProcess("/usr/bin/git", args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // A repository at <dir>/repo on main with one empty commit, for tasks that name one.
  std::string MakeRepo() {
    std::string repo = (dir_.path() / "repo").string();
    std::filesystem::create_directories(repo);
    GitIn(repo, {"init", "-q", "-b", "main"});
    GitIn(repo, {"commit", "-q", "--allow-empty", "-m", "base"});
    return repo;
  }
  std::size_t TaskCount() { return TxJson({"task", "list"}).size(); }

  TempDir dir_;
  std::string token_;
  std::unique_ptr<BackgroundProcess> server_;
  int serves_ = 0;  // each server writes a log of its own, so its port is the one read back
  int port_ = 0;
};

// tx serve is tx with its HTTP module opened (exec/http_module.h), found beside it in the build.
TEST_F(ApiTest, TheServerIsTxWithItsHttpModuleOpened) {
  Serve();
  std::string pid = std::to_string(server_->pid());
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + pid + "/exe").filename(), "tx");
  std::string maps = ReadFile("/proc/" + pid + "/maps");
  std::filesystem::path module = std::filesystem::path(TX_BINARY).parent_path() / "libtx_http.so";
  EXPECT_NE(maps.find(std::filesystem::canonical(module).string()), std::string::npos) << maps;
  auto health = Client().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(ApiTest, ReadsNeedNoTokenOnLoopbackButChangesDo) {
  Serve();
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/healthz").body["ok"], true);
  Reply anonymous = Post("/api/tasks", R"({"title": "x"})", "");
  EXPECT_EQ(anonymous.status, 401) << anonymous.body.dump();
  EXPECT_EQ(ErrorCode(anonymous), "unauthorized");
  Reply wrong = Post("/api/tasks", R"({"title": "x"})", "not-the-token");
  EXPECT_EQ(wrong.status, 401);
  httplib::Headers basic = {{"Authorization", "Basic dTpw"}};
  auto malformed = Client().Post("/api/tasks", basic, R"({"title": "x"})", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 401);
  EXPECT_EQ(TaskCount(), 0u) << "a refused request wrote something";
  Reply ok = Post("/api/tasks", R"({"title": "x"})", token_);
  EXPECT_EQ(ok.status, 201) << ok.body.dump();
  EXPECT_EQ(ok.location, "/api/tasks/" + ok.body["id"].get<std::string>());
  EXPECT_EQ(TaskCount(), 1u);
}

TEST_F(ApiTest, ATaskAddedOverHttpIsTheOneTheCliShows) {
  Serve();
  std::string id = AddOverHttp("write the docs", {{"priority", 7},
                                                  {"queue", "docs"},
                                                  {"requires", {"gpu"}},
                                                  {"command", "echo 'a b'"},
                                                  {"timeout", "5m"},
                                                  {"max_attempts", 2},
                                                  {"steps", {"one", "two"}},
                                                  {"metadata", {{"k", 1}}}});
  json cli = TxJson({"task", "show", id});
  Reply http = Get("/api/tasks/" + id);
  ASSERT_EQ(http.status, 200);
  EXPECT_EQ(http.body, cli) << "one JSON mapping for both";
  EXPECT_EQ(cli["priority"], 7);
  EXPECT_EQ(cli["queue"], "docs");
  EXPECT_EQ(cli["command"], json({"echo", "a b"}));
  EXPECT_EQ(cli["timeout"], "5m");
  EXPECT_EQ(cli["max_attempts"], 2);
  // The add's own reply is the task as shown, with why no worker can take it yet.
  Reply added = Post("/api/tasks", R"({"title": "say \"hi\"\n", "steps": ["\u00e9"]})", token_);
  ASSERT_EQ(added.status, 201) << added.body.dump();
  EXPECT_EQ(added.body["warnings"],
            json::array({"no worker can claim it now: no worker is running"}));
  json shown = TxJson({"task", "show", added.body.value("id", "")});
  for (const auto& [key, value] : added.body.items()) {
    if (key != "warnings") {
      EXPECT_EQ(value, shown[key]) << key;
    }
  }
  EXPECT_EQ(shown["title"], "say \"hi\"\n");
  EXPECT_EQ(added.body.size(), shown.size() - 1) << "all but show's unclaimable, and warnings";
  // And in the list, as shown, with why it waits and its cost (none yet).
  Reply listed = Get("/api/tasks?q=" + added.body.value("id", ""));
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.body["tasks"].size(), 1u) << listed.body.dump();
  const json& entry = listed.body["tasks"][0];
  for (const auto& [key, value] : entry.items()) {
    EXPECT_EQ(value, shown[key]) << key;
  }
  EXPECT_EQ(entry.size(), shown.size());
  EXPECT_EQ(entry["unclaimable"], "no worker is running");
  EXPECT_TRUE(entry["usage"].is_null());
  EXPECT_TRUE(listed.body["next_cursor"].is_null());
  // A command may also be given as argv.
  std::string argv = AddOverHttp("argv", {{"command", {"printf", "%s", "x y"}}});
  EXPECT_EQ(TxJson({"task", "show", argv})["command"], json({"printf", "%s", "x y"}));

  Reply patched =
      Patch("/api/tasks/" + id,
            R"({"title": "write better docs", "priority": -1, "metadata": {"j": 2}})", token_);
  ASSERT_EQ(patched.status, 200) << patched.body.dump();
  cli = TxJson({"task", "show", id});
  EXPECT_EQ(cli["title"], "write better docs");
  EXPECT_EQ(cli["priority"], -1);
  EXPECT_EQ(cli["metadata"], json({{"k", 1}, {"j", 2}}));
  EXPECT_EQ(patched.body, cli);
}

TEST_F(ApiTest, BadRequestsGetAClearErrorAndWriteNothing) {
  Serve();
  struct Case {
    std::string body;
    std::string message_part;
  };
  std::vector<Case> cases = {
      {R"({"title": )", "malformed JSON"},
      {R"(["title"])", "must be a JSON object"},
      {R"({"title": "x", "priorty": 3})", "unknown field 'priorty'"},
      {R"({"title": 5})", "field 'title' must be a string"},
      {R"({"title": "x", "priority": "high"})", "field 'priority' must be an integer"},
      {R"({"title": "x", "requires": "gpu"})", "field 'requires' must be an array"},
      {R"({"title": "x", "timeout": "soon"})", "soon"},
      {R"({"title": "x", "timeout": "3h"})", "timeout"},
      {R"({"title": "x", "max_attempts": 0})", "max attempts"},
      {R"({"title": "x", "metadata": [1]})", "field 'metadata' must be a JSON object"},
      {R"({"title": "x", "queue": "no spaces"})", "queue"},
      {R"({"title": "x", "after": ["task-zzzzzzzz"]})", "task-zzzzzzzz"},
      {R"({"description": "no title"})", "'title' is required"},
      {R"({"title": "x", "base": "main"})", "base branch needs a repository"},
      {R"({"title": "x", "repo": "relative/path"})", "'repo' must be an absolute path"},
      {R"({"title": "x", "sandbox": true})", "field 'sandbox' must be a string"},
      {R"({"title": "x", "sandbox": "chroot"})", "unknown sandbox 'chroot'"},
  };
  for (const auto& c : cases) {
    Reply r = Post("/api/tasks", c.body, token_);
    EXPECT_TRUE(r.status == 400 || r.status == 404) << c.body << " → " << r.status;
    ASSERT_TRUE(r.body.is_object()) << c.body;
    EXPECT_NE(r.body["error"].value("message", "").find(c.message_part), std::string::npos)
        << c.body << " → " << r.body.dump();
  }
  std::string huge = json({{"title", "x"}, {"description", std::string(2 << 20, 'a')}}).dump();
  Reply too_big = Post("/api/tasks", huge, token_);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_EQ(ErrorCode(too_big), "payload_too_large");
  EXPECT_EQ(TaskCount(), 0u) << "a refused request wrote something";

  EXPECT_EQ(Get("/api/tasks/task-zzzzzzzz").status, 404);
  EXPECT_EQ(ErrorCode(Get("/api/tasks/task-zzzzzzzz")), "not_found");
  EXPECT_EQ(Get("/api/no-such-route").status, 404);
  EXPECT_EQ(Get("/api/tasks?status=bogus").status, 400);
  EXPECT_EQ(Get("/api/tasks?limit=0").status, 400);
  EXPECT_EQ(Get("/api/tasks?stauts=ready").status, 400) << "a misspelt filter is refused";
  EXPECT_EQ(Get("/api/tasks?cursor=-4").status, 400);
  EXPECT_EQ(Patch("/api/tasks/task-zzzzzzzz", R"({"title": "y"})", token_).status, 404);
}

// POST /api/tasks with an array (issue 27): one transaction, all or none, a refusal naming the
// task by its place.
TEST_F(ApiTest, AnArrayOfTasksIsAddedInOneTransactionOrNotAtAll) {
  Serve();
  Reply r = Post("/api/tasks",
                 R"([{"title": "a", "priority": 2}, {"title": "b", "queue": "web"},
                     {"title": "c", "command": ["true"]}])",
                 token_);
  ASSERT_EQ(r.status, 201) << r.body.dump();
  ASSERT_EQ(r.body["added"], 3);
  ASSERT_EQ(r.body["ids"].size(), 3u);
  json b = TxJson({"task", "show", r.body["ids"][1]});
  EXPECT_EQ(b["title"], "b");
  EXPECT_EQ(b["queue"], "web");
  EXPECT_EQ(TxJson({"task", "show", r.body["ids"][2]})["command"], json::array({"true"}));

  struct Case {
    std::string body;
    std::string message_part;
  };
  std::string too_many = "[";
  for (int i = 0; i <= 10'000; ++i) too_many += std::string(i ? "," : "") + R"({"title":"x"})";
  too_many += "]";
  std::vector<Case> cases = {
      {R"([{"title": "fine"}, {"titel": "typo"}])", "task 2: unknown field 'titel'"},
      {R"([{"title": "fine"}, 5])", "task 2: must be a JSON object"},
      {R"([{"title": "fine"}, {"title": "x", "after": ["task-zzzzzzzz"]}])",
       "task 2: task task-zzzzzzzz (in --after) not found"},
      {"[]", "the array holds no task"},
      {too_many, "an array adds at most 10000 tasks (this one has 10001)"},
      {"5", "the request body must be a task or an array of tasks"},
  };
  for (const auto& c : cases) {
    Reply refused = Post("/api/tasks", c.body, token_);
    EXPECT_TRUE(refused.status == 400 || refused.status == 404)
        << c.body.substr(0, 80) << " → " << refused.status;
    EXPECT_NE(refused.body["error"].value("message", "").find(c.message_part), std::string::npos)
        << c.body.substr(0, 80) << " → " << refused.body.dump();
  }
  EXPECT_EQ(TaskCount(), 3u) << "a refused array wrote something";
}

// A big array's tasks are decoded on another thread while the first are inserted: the first task
// refused, in order, is the one named, whether its decoding or the service refuses it, and the
// tasks are added in the array's order.
TEST_F(ApiTest, ABigArrayIsAddedInItsOrderAndItsFirstRefusedTaskIsNamed) {
  Serve();
  auto array = [](int n, const std::map<int, std::string>& odd) {
    std::string body = "[";
    for (int i = 1; i <= n; ++i) {
      if (i > 1) body += ",";
      auto it = odd.find(i);
      body += it != odd.end() ? it->second : R"({"title":"t)" + std::to_string(i) + R"("})";
    }
    return body + "]";
  };
  const std::string typo = R"({"titel":"typo"})";
  const std::string unknown_after = R"({"title":"x","after":["task-zzzzzzzz"]})";
  struct Case {
    std::string body;
    int status;
    std::string message;
  };
  std::vector<Case> cases = {
      {array(1'000, {{777, typo}, {900, typo}}), 400, "task 777: unknown field 'titel'"},
      {array(1'000, {{250, unknown_after}, {600, typo}}), 404,
       "task 250: task task-zzzzzzzz (in --after) not found"},
      {array(1'000, {{30, typo}, {250, unknown_after}}), 400, "task 30: unknown field 'titel'"},
  };
  for (const auto& c : cases) {
    Reply refused = Post("/api/tasks", c.body, token_);
    EXPECT_EQ(refused.status, c.status) << refused.body.dump();
    EXPECT_EQ(refused.body["error"].value("message", ""), c.message) << refused.body.dump();
  }
  EXPECT_EQ(TaskCount(), 0u) << "a refused array wrote something";

  Reply added = Post("/api/tasks", array(1'000, {}), token_);
  ASSERT_EQ(added.status, 201) << added.body.dump();
  ASSERT_EQ(added.body["added"], 1'000);
  ASSERT_EQ(added.body["ids"].size(), 1'000u);
  for (int i : {0, 99, 100, 555, 999}) {
    EXPECT_EQ(TxJson({"task", "show", added.body["ids"][i]})["title"], "t" + std::to_string(i + 1));
  }
}

TEST_F(ApiTest, CancellingATaskInARepositoryRemovesItsWorktreeAndKeepsItsBranch) {
  Serve();
  std::string repo = MakeRepo();
  auto git = [&](std::vector<std::string> args) { return GitIn(repo, std::move(args)); };
  std::string id = AddOverHttp("in a repo", {{"repo", repo}});
  // As a worker running it would have made it.
  auto wt = tx::git::PrepareWorktree(repo, "", id);
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  ASSERT_TRUE(std::filesystem::exists(wt->path));
  Reply cancelled = Patch("/api/tasks/" + id, R"({"status": "cancelled"})", token_);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_FALSE(std::filesystem::exists(wt->path));
  EXPECT_EQ(git({"worktree", "list", "--porcelain"}).find(id), std::string::npos);
  EXPECT_NE(git({"branch", "--list", "tx/" + id}), "");
}

TEST_F(ApiTest, AReviewedBranchIsShownAsADiffAndMergedOnceApproved) {
  Serve();
  std::string repo = MakeRepo();
  auto git = [&](std::vector<std::string> args) { return GitIn(repo, std::move(args)); };
  std::string id = AddOverHttp("in a repo", {{"repo", repo}, {"review", true}});
  // Its agent's work, as a worker would have run it: a commit on its branch, then review.
  std::int64_t token = TxJson({"claim", id})["token"];
  auto wt = tx::git::PrepareWorktree(repo, "", id);
  ASSERT_TRUE(wt.ok()) << wt.error().message();
  std::ofstream(wt->path + "/feature.txt") << "feature\n";
  git({"-C", wt->path, "add", "feature.txt"});
  git({"-C", wt->path, "commit", "-q", "-m", "add the feature"});
  ASSERT_EQ(Tx({"task", "review", id, "--token", std::to_string(token)}).exit_code, 0);
  // The agent's own report carried the branch's summary onto the task.
  json branch = TxJson({"task", "show", id})["metadata"]["branch"];
  EXPECT_EQ(branch["branch"], "tx/" + id) << branch.dump();
  EXPECT_EQ(branch["commits"].size(), 1u) << branch.dump();
  EXPECT_EQ(branch["files_changed"], 1);
  EXPECT_FALSE(branch.contains("diff"));

  Reply diff = Get("/api/tasks/" + id + "/diff");
  ASSERT_EQ(diff.status, 200) << diff.body.dump();
  EXPECT_EQ(diff.body["branch"], "tx/" + id);
  EXPECT_EQ(diff.body["base"], "main");
  ASSERT_EQ(diff.body["commits"].size(), 1u);
  EXPECT_EQ(diff.body["commits"][0]["subject"], "add the feature");
  EXPECT_EQ(diff.body["files_changed"], 1);
  EXPECT_EQ(diff.body["insertions"], 1);
  EXPECT_NE(diff.body["diff"].get<std::string>().find("+feature"), std::string::npos);
  EXPECT_FALSE(Get("/api/tasks/" + id + "/diff?stat=1").body.contains("diff"));
  std::string plain = AddOverHttp("no repo");
  EXPECT_EQ(Get("/api/tasks/" + plain + "/diff").status, 400);
  EXPECT_EQ(Get("/api/tasks/task-zzzzzzzz/diff").status, 404);

  Reply early = Post("/api/tasks/" + id + "/merge", "", token_);
  EXPECT_EQ(early.status, 409) << early.body.dump();
  EXPECT_EQ(Post("/api/tasks/" + id + "/merge", R"({"nope": 1})", token_).status, 400);
  ASSERT_EQ(Patch("/api/tasks/" + id, R"({"status": "approved"})", token_).status, 200);
  EXPECT_EQ(Post("/api/tasks/" + id + "/merge", R"({"note": "ship"})", "").status, 401);
  Reply merged = Post("/api/tasks/" + id + "/merge", R"({"note": "ship"})", token_);
  ASSERT_EQ(merged.status, 200) << merged.body.dump();
  EXPECT_EQ(merged.body["status"], "done");
  EXPECT_EQ(git({"log", "--format=%s", "main"}), "add the feature\nbase\n");
  EXPECT_EQ(git({"branch", "--list", "tx/*"}), "");
}

// config.toml asks for isolation on a task's behalf: a queue's repository, review and auto-merge.
TEST_F(ApiTest, AQueueOfTheConfigAsksForGitIsolationOnBehalfOfItsTasks) {
  std::string repo = MakeRepo();
  std::ofstream(dir_.path() / ".tx" / "config.toml")
      << "[git.queues.web]\nrepo = \"" << repo << "\"\nreview = true\nsandbox = \"bwrap\"\n";
  Serve();
  Reply web = Post("/api/tasks", R"({"title": "w", "queue": "web"})", token_);
  ASSERT_EQ(web.status, 201) << web.body.dump();
  EXPECT_EQ(web.body["repo"], repo);
  EXPECT_EQ(web.body["review"], true);
  Reply plain = Post("/api/tasks", R"({"title": "p"})", token_);
  ASSERT_EQ(plain.status, 201) << plain.body.dump();
  EXPECT_EQ(plain.body["repo"], "");
  // A task's own sandbox, no less than its queue's (docs/sandbox.md).
  Reply boxed = Post("/api/tasks", R"({"title": "b", "sandbox": "bwrap"})", token_);
  ASSERT_EQ(boxed.status, 201) << boxed.body.dump();
  EXPECT_EQ(boxed.body["metadata"]["sandbox"], "bwrap");
  Reply lower = Post("/api/tasks", R"({"title": "l", "queue": "web", "sandbox": "none"})", token_);
  EXPECT_EQ(lower.status, 400) << lower.body.dump();
  EXPECT_NE(lower.body.dump().find("its tasks run in bwrap at least"), std::string::npos)
      << lower.body.dump();
  Reply no_repo = Post("/api/tasks", R"({"title": "a", "auto_merge": true})", token_);
  EXPECT_EQ(no_repo.status, 400);
  EXPECT_NE(no_repo.body.dump().find("auto-merge needs a repository"), std::string::npos);
  Reply automatic = Post(
      "/api/tasks", json({{"title", "a"}, {"repo", repo}, {"auto_merge", true}}).dump(), token_);
  ASSERT_EQ(automatic.status, 201) << automatic.body.dump();
  EXPECT_EQ(automatic.body["review"], true);
  EXPECT_EQ(automatic.body["metadata"]["auto_merge"], true);
  EXPECT_EQ(TaskCount(), 4u);
}

TEST_F(ApiTest, StatusChangesFollowTheCliRulesAndTheClaimToken) {
  Serve();
  std::string id = AddOverHttp("a");
  json claim = TxJson({"claim", id});
  std::int64_t token = claim["token"];
  Reply stale =
      Patch("/api/tasks/" + id, json({{"status", "done"}, {"token", token + 1}}).dump(), token_);
  EXPECT_EQ(stale.status, 409) << stale.body.dump();
  EXPECT_EQ(ErrorCode(stale), "conflict");
  Reply both = Patch("/api/tasks/" + id,
                     json({{"status", "done"}, {"token", token}, {"force", true}}).dump(), token_);
  EXPECT_EQ(both.status, 400);
  Reply neither = Patch("/api/tasks/" + id, R"({"status": "completed"})", token_);
  EXPECT_EQ(neither.status, 400);
  EXPECT_EQ(TxJson({"task", "show", id})["status"], "running") << "a refusal changed the task";
  Reply done =
      Patch("/api/tasks/" + id,
            json({{"status", "completed"}, {"token", token}, {"result", "ok"}}).dump(), token_);
  ASSERT_EQ(done.status, 200) << done.body.dump();
  EXPECT_EQ(done.body["status"], "done");
  EXPECT_EQ(done.body["result"], "ok");
  EXPECT_EQ(Patch("/api/tasks/" + id, R"({"status": "cancelled"})", token_).status, 409);

  std::string b = AddOverHttp("b");
  EXPECT_EQ(Patch("/api/tasks/" + b, R"({"status": "in-progress"})", token_).status, 400);
  EXPECT_EQ(Patch("/api/tasks/" + b, R"({"status": "blocked"})", token_).status, 400);
  EXPECT_EQ(Patch("/api/tasks/" + b, R"({"status": "flying"})", token_).status, 400);
  EXPECT_EQ(Patch("/api/tasks/" + b, R"({"status": "cancelled", "title": "t"})", token_).status,
            400);
  Reply cancelled =
      Patch("/api/tasks/" + b, R"({"status": "cancelled", "note": "not needed"})", token_);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["status"], "cancelled");
  Reply retried = Patch("/api/tasks/" + b, R"({"status": "todo"})", token_);
  ASSERT_EQ(retried.status, 200) << retried.body.dump();
  EXPECT_EQ(retried.body["status"], "ready");
  TxJson({"claim", b});
  Reply forced = Patch("/api/tasks/" + b,
                       R"({"status": "failed", "force": true, "error": "by hand"})", token_);
  ASSERT_EQ(forced.status, 200) << forced.body.dump();
  EXPECT_EQ(forced.body["status"], "failed");
  EXPECT_EQ(forced.body["attempts"][0]["end_reason"], "forced");
}

TEST_F(ApiTest, AReviewIsApprovedOrSentBackWithTheChangesForTheNextPrompt) {
  Serve();
  auto to_review = [&](const std::string& title) {
    std::string id = AddOverHttp(title, {{"review", true}});
    json claim = TxJson({"claim", id});
    Reply r = Patch(
        "/api/tasks/" + id,
        json({{"status", "done"}, {"token", claim["token"]}, {"result", "draft"}}).dump(), token_);
    EXPECT_EQ(r.body["status"], "review") << r.body.dump();
    return id;
  };
  std::string a = to_review("a");
  EXPECT_EQ(Patch("/api/tasks/" + a, R"({"status": "approved", "token": 1})", token_).status, 400);
  Reply approved = Patch("/api/tasks/" + a, R"({"status": "approved", "note": "lgtm"})", token_);
  ASSERT_EQ(approved.status, 200) << approved.body.dump();
  EXPECT_EQ(approved.body["status"], "done");  // no branch to merge: approval finishes it
  EXPECT_EQ(approved.body["result"], "draft");
  EXPECT_EQ(Patch("/api/tasks/" + a, R"({"status": "approved"})", token_).status, 409);

  std::string b = to_review("b");
  Reply changes = Patch("/api/tasks/" + b, R"({"status": "ready", "note": "add a test"})", token_);
  ASSERT_EQ(changes.status, 200) << changes.body.dump();
  EXPECT_EQ(changes.body["status"], "ready");
  EXPECT_EQ(changes.body["metadata"]["review_notes"], json({"add a test"}));
  EXPECT_EQ(changes.body["attempt"], 1);  // the same budget: not a fresh retry

  // The CLI says the same: tx task changes needs its note; tx task approve ends it.
  json claim = TxJson({"claim", b});
  ASSERT_EQ(
      Tx({"task", "review", b, "--token", std::to_string(claim["token"].get<int>())}).exit_code, 0);
  EXPECT_EQ(Tx({"task", "changes", b}).exit_code, 2);
  EXPECT_EQ(TxJson({"task", "changes", b, "--note", "and docs"})["metadata"]["review_notes"],
            json({"add a test", "and docs"}));
  EXPECT_EQ(Tx({"task", "approve", b}).exit_code, 4);  // ready, not in review
  json again = TxJson({"claim", b});
  ASSERT_EQ(
      Tx({"task", "review", b, "--token", std::to_string(again["token"].get<int>())}).exit_code, 0);
  EXPECT_EQ(TxJson({"task", "approve", b, "--note", "ok"})["status"], "done");
  std::vector<std::string> types;
  for (const auto& e : TxJson({"events"})) {
    if (e["task_id"] == b) types.push_back(e["type"]);
  }
  EXPECT_EQ(std::count(types.begin(), types.end(), "task.changes_requested"), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "task.approved"), 1);
}

TEST_F(ApiTest, StatsGiveTheLastHourOfThroughputAndQueueDepth) {
  std::string early = TxJson({"task", "add", "before the server"})["id"];
  json claim = TxJson({"claim", early});
  ASSERT_EQ(
      Tx({"task", "done", early, "--token", std::to_string(claim["token"].get<int>())}).exit_code,
      0);
  Serve();
  AddOverHttp("waiting");
  Reply r;
  ASSERT_TRUE(WaitFor([&] {
    r = Get("/api/stats");
    return r.status == 200 && !r.body["depth"].empty();
  }));
  EXPECT_EQ(r.body["bucket_ms"], 60000);
  ASSERT_EQ(r.body["throughput"].size(), 60u);
  std::int64_t done = 0;
  for (const auto& b : r.body["throughput"]) done += b["done"].get<std::int64_t>();
  EXPECT_EQ(done, 1);  // read from the log, so it counts what finished before the server began
  EXPECT_LE(r.body["throughput"].back()["at"].get<std::int64_t>(),
            r.body["to"].get<std::int64_t>());
  const json& sample = r.body["depth"].back();
  for (const char* k : {"at", "ready", "running", "blocked", "review"})
    EXPECT_TRUE(sample.contains(k));
  EXPECT_EQ(Get("/api/stats?window=2h").status, 400);
  // Issue 24: the last day in quarter hours and the last week in two hours, the same done task.
  Reply day = Get("/api/stats?range=24h");
  ASSERT_EQ(day.status, 200) << day.body.dump();
  EXPECT_EQ(day.body["range"], "24h");
  EXPECT_EQ(day.body["throughput"].size(), 96u);
  Reply week = Get("/api/stats?range=7d");
  EXPECT_EQ(week.body["throughput"].size(), 84u);
  for (const Reply* r : {&day, &week}) {
    std::int64_t n = 0;
    for (const auto& b : r->body["throughput"]) n += b["done"].get<std::int64_t>();
    EXPECT_EQ(n, 1);
    EXPECT_FALSE(r->body["depth"].empty());
  }
  EXPECT_EQ(Get("/api/stats?range=2h").status, 400);
}

TEST_F(ApiTest, AReadMayCarryItsTokenInTheQueryButAChangeMayNot) {
  std::ofstream(dir_.path() / ".tx" / "tokens") << "read r-token\n";
  Serve("0.0.0.0");  // off loopback every request needs a token
  EXPECT_EQ(Get("/api/tasks?access_token=r-token").status, 200);
  EXPECT_EQ(Get("/api/tasks?access_token=wrong").status, 401);
  EXPECT_EQ(Get("/api/tasks?status=ready&access_token=" + token_).status, 200);
  Reply change = Post("/api/tasks?access_token=" + token_, R"({"title": "x"})", "");
  EXPECT_EQ(change.status, 401) << change.body.dump();
  EXPECT_EQ(TaskCount(), 0u);
  EventStream stream(port_, "/api/events?after=0&access_token=r-token");
  ASSERT_TRUE(WaitFor([&] { return stream.status() == 200; }, 30s));
}

TEST_F(ApiTest, AStoreBusyPastItsTimeoutIs503AndWritesNothing) {
  Serve();
  // Another process holds the write lock longer than the server's busy timeout (10 s).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / ".tx" / "tx.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  Reply busy = Post("/api/tasks", R"({"title": "while locked"})", token_);
  EXPECT_EQ(busy.status, 503) << busy.body.dump();
  EXPECT_EQ(ErrorCode(busy), "unavailable");
  EXPECT_EQ(Get("/api/tasks").status, 200);  // reads go on meanwhile (WAL)
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(TaskCount(), 0u);
  EXPECT_EQ(Post("/api/tasks", R"({"title": "after"})", token_).status, 201);
}

TEST_F(ApiTest, ListingFiltersAndPagesWithACursor) {
  Serve();
  std::vector<std::string> ids;
  for (const char* title : {"t0", "t1", "t2", "t3", "t4"}) {
    bool odd = (title[1] - '0') % 2 == 1;
    ids.push_back(AddOverHttp(title, {{"queue", odd ? "odd" : "even"}}));
  }
  Reply even = Get("/api/tasks?queue=even");
  ASSERT_EQ(even.status, 200);
  ASSERT_EQ(even.body["tasks"].size(), 3u);
  EXPECT_TRUE(even.body["next_cursor"].is_null());
  // Every id, two a page, following next_cursor until it is null.
  auto page_through = [&](const std::string& query) {
    std::vector<std::string> seen;
    std::string cursor;
    for (int page = 0; page < 5; ++page) {
      std::string path = "/api/tasks?" + query + "limit=2";
      if (!cursor.empty()) path.append("&cursor").append("=").append(cursor);
      Reply r = Get(path);
      EXPECT_EQ(r.status, 200) << r.body.dump();
      for (const auto& t : r.body["tasks"]) seen.push_back(t["id"]);
      if (!r.body["next_cursor"].is_string()) break;
      cursor = r.body["next_cursor"];
    }
    return seen;
  };
  EXPECT_EQ(page_through(""), ids) << "every task once, in the order added";
  // Newest first, paged the other way.
  std::vector<std::string> back = page_through("order=desc&");
  EXPECT_EQ(back, std::vector<std::string>(ids.rbegin(), ids.rend()));
  EXPECT_EQ(Get("/api/tasks?order=newest").status, 400);
  TxJson({"claim", ids[2]});
  Reply running = Get("/api/tasks?status=in-progress");
  ASSERT_EQ(running.body["tasks"].size(), 1u);
  EXPECT_EQ(running.body["tasks"][0]["id"], ids[2]);
}

// Issue 24: the dashboard's search and filters, and each task's cost from the usage ledger.
TEST_F(ApiTest, ListingSearchesIdsAndTitlesFiltersByAgentAndTimeAndCarriesEachTasksCost) {
  Serve();
  // A few milliseconds apart, so that each has a created time of its own.
  std::string login = AddOverHttp("Fix the LOGIN test", {{"agent", "claude"}});
  std::this_thread::sleep_for(5ms);
  std::string parser = AddOverHttp("Port the parser", {{"agent", "codex"}});
  std::this_thread::sleep_for(5ms);
  std::string page = AddOverHttp("login page", {{"queue", "web"}});
  auto ids = [&](const std::string& query) {
    Reply r = Get("/api/tasks?" + query);
    EXPECT_EQ(r.status, 200) << query << " → " << r.body.dump();
    std::vector<std::string> out;
    for (const auto& t : r.body["tasks"]) out.push_back(t["id"]);
    return out;
  };
  EXPECT_EQ(ids("q=login"), (std::vector<std::string>{login, page}));
  EXPECT_EQ(ids("q=" + parser), std::vector<std::string>{parser});
  EXPECT_EQ(ids("q=task-").size(), 3u) << "an id's prefix";
  EXPECT_TRUE(ids("q=" + parser.substr(5)).empty()) << "an id's middle is no prefix";
  EXPECT_EQ(ids("q=login&queue=web"), std::vector<std::string>{page});
  EXPECT_EQ(ids("agent=codex"), std::vector<std::string>{parser});
  EXPECT_EQ(ids("q=PORT&order=desc&limit=1"), std::vector<std::string>{parser});
  // Created times, as the API writes them or as a duration back from now.
  std::string second = TxJson({"task", "show", parser})["created_at"];
  std::string third = TxJson({"task", "show", page})["created_at"];
  EXPECT_EQ(ids("since=" + second).front(), parser);
  EXPECT_EQ(ids("until=" + second).back(), login);
  EXPECT_EQ(ids("since=" + second + "&until=" + third).back(), parser);
  EXPECT_EQ(ids("since=1h").size(), 3u);
  for (const char* bad :
       {"since=yesterday", "until=2026-11-22", "since=0s", "agnet=codex", "limit=1001"}) {
    Reply r = Get(std::string("/api/tasks?") + bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.body["error"]["message"].get<std::string>().find('\n'), std::string::npos);
  }
  EXPECT_EQ(Get("/api/tasks?q=" + std::string(201, 'x')).status, 400);
  // The cost of each task with rows in the ledger (here the row of an attempt, written as its
  // worker would), summed; null for one without.
  std::int64_t token = TxJson({"claim", login})["token"];
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / ".tx" / "tx.db").c_str(), &db), SQLITE_OK);
  std::string sql =
      "INSERT INTO attempt_usage (token, task_id, attempt, input_tokens, cost_micro_usd, "
      "cost_estimated, turns) VALUES (" +
      std::to_string(token) + ", '" + login + "', 1, 150, 420000, 1, 3)";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  Reply all = Get("/api/tasks");
  ASSERT_EQ(all.body["tasks"].size(), 3u);
  const json& usage = all.body["tasks"][0]["usage"];
  EXPECT_DOUBLE_EQ(usage["cost_usd"].get<double>(), 0.42) << usage.dump();
  EXPECT_EQ(usage["cost_estimated"], true);
  EXPECT_EQ(usage["attempts"], 1);
  EXPECT_EQ(usage["tokens"]["input"], 150);
  EXPECT_EQ(usage, Get("/api/tasks/" + login).body["usage"]) << "the total the task shows";
  EXPECT_TRUE(all.body["tasks"][1]["usage"].is_null());
}

// Issue 24: cancel and retry many tasks at once, as the PATCH of each would, each id's outcome
// reported; an admin change like the PATCH, and a bad body refused whole.
TEST_F(ApiTest, BulkCancelAndRetryReportEachTaskAndNeedTheAdminToken) {
  std::ofstream(dir_.path() / ".tx" / "tokens") << "read r-token\n";
  Serve();
  std::string a = AddOverHttp("a"), b = AddOverHttp("b"), done = AddOverHttp("done");
  json claim = TxJson({"claim", done});
  ASSERT_EQ(
      Tx({"task", "done", done, "--token", std::to_string(claim["token"].get<int>())}).exit_code,
      0);
  std::string body = json({{"ids", {a, b, done, "task-zzzzzzzz"}}, {"note", "not now"}}).dump();
  EXPECT_EQ(Post("/api/tasks/cancel", body, "").status, 401);
  EXPECT_EQ(Post("/api/tasks/cancel", body, "r-token").status, 403);
  EXPECT_EQ(TxJson({"task", "show", a})["status"], "ready") << "a refused request wrote something";
  Reply cancelled = Post("/api/tasks/cancel", body, token_);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["ok"], 2);
  EXPECT_EQ(cancelled.body["failed"], 2);
  const json& results = cancelled.body["results"];
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0], json({{"id", a}, {"ok", true}, {"status", "cancelled"}}));
  EXPECT_EQ(results[2]["ok"], false);
  EXPECT_EQ(results[2]["error"]["code"], "conflict") << results[2].dump();
  EXPECT_EQ(results[3]["error"]["code"], "not_found");
  EXPECT_EQ(TxJson({"task", "show", b})["status"], "cancelled");
  EXPECT_EQ(TxJson({"task", "show", done})["status"], "done");

  Reply retried = Post("/api/tasks/retry", json({{"ids", {a, b, done}}}).dump(), token_);
  ASSERT_EQ(retried.status, 200) << retried.body.dump();
  EXPECT_EQ(retried.body["ok"], 2);
  EXPECT_EQ(retried.body["results"][1]["status"], "ready");
  EXPECT_EQ(retried.body["results"][2]["error"]["code"], "conflict");
  EXPECT_EQ(TxJson({"task", "show", a})["status"], "ready");

  json many = json::array();
  for (int i = 0; i < 1001; ++i) many.push_back("task-" + std::to_string(i));
  for (const std::string& bad :
       {std::string(R"({"ids": []})"), std::string(R"({"ids": "x"})"), std::string("[1]"),
        std::string(R"({"ids": ["x"], "force": true})"), json({{"ids", many}}).dump()}) {
    Reply r = Post("/api/tasks/cancel", bad, token_);
    EXPECT_EQ(r.status, 400) << bad.substr(0, 80);
    EXPECT_EQ(r.body["error"]["message"].get<std::string>().find('\n'), std::string::npos);
  }
  EXPECT_EQ(Post("/api/tasks/cancel", R"({"ids": ["x"], "fresh": true})", token_).status, 400);
  EXPECT_EQ(TxJson({"task", "show", a})["status"], "ready");
}

// Issue 24: a worker's history of attempts, newest first, a page at a time, by id or name.
TEST_F(ApiTest, AWorkersHistoryListsItsAttemptsNewestFirstAPageAtATime) {
  Serve();
  std::vector<std::string> ids;
  for (const char* title : {"first", "second", "third"}) {
    ids.push_back(AddOverHttp(title));
    json claim = TxJson({"claim", ids.back(), "--worker", "by-hand"});
    ASSERT_EQ(Tx({"task", "fail", ids.back(), "--token", std::to_string(claim["token"].get<int>()),
                  "--error", "no"})
                  .exit_code,
              0);
  }
  Reply first = Get("/api/workers/by-hand/attempts?limit=2");
  ASSERT_EQ(first.status, 200) << first.body.dump();
  EXPECT_EQ(first.body["worker"]["name"], "by-hand");
  ASSERT_EQ(first.body["attempts"].size(), 2u);
  const json& newest = first.body["attempts"][0];
  EXPECT_EQ(newest["task_id"], ids[2]);
  EXPECT_EQ(newest["task_title"], "third");
  EXPECT_EQ(newest["n"], 1);
  EXPECT_EQ(newest["worker_id"], first.body["worker"]["id"]);
  EXPECT_TRUE(newest["cost_usd"].is_null());
  ASSERT_TRUE(first.body["next_cursor"].is_string());
  std::string worker_id = first.body["worker"]["id"];
  Reply rest = Get("/api/workers/" + worker_id +
                   "/attempts?limit=2&cursor=" + first.body["next_cursor"].get<std::string>());
  ASSERT_EQ(rest.status, 200) << rest.body.dump();
  ASSERT_EQ(rest.body["attempts"].size(), 1u);
  EXPECT_EQ(rest.body["attempts"][0]["task_title"], "first");
  EXPECT_TRUE(rest.body["next_cursor"].is_null());
  EXPECT_EQ(Get("/api/workers/nobody/attempts").status, 404);
  EXPECT_EQ(Get("/api/workers/by-hand/attempts?page=2").status, 400);
}

TEST_F(ApiTest, WorkersHeartbeatsAndEventsAreReadable) {
  Serve();
  std::string id = AddOverHttp("a");
  json claim = TxJson({"claim", id, "--worker", "by-hand"});
  Reply workers = Get("/api/workers");
  ASSERT_EQ(workers.status, 200);
  ASSERT_EQ(workers.body["workers"].size(), 1u) << workers.body.dump();
  EXPECT_EQ(workers.body["workers"][0]["name"], "by-hand");
  Reply one = Get("/api/workers/by-hand");
  ASSERT_EQ(one.status, 200) << one.body.dump();
  EXPECT_EQ(one.body["id"], claim["worker_id"]);
  json cli = TxJson({"worker", "status", "by-hand"});
  EXPECT_TRUE(one.body["heartbeat_age_ms"].is_number()) << one.body.dump();
  for (json* j : {&one.body, &cli}) j->erase("heartbeat_age_ms");  // read a moment apart
  EXPECT_EQ(one.body, cli);
  EXPECT_EQ(Get("/api/workers/worker-zzzzzzzz").status, 404);
  EXPECT_EQ(Get("/api/workers?status=sleeping").status, 400);
  Reply beats = Get("/api/heartbeats");
  ASSERT_EQ(beats.status, 200);
  EXPECT_EQ(beats.body, TxJson({"worker", "status", "--format", "heartbeats"}));
  Reply events = Get("/api/events");
  ASSERT_EQ(events.status, 200);
  std::vector<std::string> types;
  for (const auto& e : events.body["events"]) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"task.created", "worker.registered", "task.claimed"}))
      << events.body.dump();
  std::int64_t first = events.body["events"][0]["id"];
  Reply after = Get("/api/events?after=" + std::to_string(first) + "&limit=1");
  ASSERT_EQ(after.body["events"].size(), 1u);
  EXPECT_EQ(after.body["events"][0]["type"], "worker.registered");

  // Several statuses, and the newest few.
  TxJson({"claim", AddOverHttp("b"), "--worker", "other-hand"});
  EXPECT_EQ(Get("/api/workers?status=idle,busy").body["workers"].size(), 2u);
  EXPECT_EQ(Get("/api/workers?status=idle,stopped").body["workers"].size(), 0u);
  Reply newest = Get("/api/workers?limit=1");
  ASSERT_EQ(newest.body["workers"].size(), 1u);
  EXPECT_EQ(newest.body["workers"][0]["name"], "other-hand");
}

TEST_F(ApiTest, ScopedTokensMayDoOnlyWhatTheirScopeAllows) {
  std::ofstream(dir_.path() / ".tx" / "tokens") << "# scope token\nread r-token\nworker w-token\n";
  Serve();
  EXPECT_EQ(Get("/api/tasks", "r-token").status, 200);
  Reply denied = Post("/api/tasks", R"({"title": "x"})", "r-token");
  EXPECT_EQ(denied.status, 403);
  EXPECT_EQ(ErrorCode(denied), "forbidden");
  EXPECT_EQ(Post("/api/tasks", R"({"title": "x"})", "w-token").status, 403);
  EXPECT_EQ(TaskCount(), 0u);
  EXPECT_EQ(Post("/api/tasks", R"({"title": "x"})", token_).status, 201);
}

TEST_F(ApiTest, OffLoopbackEveryRequestNeedsAToken) {
  Serve("0.0.0.0");
  // Only the dashboard's page and assets, which hold no data, are open to a browser.
  auto page = Client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  EXPECT_EQ(Get("/healthz").status, 401);
  EXPECT_EQ(Get("/api/tasks").status, 401);
  EXPECT_EQ(Get("/api/tasks", token_).status, 200);
  EXPECT_EQ(Get("/healthz", token_).status, 200);
}

// Issue 23, item 12: a page on another site that rebinds its name to 127.0.0.1 reaches a loopback
// server with its own name in Host: refused, as everything but loopback names and the configured.
TEST_F(ApiTest, ALoopbackServerAnswersOnlyLoopbackHostNames) {
  std::ofstream(dir_.path() / ".tx" / "config.toml") << "[api]\nallowed_hosts = [\"tx.lan\"]\n";
  Serve();
  AddOverHttp("secret title");
  auto as = [&](const std::string& host, const std::string& path) {
    httplib::Headers h = {{"Host", host}};
    auto r = Client().Get(path, h);
    return r ? r->status : -1;
  };
  for (const char* path : {"/api/tasks", "/api/events?limit=10", "/", "/healthz"}) {
    EXPECT_EQ(as("attacker.example", path), 403) << path;
    EXPECT_EQ(as("attacker.example:" + std::to_string(port_), path), 403) << path;
  }
  EXPECT_EQ(as("localhost:" + std::to_string(port_), "/api/tasks"), 200);
  EXPECT_EQ(as("127.0.0.1:" + std::to_string(port_), "/api/tasks"), 200);
  EXPECT_EQ(as("tx.lan:" + std::to_string(port_), "/api/tasks"), 200);
  EXPECT_EQ(as("TX.LAN", "/api/tasks"), 200);
}

// Issue 23, item 13: whether a server is on loopback (and may go without a token) is decided by
// the addresses its name resolves to, never by the name's text.
TEST_F(ApiTest, ANameThatLooksLikeLoopbackIsJudgedByItsAddresses) {
  std::filesystem::remove(dir_.path() / ".tx" / "token");
  RunResult fake = Tx({"serve", "--http", "127.public.example:0"});
  EXPECT_NE(fake.exit_code, 0);
  EXPECT_EQ(fake.out.find("listening"), std::string::npos) << fake.out;
  EXPECT_TRUE(fake.err.find("not a loopback address") != std::string::npos ||
              fake.err.find("cannot resolve 127.public.example") != std::string::npos)
      << fake.err;
  // localhost resolves to loopback addresses only: served without a token.
  Serve("localhost");
  EXPECT_EQ(Get("/healthz").status, 200);
}

// Issue 23, item 14: a client that keeps guessing tokens is slowed down (429 with Retry-After),
// and may try again once the wait passes.
TEST_F(ApiTest, RepeatedWrongTokensAreSlowedDown) {
  Serve();
  int refused = 0, slowed = 0;
  std::string retry_after;
  for (int i = 0; i < 30 && slowed == 0; ++i) {
    auto r = Client("guess-" + std::to_string(i)).Get("/api/tasks");
    ASSERT_TRUE(r);
    if (r->status == 401) ++refused;
    if (r->status == 429) {
      ++slowed;
      retry_after = r->get_header_value("Retry-After");
    }
  }
  EXPECT_EQ(refused, 10);
  ASSERT_EQ(slowed, 1);
  ASSERT_FALSE(retry_after.empty());
  EXPECT_EQ(Get("/api/tasks", token_).status, 429) << "slowed whatever token it carries";
  std::this_thread::sleep_for(std::chrono::seconds(std::stoi(retry_after)) + 200ms);
  EXPECT_EQ(Get("/api/tasks", token_).status, 200);
  EXPECT_EQ(Get("/api/tasks").status, 200) << "a read without a token is not slowed";
}

TEST_F(ApiTest, ServeRefusesBadAddressesAndAMissingStore) {
  RunResult bad = Tx({"serve", "--http", "localhost"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("invalid listen address 'localhost'"), std::string::npos) << bad.err;
  RunResult port = Tx({"serve", "--http", "127.0.0.1:99999"});
  EXPECT_EQ(port.exit_code, 2);
  RunResult nostore = Tx({"--db", (dir_.path() / "nope.db").string(), "serve"});
  EXPECT_EQ(nostore.exit_code, 3) << nostore.err;
  Serve();
  RunResult taken = Tx({"serve", "--http", "127.0.0.1:" + std::to_string(port_)});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_NE(taken.err.find("cannot listen on 127.0.0.1:" + std::to_string(port_)),
            std::string::npos)
      << taken.err;
}

TEST_F(ApiTest, TheEventStreamDeliversInOrderLiveAndResumesAfterADisconnect) {
  Serve();
  for (const char* t : {"one", "two", "three"}) AddOverHttp(t);
  EventStream stream(port_, "/api/events?after=0");
  ASSERT_TRUE(stream.WaitForEvents(3)) << stream.status();
  EXPECT_EQ(stream.status(), 200);
  EXPECT_EQ(stream.content_type(), "text/event-stream");
  AddOverHttp("four");  // while the stream is open: delivered live
  ASSERT_TRUE(stream.WaitForEvents(4));
  std::vector<json> seen = stream.Events();
  stream.Close();
  EXPECT_EQ(TypesOf(seen), std::vector<std::string>(4, "task.created"));
  std::vector<std::int64_t> ids = IdsOf(seen);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()) &&
              std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  EXPECT_EQ(seen[3]["data"]["title"], "four") << seen[3].dump();

  // Disconnected, two more happen; a reconnect with Last-Event-ID gets exactly those, in order.
  std::string five = AddOverHttp("five");
  std::string six = AddOverHttp("six");
  EventStream resumed(port_, "/api/events", std::to_string(ids.back()));
  ASSERT_TRUE(resumed.WaitForEvents(2));
  std::this_thread::sleep_for(300ms);  // nothing else may follow
  std::vector<json> more = resumed.Events();
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[0]["task_id"], five);
  EXPECT_EQ(more[1]["task_id"], six);
  EXPECT_EQ(more[0]["id"], ids.back() + 1);

  // Without a cursor a stream starts at the newest event: only what happens next.
  EventStream live(port_, "/api/events");
  ASSERT_TRUE(WaitFor([&] { return live.status() == 200; }, 30s));
  std::string seven = AddOverHttp("seven");
  ASSERT_TRUE(live.WaitForEvents(1));
  EXPECT_EQ(live.Events()[0]["task_id"], seven);

  EventStream bad(port_, "/api/events", "yesterday");
  ASSERT_TRUE(WaitFor([&] { return bad.ended(); }, 30s));
  EXPECT_EQ(bad.status(), 400);
}

TEST_F(ApiTest, AStreamFarBehindIsServedFromTheStoreAndAStopEndsEveryStream) {
  // More events than the server keeps in memory (4,096): the oldest come from the store.
  Serve();
  httplib::Client c = Client(token_);
  for (int i = 0; i < 4400; ++i) {
    json body = {{"title", "t"}};
    body["title"].get_ref<std::string&>() += std::to_string(i);
    auto r = c.Post("/api/tasks", body.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 201) << i;
  }
  EventStream all(port_, "/api/events?after=0");
  ASSERT_TRUE(all.WaitForEvents(4400));
  std::vector<std::int64_t> ids = IdsOf(all.Events());
  ASSERT_EQ(ids.size(), 4400u);
  for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], static_cast<std::int64_t>(i + 1));
  server_->Signal(SIGTERM);  // a stop ends the open stream instead of waiting on it
  EXPECT_EQ(server_->Wait(30s), 0) << server_->Output();
  server_.reset();
  EXPECT_TRUE(WaitFor([&] { return all.ended(); }, 30s));
}

TEST_F(ApiTest, MetricsCountFromTheWholeLogAndGaugeTheStoreNow) {
  Serve();
  std::string a = AddOverHttp("a");
  AddOverHttp("b", {{"queue", "gpu"}});
  json claim = TxJson({"claim", a, "--worker", "by-hand"});
  ASSERT_EQ(Tx({"task", "done", a, "--token", std::to_string(claim["token"].get<int>())}).exit_code,
            0);
  ASSERT_EQ(Tx({"orchestrator", "reconcile"}).exit_code, 0);
  auto scrape = [&] {
    auto r = Client().Get("/metrics");
    EXPECT_TRUE(r && r->status == 200);
    if (r) {
      EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    }
    return r ? r->body : std::string();
  };
  // The counters follow the log within the hub's poll.
  ASSERT_TRUE(WaitFor([&] { return Sample(scrape(), "tx_reconcile_runs_total") == 1; }, 30s))
      << scrape();
  ASSERT_TRUE(WaitFor(
      [&] { return Sample(scrape(), R"(tx_tasks_finished_total{outcome="done"})") == 1; }, 30s))
      << scrape();
  std::string text = scrape();
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="default",status="done"})"), 1) << text;
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="gpu",status="ready"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="gpu",status="done"})"), 0);
  EXPECT_EQ(Sample(text, "tx_tasks_created_total"), 2);
  EXPECT_EQ(Sample(text, R"(tx_tasks_finished_total{outcome="done"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_count{outcome="done"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_workers{status="idle"})"), 1);
  EXPECT_EQ(Sample(text, "tx_reconcile_runs_total"), 1);
  EXPECT_EQ(Sample(text, "tx_orchestrator_up"), 0);
  EXPECT_EQ(Client().Get("/metrics?format=json")->status, 400);

  // A restarted server folds the same log in: the counters do not start again from zero.
  server_->Signal(SIGTERM);
  ASSERT_EQ(server_->Wait(30s), 0);
  Serve();
  std::string again = scrape();
  EXPECT_EQ(Sample(again, "tx_claims_total"), 1);
  EXPECT_EQ(Sample(again, R"(tx_tasks_finished_total{outcome="done"})"), 1);
}

TEST_F(ApiTest, ATaskLogIsTailedAndFollowedUntilItsAttemptEnds) {
  Serve();
  std::string never = AddOverHttp("never run");
  Reply none = Get("/api/tasks/" + never + "/log");
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body["error"]["message"].get<std::string>().find("no attempts"),
            std::string::npos);
  EXPECT_EQ(Get("/api/tasks/task-zzzzzzzz/log").status, 404);
  EXPECT_EQ(Get("/api/tasks/" + never + "/log?follow=maybe").status, 400);
  EXPECT_EQ(Get("/api/tasks/" + never + "/log?lines=3").status, 400);
  ASSERT_EQ(Tx({"task", "cancel", never}).exit_code, 0);

  // A task that writes, waits for a file, then writes again: followed from its first line.
  std::string gate = (dir_.path() / "gate").string();
  std::string id = AddOverHttp("talker", {{"command",
                                           {"sh", "-c",
                                            "echo first; while [ ! -e " + gate +
                                                " ]; do sleep 0.05; done; "
                                                "echo second"}}});
  BackgroundProcess worker(TX_BINARY, Args{"worker", "start", "--name", "w"}, Env{}, dir_.str(),
                           (dir_.path() / "worker.out").string());
  ASSERT_TRUE(WaitFor([&] { return TxJson({"task", "show", id})["status"] == "running"; }, 30s));
  std::mutex mu;
  std::string followed;
  bool ended = false;
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    auto r = c.Get("/api/tasks/" + id + "/log?follow=true", [&](const char* d, std::size_t n) {
      std::lock_guard lock(mu);
      followed.append(d, n);
      return true;
    });
    std::lock_guard lock(mu);
    ended = r && r->status == 200;
  });
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard lock(mu);
        return followed.find("first\n") != std::string::npos;
      },
      30s));
  {
    std::lock_guard lock(mu);
    EXPECT_FALSE(ended);  // still open while the attempt runs
  }
  std::ofstream(gate).put('\n');
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard lock(mu);
        return ended;
      },
      30s));
  reader.join();
  EXPECT_EQ(followed, "first\nsecond\n");
  ASSERT_TRUE(WaitFor([&] { return TxJson({"task", "show", id})["status"] == "done"; }, 30s));

  auto whole = Client().Get("/api/tasks/" + id + "/log");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->status, 200);
  EXPECT_EQ(whole->body, "first\nsecond\n");
  EXPECT_EQ(Client().Get("/api/tasks/" + id + "/log?tail=7")->body, "second\n");
  EXPECT_EQ(Client().Get("/api/tasks/" + id + "/log?attempt=1&follow=true")->body,
            "first\nsecond\n");  // an ended attempt: the whole log at once
  EXPECT_EQ(Get("/api/tasks/" + id + "/log?attempt=2").status, 404);

  // A task that printed nothing has no log file: its log is empty, not missing.
  std::string silent = AddOverHttp("silent", {{"command", {"true"}}});
  ASSERT_TRUE(WaitFor([&] { return TxJson({"task", "show", silent})["status"] == "done"; }, 30s));
  for (const char* query : {"", "?follow=true", "?tail=5", "?raw=true"}) {
    auto empty = Client().Get("/api/tasks/" + silent + "/log" + query);
    ASSERT_TRUE(empty) << query;
    EXPECT_EQ(empty->status, 200) << query;
    EXPECT_EQ(empty->body, "") << query;
  }
  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(30s), 0);
}

}  // namespace
