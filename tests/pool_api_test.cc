// The HTTP API's routes that act on a running pool — the orchestrator's status, scale and stop,
// workers created, stopped, paused and resumed, sessions listed and ended — over real HTTP
// against `tx orchestrator start --http`, with real workers and agents. Waits poll with generous
// bounds; nothing asserts a speed.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "http_client.h"
#include "orchestrator_fixture.h"

namespace {

using namespace tx::testing;

class PoolApiTest : public OrchestratorTest {
 protected:
  void SetUp() override {
    OrchestratorTest::SetUp();
    token_ = ReadFile(Path(".tx/token"));
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
  }

  // Starts the pool with its API on a free port, and returns a client holding the admin token.
  ApiClient StartServed(Args extra) {
    extra.insert(extra.end(), {"--http", "127.0.0.1:0"});
    StartOrchestrator(extra);
    std::string url = Status()["config"].value("http", "");
    auto colon = url.rfind(':');
    port_ = colon == std::string::npos ? 0 : std::stoi(url.substr(colon + 1));
    EXPECT_GT(port_, 0) << Status().dump();
    return ApiClient(port_, token_);
  }
  ApiClient Anonymous() const { return ApiClient(port_); }

  std::string IdOfSlot(const std::string& slot) {
    json s = SlotOf(slot);
    return s["worker_id"].is_string() ? s["worker_id"].get<std::string>() : "";
  }
  // Waits until every one of `slots` runs a registered, idle worker, and no other slot exists.
  bool PoolIs(const std::vector<std::string>& slots) {
    return WaitFor([&] {
      json st = Status();
      std::vector<std::string> names;
      for (const auto& s : st.value("slots", json::array())) {
        if (s["state"] != "running" || s["worker_status"] != "idle") return false;
        names.push_back(s["slot"]);
      }
      return names == slots;
    });
  }

  std::string token_;
  int port_ = 0;
};

TEST_F(PoolApiTest, TheOrchestratorRouteAnswersWhatTheStatusCommandPrints) {
  ApiClient api = StartServed({"--workers", "2"});
  ASSERT_TRUE(PoolIs({"slot-1", "slot-2"}));
  HttpReply r = Anonymous().Get("/api/orchestrator");  // a read: no token needed on loopback
  ASSERT_EQ(r.status, 200) << r.body.dump();
  json cli = Status();
  for (const char* key :
       {"status", "pid", "hostname", "started_at", "desired", "max_workers", "queue", "config"}) {
    EXPECT_EQ(r.body[key], cli[key]) << key;
  }
  ASSERT_EQ(r.body["slots"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const char* key : {"slot", "state", "pid", "worker_id", "worker_status", "restarts"}) {
      EXPECT_EQ(r.body["slots"][i][key], cli["slots"][i][key]) << key;
    }
  }
  EXPECT_EQ(api.Get("/api/orchestrator?verbose=1").status, 400);
}

// tx opens its HTTP module only when it needs it (exec/http_module.h): an orchestrator that serves
// the API maps it, and the workers it starts, which speak only to the store, map neither it nor
// cpp-httplib nor the OpenSSL it brings.
TEST_F(PoolApiTest, OnlyTheServingOrchestratorMapsTheHttpLibraries) {
  StartServed({"--workers", "2"});
  ASSERT_TRUE(PoolIs({"slot-1", "slot-2"}));
  json st = Status();
  auto exe = [](long pid) {
    return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe").filename();
  };
  auto maps = [](long pid) { return ReadFile("/proc/" + std::to_string(pid) + "/maps"); };
  long orchestrator = st["pid"].get<long>();
  EXPECT_EQ(exe(orchestrator), "tx");
  EXPECT_NE(maps(orchestrator).find("libtx_http.so"), std::string::npos);
  EXPECT_NE(maps(orchestrator).find("libcpp-httplib"), std::string::npos);
  ASSERT_EQ(st["slots"].size(), 2u);
  for (const auto& slot : st["slots"]) {
    long pid = slot["pid"].get<long>();
    EXPECT_EQ(exe(pid), "tx") << slot.dump();
    std::string m = maps(pid);
    EXPECT_FALSE(m.empty());
    for (const char* lib : {"libtx_http.so", "libcpp-httplib", "libssl", "libcrypto"}) {
      EXPECT_EQ(m.find(lib), std::string::npos) << slot["slot"] << " maps " << lib;
    }
  }
}

TEST_F(PoolApiTest, ScaleGrowsAndShrinksThePoolAndRefusesBadRequests) {
  ApiClient api = StartServed({"--workers", "1", "--max-workers", "3", "--capacity-timeout", "1s"});
  HttpReply up = api.Post("/api/orchestrator/scale", {{"workers", 3}});
  ASSERT_EQ(up.status, 200) << up.body.dump();
  EXPECT_EQ(up.body["workers"], 3);
  EXPECT_TRUE(PoolIs({"slot-1", "slot-2", "slot-3"}));
  HttpReply down = api.Post("/api/orchestrator/scale", {{"workers", 1}});
  ASSERT_EQ(down.status, 200) << down.body.dump();
  EXPECT_TRUE(PoolIs({"slot-1"}));

  HttpReply over = api.Post("/api/orchestrator/scale", {{"workers", 5}});
  EXPECT_EQ(over.status, 429) << over.body.dump();  // backpressure: past max-workers
  EXPECT_NE(over.body["error"].value("message", "").find("no capacity: 3 of 5"), std::string::npos)
      << over.body.dump();
  for (const json& bad : {json{{"workers", "two"}}, json{{"workers", -1}}, json::object(),
                          json{{"workers", 2}, {"now", true}}}) {
    HttpReply r = api.Post("/api/orchestrator/scale", bad);
    EXPECT_EQ(r.status, 400) << bad.dump();
    EXPECT_EQ(ErrorCodeOf(r), "invalid_argument");
  }
  EXPECT_EQ(Anonymous().Post("/api/orchestrator/scale", {{"workers", 2}}).status, 401);
  EXPECT_TRUE(PoolIs({"slot-1", "slot-2", "slot-3"}));  // the refused requests changed nothing
}

TEST_F(PoolApiTest, ACreatedWorkerRunsItsOwnAgentInItsWorkdirWithItsInstructions) {
  ApiClient api = StartServed({"--workers", "1"});
  ASSERT_TRUE(PoolIs({"slot-1"}));
  json spec = {{"name", "gpu-agent"},
               {"agent", "sh -c 'pwd > seen.txt; cat AGENTS.md >> seen.txt'"},
               {"instructions", "# House rules\nRun the tests before you report.\n"},
               {"capabilities", {"gpu"}},
               {"queues", "special,default"},
               {"allowed_commands", {"task.show", "task.done"}},
               {"limits", {{"open_files", 256}}}};
  HttpReply r = api.Post("/api/workers", spec);
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["slot"], "slot-2");
  EXPECT_EQ(r.body["name"], "gpu-agent");
  EXPECT_EQ(r.body["capabilities"], json({"gpu"}));
  EXPECT_EQ(r.location, "/api/workers/" + r.body["id"].get<std::string>());
  std::string workdir = r.body["metadata"].value("workdir", "");
  EXPECT_EQ(workdir, fs::canonical(Path(".tx")).string() + "/workers/slot-2");
  EXPECT_EQ(ReadFile(workdir + "/CLAUDE.md"), spec["instructions"]);
  EXPECT_EQ(ReadFile(workdir + "/AGENTS.md"), spec["instructions"]);

  // Only it can take a task in its queue that needs a GPU; it runs its own agent there.
  RunResult added =
      Tx({"--json", "task", "add", "render", "--queue", "special", "--requires", "gpu"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string id = json::parse(added.out)["id"];
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; })) << Show(id).dump();
  EXPECT_EQ(Show(id)["attempts"][0]["worker_id"], r.body["id"]);
  EXPECT_EQ(ReadFile(workdir + "/seen.txt"),
            workdir + "\n" + spec["instructions"].get<std::string>());

  // It belongs to the pool: killed, it is replaced in its slot with the same settings.
  ASSERT_EQ(::kill(static_cast<pid_t>(r.body["pid"].get<int>()), SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] {
    json s = SlotOf("slot-2");
    return s["worker_status"] == "idle" && s["worker_id"] != r.body["id"];
  })) << Status().dump();
  json again = json::parse(Tx({"--json", "worker", "status", IdOfSlot("slot-2")}).out);
  EXPECT_EQ(again["name"], "gpu-agent");
  EXPECT_EQ(again["capabilities"], json({"gpu"}));
}

TEST_F(PoolApiTest, ACreatedWorkerIsCheckedFirstAndBeyondMaxWorkersIsRefusedWith503) {
  ApiClient api = StartServed({"--workers", "1", "--max-workers", "1", "--capacity-timeout", "1s"});
  ASSERT_TRUE(PoolIs({"slot-1"}));
  for (const json& bad :
       {json{{"agent", "no-such-profile"}}, json{{"agent", "run {nonsense}"}},
        json{{"colour", "blue"}}, json{{"limits", {{"memory_mb", -1}}}},
        json{{"limits", {{"gpus", 1}}}}, json{{"queues", {"a b"}}}, json{{"workdir", "relative"}},
        json{{"capabilities", "gpu"}, {"name", ""}}}) {
    HttpReply r = api.Post("/api/workers", bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << " → " << r.body.dump();
  }
  HttpReply full = api.Post("/api/workers", {{"agent", "generic"}});
  EXPECT_EQ(full.status, 503) << full.body.dump();
  EXPECT_EQ(ErrorCodeOf(full), "no_capacity");
  EXPECT_TRUE(PoolIs({"slot-1"}));  // nothing was added, and the pool carried on
  EXPECT_EQ(Anonymous().Post("/api/workers", json::object()).status, 401);

  ASSERT_EQ(Tx({"orchestrator", "stop"}).exit_code, 0);
  ASSERT_EQ(orchestrators_.back()->Wait(30s), 0);
}

// Issue 23, item 2: a pool started with --agent makes a worker with an agent of its own (it was
// given --agent twice, refused to start and the slot crash-looped), and a bad name is a 400 at
// once rather than a 503 after the capacity timeout.
TEST_F(PoolApiTest, ACreatedWorkersOwnAgentReplacesThePoolsAndABadNameIsRefusedAtOnce) {
  std::ofstream(Path(".tx/config.toml")) << "[agents.own]\nargv = [\"sh\", \"-c\", \"true\"]\n"
                                         << "[agents.pools]\nargv = [\"sh\", \"-c\", \"true\"]\n";
  ApiClient api = StartServed({"--workers", "1", "--agent", "pools"});
  ASSERT_TRUE(PoolIs({"slot-1"}));
  auto t0 = std::chrono::steady_clock::now();
  HttpReply bad = api.Post("/api/workers", {{"name", "bad name!"}, {"agent", "own"}});
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "refused only after a wait";
  HttpReply r = api.Post("/api/workers", {{"name", "mine"}, {"agent", "own"}});
  ASSERT_EQ(r.status, 201) << r.body.dump() << Log();
  EXPECT_EQ(r.body["metadata"].value("agent", ""), "own");
  EXPECT_EQ(SlotOf("slot-1")["restarts"], 0) << Status().dump();
  EXPECT_EQ(SlotOf("slot-2")["restarts"], 0) << Status().dump();
  EXPECT_EQ(Log().find("At Most 1"), std::string::npos) << Log();
}

TEST_F(PoolApiTest, DeletingASupervisedWorkerRetiresItsSlotAndForceReleasesItsTaskUncounted) {
  ApiClient api = StartServed({"--workers", "3"});
  ASSERT_TRUE(PoolIs({"slot-1", "slot-2", "slot-3"}));
  std::string two = IdOfSlot("slot-2");
  HttpReply r = api.Delete("/api/workers/" + two);
  ASSERT_EQ(r.status, 202) << r.body.dump();
  ASSERT_TRUE(PoolIs({"slot-1", "slot-3"}));  // gone, and not replaced
  EXPECT_EQ(Status()["desired"], 2);
  ASSERT_TRUE(WaitFor([&] {
    return json::parse(Tx({"--json", "worker", "status", two}).out)["status"] == "stopped";
  }));
  EXPECT_EQ(api.Delete("/api/workers/" + two).status, 409);  // already stopped
  EXPECT_EQ(api.Delete("/api/workers/worker-zzzzzzzz").status, 404);
  EXPECT_EQ(api.Delete("/api/workers/" + IdOfSlot("slot-1") + "?force=maybe").status, 400);

  // A busy worker deleted with force: its agent stops now, its task goes back uncounted.
  std::string gate = Path("gate");
  std::string id = AddShellTask("while [ ! -e " + gate + " ]; do sleep 0.05; done");
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "running"; }));
  std::string holder = Show(id)["attempts"][0]["worker_id"];
  std::string kept = SlotOf("slot-1")["worker_id"] == holder ? "slot-3" : "slot-1";
  int agent = 0;
  ASSERT_TRUE(WaitFor([&] {
    agent = json::parse(Tx({"--json", "worker", "status", holder}).out)["metadata"].value(
        "agent_pid", 0);
    return agent > 0;
  }));
  HttpReply forced = api.Delete("/api/workers/" + holder + "?force=true");
  ASSERT_EQ(forced.status, 202) << forced.body.dump();
  ASSERT_TRUE(WaitFor([&] { return !Running(agent); }));
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() == 2; })) << Show(id).dump();
  json task = Show(id);
  EXPECT_EQ(task["attempts"][0]["end_reason"], "shutdown");
  EXPECT_EQ(Status()["desired"], 1);
  std::ofstream(gate).put('\n');
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  EXPECT_EQ(Show(id)["attempt"], 1);  // the released attempt was given back

  // A worker no orchestrator supervises is asked to stop.
  auto hand = StartHandWorker();
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 2; }));
  HttpReply stop = api.Delete("/api/workers/by-hand");
  ASSERT_EQ(stop.status, 202) << stop.body.dump();
  EXPECT_EQ(hand->Wait(30s), 0);
  EXPECT_TRUE(PoolIs({kept}));
}

TEST_F(PoolApiTest, PauseAndResumeFreezeAndThawAWorker) {
  ApiClient api = StartServed({"--workers", "1"});
  ASSERT_TRUE(PoolIs({"slot-1"}));
  std::string w = IdOfSlot("slot-1");
  HttpReply paused = api.Post("/api/workers/" + w + "/pause");
  ASSERT_EQ(paused.status, 200) << paused.body.dump();
  ASSERT_TRUE(WaitFor([&] { return SlotOf("slot-1")["worker_status"] == "paused"; }));
  std::string id = AddShellTask("true");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(TaskStatus(id), "ready");  // a paused worker claims nothing
  EXPECT_EQ(api.Post("/api/workers/" + w + "/pause").status, 409);
  ASSERT_EQ(api.Post("/api/workers/" + w + "/resume").status, 200);
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  EXPECT_EQ(api.Post("/api/workers/worker-zzzzzzzz/pause").status, 404);
  EXPECT_EQ(Anonymous().Post("/api/workers/" + w + "/pause").status, 401);
}

TEST_F(PoolApiTest, SessionsListTheRunningAgentsAndEndingOneRequeuesItsTask) {
  ApiClient api = StartServed({"--workers", "1"});
  ASSERT_TRUE(PoolIs({"slot-1"}));
  EXPECT_EQ(api.Get("/api/sessions").body["sessions"], json::array());
  std::string gate = Path("gate");
  std::string id = AddShellTask("while [ ! -e " + gate + " ]; do sleep 0.05; done");
  json session;
  ASSERT_TRUE(WaitFor([&] {
    json list = api.Get("/api/sessions").body["sessions"];
    if (list.size() != 1 || !list[0]["agent_pid"].is_number()) return false;
    session = list[0];
    return true;
  }));
  EXPECT_EQ(session["task_id"], id);
  EXPECT_EQ(session["task_title"], "t");
  EXPECT_EQ(session["slot"], "slot-1");
  EXPECT_EQ(session["attempt"], 1);
  EXPECT_EQ(session["id"], std::to_string(Show(id)["attempts"][0]["token"].get<int>()));
  pid_t agent = session["agent_pid"];
  ASSERT_TRUE(Running(agent));

  HttpReply ended = api.Delete("/api/sessions/" + session["id"].get<std::string>());
  ASSERT_EQ(ended.status, 200) << ended.body.dump();
  EXPECT_EQ(ended.body["attempts"][0]["end_reason"], "cancelled");
  ASSERT_TRUE(WaitFor([&] { return !Running(agent); }));  // the worker killed it at once
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() == 2; }));  // and runs it again
  EXPECT_EQ(api.Delete("/api/sessions/" + session["id"].get<std::string>()).status, 409);
  EXPECT_EQ(api.Delete("/api/sessions/999999").status, 404);
  EXPECT_EQ(api.Delete("/api/sessions/abc").status, 404);

  // The heartbeat document's sessionId names the same session (the source notes pair them).
  json doc;
  ASSERT_TRUE(WaitFor([&] {
    doc = json::parse(Tx({"worker", "status", "--format", "heartbeats"}).out, nullptr, false);
    return doc.is_object() && doc["workers"]["slot-1"]["sessionId"].is_string();
  }));
  std::string session_id = doc["workers"]["slot-1"]["sessionId"];
  HttpReply by_doc = api.Delete("/api/sessions/" + session_id);
  ASSERT_EQ(by_doc.status, 200) << session_id << ": " << by_doc.body.dump();
  EXPECT_EQ(by_doc.body["attempts"][1]["end_reason"], "cancelled");
  EXPECT_EQ(api.Delete("/api/sessions/tx:worker-zzzzzzzz:" + id).status, 404);
  ASSERT_TRUE(WaitFor([&] { return Show(id)["attempts"].size() == 3; }));
  std::ofstream(gate).put('\n');
  ASSERT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }));
  EXPECT_EQ(Show(id)["attempt"], 3);  // the ended attempts counted
}

TEST_F(PoolApiTest, AFullQueueRefusesANewTaskWith429AndWritesNothing) {
  ApiClient api = StartServed({"--workers", "0", "--max-queue-depth", "1"});
  ASSERT_EQ(api.Post("/api/tasks", {{"title", "first"}}).status, 201);
  HttpReply full = api.Post("/api/tasks", {{"title", "second"}});
  EXPECT_EQ(full.status, 429) << full.body.dump();
  EXPECT_EQ(ErrorCodeOf(full), "backpressure");
  EXPECT_NE(full.body["error"].value("message", "").find("queue full"), std::string::npos)
      << full.body.dump();
  EXPECT_EQ(Tasks().size(), 1u);
}

TEST_F(PoolApiTest, StopOverHttpStopsThePoolGracefully) {
  ApiClient api = StartServed({"--workers", "2"});
  ASSERT_TRUE(PoolIs({"slot-1", "slot-2"}));
  EXPECT_EQ(api.Post("/api/orchestrator/stop", {{"force", "yes"}}).status, 400);
  HttpReply r = api.Post("/api/orchestrator/stop");
  ASSERT_EQ(r.status, 202) << r.body.dump();
  ASSERT_EQ(orchestrators_.back()->Wait(30s), 0) << Log();
  EXPECT_EQ(Status()["status"], "stopped");
  EXPECT_TRUE(LiveWorkers().empty());
}

}  // namespace
