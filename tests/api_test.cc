// The HTTP API over real HTTP: `tx serve` as a child process, requests with httplib::Client, the
// store read back through the CLI. Every route, every error status, auth on and off loopback.

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tx_proc.h"
#include "tx_process.h"

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
    server_ =
        std::make_unique<BackgroundProcess>(TX_BINARY, Args{"serve", "--http", host + ":0"}, Env{},
                                            dir_.str(), (dir_.path() / "serve.out").string());
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
  struct Reply {
    int status = -1;
    json body;
    std::string location;
  };
  static Reply Of(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    out.body = json::parse(r->body, nullptr, false);
    out.location = r->get_header_value("Location");
    return out;
  }
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
  static std::string ErrorCode(const Reply& r) {
    return r.body.is_object() && r.body.contains("error") ? r.body["error"].value("code", "") : "";
  }
  std::size_t TaskCount() { return TxJson({"task", "list"}).size(); }

  TempDir dir_;
  std::string token_;
  std::unique_ptr<BackgroundProcess> server_;
  int port_ = 0;
};

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
      {R"({"title": "x", "base": "main"})", "'base' needs 'repo'"},
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
  std::vector<std::string> seen;
  std::string cursor;
  for (int page = 0; page < 5; ++page) {
    std::string path = "/api/tasks?limit=2";
    if (!cursor.empty()) path.append("&cursor").append("=").append(cursor);
    Reply r = Get(path);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    for (const auto& t : r.body["tasks"]) seen.push_back(t["id"]);
    if (r.body["next_cursor"].is_null()) break;
    cursor = r.body["next_cursor"];
  }
  EXPECT_EQ(seen, ids) << "every task once, in the order added";
  TxJson({"claim", ids[2]});
  Reply running = Get("/api/tasks?status=in-progress");
  ASSERT_EQ(running.body["tasks"].size(), 1u);
  EXPECT_EQ(running.body["tasks"][0]["id"], ids[2]);
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
  EXPECT_EQ(one.body, TxJson({"worker", "status", "by-hand"}));
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
  EXPECT_EQ(Get("/healthz").status, 401);
  EXPECT_EQ(Get("/api/tasks").status, 401);
  EXPECT_EQ(Get("/api/tasks", token_).status, 200);
  EXPECT_EQ(Get("/healthz", token_).status, 200);
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

}  // namespace
