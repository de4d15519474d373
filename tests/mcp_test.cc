// tx mcp (issue 22), driven as an MCP client drives it: the real tx binary started with pipes for
// its standard input and output, a real SQLite store, a task really claimed with a token, and a
// client of the test's own that follows the MCP specification (revision 2025-11-25: newline-
// delimited JSON-RPC 2.0, initialize and its version negotiation, notifications/initialized,
// tools/list, tools/call). Also the CLI under the tools: `tx task note` and `tx task add` run by
// an agent (a subtask, within max_subtasks and two levels), their exit codes, and a real worker
// whose agent talks to tx mcp.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "process_probes.h"
#include "run_process.h"

namespace tx {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::Env;
using testing::RunResult;
using testing::TempDir;

// `tx mcp` as a client starts it: stdin and stdout are pipes to this test, stderr goes to a file.
class McpProcess {
 public:
  McpProcess(const std::string& cwd, const Env& env, const std::string& stderr_path) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    std::vector<std::string> argv_s = {TX_BINARY, "mcp"};
    std::vector<std::string> env_s = testing::detail::ChildEnvironment(env);
    std::vector<char*> argv = testing::detail::CStrings(argv_s);
    std::vector<char*> envp = testing::detail::CStrings(env_s);
    int rc = posix_spawn(&pid_, TX_BINARY, &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) throw std::runtime_error("spawn tx mcp failed");
  }
  ~McpProcess() {
    CloseInput();
    if (from_ >= 0) close(from_);
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
  }

  void SendLine(const std::string& line) {
    std::string data = line + "\n";
    ASSERT_EQ(write(to_, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  void Send(const json& message) { SendLine(message.dump()); }

  // The next line the server writes, within `timeout`; nullopt at its end of output or timeout.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout = 60s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        lines_.push_back(line);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      ssize_t n = read(from_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  // The next message, parsed (a test failure, and null, when none comes or it is not JSON).
  json Receive() {
    std::optional<std::string> line = ReadLine();
    EXPECT_TRUE(line.has_value()) << "tx mcp wrote nothing";
    if (!line) return nullptr;
    json j = json::parse(*line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << *line;
    return j.is_discarded() ? json(nullptr) : j;
  }

  // A request, and its response (a JSON-RPC response with the same id).
  json Request(const std::string& method, json params = json::object()) {
    int id = ++next_id_;
    Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    json reply = Receive();
    EXPECT_EQ(reply.value("jsonrpc", ""), "2.0") << reply;
    EXPECT_EQ(reply.value("id", json()), id) << reply;
    return reply;
  }

  // The lifecycle's first step: initialize, then notifications/initialized. The result.
  json Initialize(const std::string& version = "2025-11-25") {
    json reply = Request("initialize", {{"protocolVersion", version},
                                        {"capabilities", json::object()},
                                        {"clientInfo", {{"name", "tx-test"}, {"version", "1"}}}});
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return reply.value("result", json());
  }

  // tools/call: the result (content, isError, structuredContent).
  json Call(const std::string& tool, json arguments = json::object()) {
    json reply = Request("tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
    EXPECT_TRUE(reply.contains("result")) << reply;
    return reply.value("result", json());
  }

  void CloseInput() {
    if (to_ >= 0) close(to_);
    to_ = -1;
  }

  // The exit status once it has exited within `timeout`, else -1.
  int Wait(std::chrono::milliseconds timeout) {
    if (exit_code_) return *exit_code_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return *exit_code_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      usleep(10'000);
    }
  }

  // Every line it wrote that this client read.
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string buffer_;
  std::vector<std::string> lines_;
  std::optional<int> exit_code_;
  int next_id_ = 0;
};

std::string Text(const json& result) {
  if (!result.contains("content") || result["content"].empty()) return "";
  return result["content"][0].value("text", "");
}

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override { Must({"init"}); }

  std::string Path(const std::string& rel) const { return (dir_.path() / rel).string(); }
  std::string Db() const { return fs::canonical(Path(".tx/tx.db")).string(); }

  RunResult Tx(std::vector<std::string> args, const Env& env = {}) {
    return testing::RunTx(std::move(args), env, dir_.str());
  }
  RunResult Must(std::vector<std::string> args, const Env& env = {}) {
    RunResult r = Tx(args, env);
    if (r.exit_code != 0) {
      std::string cmd = "tx";
      for (const auto& a : args) cmd += " " + a;
      throw std::runtime_error("expected success: " + cmd + "\n" + r.out + r.err);
    }
    return r;
  }
  json MustJson(std::vector<std::string> args, const Env& env = {}) {
    args.insert(args.begin(), "--json");
    return json::parse(Must(args, env).out);
  }

  std::string Add(const std::string& title, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"task", "add", title};
    args.insert(args.end(), flags.begin(), flags.end());
    return MustJson(args)["id"];
  }
  // Claims the task for a worker named `worker`; its token.
  std::string Claim(const std::string& id, const std::string& worker = "w1") {
    return std::to_string(MustJson({"claim", id, "--worker", worker})["token"].get<std::int64_t>());
  }
  json Show(const std::string& id) { return MustJson({"task", "show", id}); }
  std::size_t TaskCount() { return MustJson({"task", "list"}).size(); }
  std::int64_t LastEvent() {
    json events = MustJson({"events"});
    return events.empty() ? 0 : events.back()["id"].get<std::int64_t>();
  }

  // What an agent of a local worker has in its environment for the task `id`.
  Env AgentEnv(const std::string& id, const std::string& token) {
    return {{"TX_DB", Db()}, {"TX_TASK_ID", id}, {"TX_CLAIM_TOKEN", token}};
  }

  std::unique_ptr<McpProcess> StartMcp(const Env& env) {
    return std::make_unique<McpProcess>(dir_.str(), env, Path("mcp.stderr"));
  }

  TempDir dir_;
};

// ================================ the protocol ==================================================

TEST_F(McpTest, InitializeAnswersTheVersionAskedForWhenServedElseTheLatest_Issue22) {
  for (const char* version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    auto mcp = StartMcp({});
    json result = mcp->Initialize(version);
    EXPECT_EQ(result["protocolVersion"], version);
    EXPECT_EQ(result["serverInfo"]["name"], "tx");
    EXPECT_TRUE(result["capabilities"].contains("tools")) << result;
  }
  auto mcp = StartMcp({});
  json result = mcp->Initialize("1999-01-01");
  EXPECT_EQ(result["protocolVersion"], "2025-11-25");
  EXPECT_EQ(mcp->Request("ping")["result"], json::object());
}

TEST_F(McpTest, ToolsListGivesEveryToolWithItsInputSchema_Issue22) {
  auto mcp = StartMcp({});
  mcp->Initialize();
  json tools = mcp->Request("tools/list")["result"]["tools"];
  std::map<std::string, json> by_name;
  for (const auto& t : tools) by_name[t["name"]] = t;
  std::set<std::string> names;
  for (const auto& [name, t] : by_name) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"task_add", "task_ask", "task_done", "task_fail",
                                          "task_note", "task_review", "task_show"}));
  for (const auto& [name, t] : by_name) {
    EXPECT_FALSE(t.value("description", "").empty()) << name;
    EXPECT_EQ(t["inputSchema"]["type"], "object") << name;
    EXPECT_TRUE(t["inputSchema"]["properties"].is_object()) << name;
  }
  auto required = [&](const std::string& tool) {
    return by_name[tool]["inputSchema"].value("required", json::array());
  };
  EXPECT_EQ(required("task_fail"), json::array({"error"}));
  EXPECT_EQ(required("task_ask"), json::array({"question"}));
  EXPECT_EQ(required("task_note"), json::array({"text"}));
  EXPECT_EQ(required("task_add"), json::array({"title"}));
  EXPECT_EQ(required("task_done"), json::array());
  json add = by_name["task_add"]["inputSchema"]["properties"];
  for (const char* p :
       {"title", "description", "instructions", "priority", "queue", "requires", "agent"}) {
    EXPECT_TRUE(add.contains(p)) << p;
  }
  // A subtask runs as its agent's worker decides, not a command of the agent's choosing.
  EXPECT_FALSE(add.contains("command"));
  EXPECT_EQ(add["priority"]["type"], "integer");
  EXPECT_EQ(add["requires"]["items"]["type"], "string");
}

TEST_F(McpTest, MalformedInputGetsTheJsonRpcErrorsAndTheServerGoesOn_Issue22) {
  auto mcp = StartMcp({});
  mcp->SendLine("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  json parse = mcp->Receive();
  EXPECT_EQ(parse["error"]["code"], -32700);
  EXPECT_TRUE(parse["id"].is_null());
  mcp->SendLine("[1, 2]");  // a batch of two invalid requests
  json batch = mcp->Receive();
  ASSERT_TRUE(batch.is_array()) << batch;
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0]["error"]["code"], -32600);
  mcp->Send({{"jsonrpc", "1.0"}, {"id", 2}, {"method", "ping"}});
  json wrong = mcp->Receive();
  EXPECT_EQ(wrong["error"]["code"], -32600);
  EXPECT_EQ(wrong["id"], 2);
  mcp->Initialize();
  EXPECT_EQ(mcp->Request("resources/list")["error"]["code"], -32601);
  EXPECT_EQ(mcp->Request("tools/call", {{"name", "rm_rf"}})["error"]["code"], -32602);
  EXPECT_EQ(mcp->Request("tools/call", {{"arguments", json::object()}})["error"]["code"], -32602);
  EXPECT_EQ(
      mcp->Request("tools/call", {{"name", "task_show"}, {"arguments", "x"}})["error"]["code"],
      -32602);
  EXPECT_EQ(mcp->Request("initialize", {{"capabilities", json::object()}})["error"]["code"],
            -32602);
  // A notification, known or not, gets no answer: the next line answers the ping after it.
  mcp->Send({{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}});
  mcp->Send(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 9}}}});
  EXPECT_EQ(mcp->Request("ping")["result"], json::object());
  // Arguments that do not fit a tool's schema are the tool's error, for the model to correct.
  json missing = mcp->Call("task_fail");
  EXPECT_EQ(missing["isError"], true);
  EXPECT_NE(Text(missing).find("argument 'error' is required"), std::string::npos) << missing;
  json unknown = mcp->Call("task_done", {{"reslut", "x"}});
  EXPECT_EQ(unknown["isError"], true);
  EXPECT_NE(Text(unknown).find("unknown argument 'reslut'"), std::string::npos) << unknown;
}

TEST_F(McpTest, TheServerExitsCleanlyAtTheEndOfItsInputHavingWrittenOnlyMessages_Issue22) {
  std::string id = Add("t");
  std::string token = Claim(id);
  auto mcp = StartMcp(AgentEnv(id, token));
  mcp->Initialize();
  mcp->Request("tools/list");
  mcp->Call("task_show");
  mcp->Call("task_note", {{"text", "a line"}});
  mcp->CloseInput();
  EXPECT_EQ(mcp->Wait(20s), 0);
  EXPECT_FALSE(mcp->ReadLine(2s).has_value());  // nothing more
  for (const auto& line : mcp->lines()) {
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(j["jsonrpc"], "2.0") << line;
  }
  EXPECT_EQ(mcp->lines().size(), 4u);
}

// ================================ the tools =====================================================

TEST_F(McpTest, TaskDoneFinishesTheAgentsTask_Issue22) {
  std::string id = Add("write it");
  std::string token = Claim(id);
  auto mcp = StartMcp(AgentEnv(id, token));
  mcp->Initialize();
  json shown = mcp->Call("task_show");
  EXPECT_EQ(shown["isError"], false) << shown;
  EXPECT_EQ(shown["structuredContent"]["status"], "running");
  json done = mcp->Call("task_done", {{"result", "--written, with a dash"}});
  EXPECT_EQ(done["isError"], false) << done;
  EXPECT_EQ(Text(done), id + " is done");
  EXPECT_EQ(done["structuredContent"]["status"], "done");
  json t = Show(id);
  EXPECT_EQ(t["status"], "done");
  EXPECT_EQ(t["result"], "--written, with a dash");
}

// After the merge of questions (issue 22): task_ask sends the agent's task to `waiting` with
// its question, the attempt uncounted; a second ask with the ended token is refused.
TEST_F(McpTest, TaskAskPutsTheTaskInWaitingWithTheQuestion_Issue22) {
  std::string id = Add("choose a database");
  std::string token = Claim(id);
  auto mcp = StartMcp(AgentEnv(id, token));
  mcp->Initialize();
  json asked = mcp->Call("task_ask", {{"question", "--Which database should I use?"}});
  EXPECT_EQ(asked["isError"], false) << asked;
  json t = Show(id);
  EXPECT_EQ(t["status"], "waiting");
  ASSERT_EQ(t["metadata"]["questions"].size(), 1u) << t;
  EXPECT_EQ(t["metadata"]["questions"][0]["question"], "--Which database should I use?");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "asked");
  EXPECT_EQ(t["attempt"], 0) << "an attempt that asked is not counted";
  json again = mcp->Call("task_ask", {{"question", "And which port?"}});
  EXPECT_EQ(again["isError"], true) << again;
  EXPECT_EQ(Show(id)["metadata"]["questions"].size(), 1u);
  Must({"task", "answer", id, "Use PostgreSQL"});
  EXPECT_EQ(Show(id)["status"], "ready");
}

TEST_F(McpTest, ACallWithAStaleTokenIsRefusedAndChangesNothing_Issue22) {
  std::string id = Add("t");
  std::string stale = Claim(id);
  Must({"claim:release", id, "--token", stale});
  std::string fresh = Claim(id, "w2");
  std::int64_t before = LastEvent();
  auto mcp = StartMcp(AgentEnv(id, stale));
  mcp->Initialize();
  for (auto [tool, args] :
       std::vector<std::pair<std::string, json>>{{"task_done", {{"result", "mine"}}},
                                                 {"task_fail", {{"error", "x"}}},
                                                 {"task_note", {{"text", "x"}}},
                                                 {"task_add", {{"title", "sub"}}}}) {
    json r = mcp->Call(tool, args);
    EXPECT_EQ(r["isError"], true) << tool << r;
    EXPECT_NE(Text(r).find("stale"), std::string::npos) << tool << r;
    EXPECT_EQ(Text(r).find('\n'), std::string::npos) << "one line: " << Text(r);
  }
  EXPECT_EQ(LastEvent(), before);
  json t = Show(id);
  EXPECT_EQ(t["status"], "running");
  EXPECT_FALSE(t["metadata"].contains("notes"));
  EXPECT_EQ(TaskCount(), 1u);
  // The holder of the fresh token is not disturbed.
  EXPECT_EQ(std::to_string(t["attempts"].back()["token"].get<std::int64_t>()), fresh);
}

TEST_F(McpTest, TaskNoteLandsInTheNotesTheEventAndTheAttemptsLog_Issue22) {
  std::string id = Add("t");
  std::string token = Claim(id);
  // Where the worker writes the attempt's log (none runs here: the test stands in for it).
  fs::create_directories(Path(".tx/logs/" + id));
  { std::ofstream(Path(".tx/logs/" + id + "/1.log")) << "agent output\n"; }
  auto mcp = StartMcp(AgentEnv(id, token));
  mcp->Initialize();
  json r = mcp->Call("task_note", {{"text", "tests pass; -now the docs"}});
  EXPECT_EQ(r["isError"], false) << r;
  EXPECT_EQ(Text(r), "noted on " + id);
  json notes = Show(id)["metadata"]["notes"];
  ASSERT_EQ(notes.size(), 1u) << notes;
  EXPECT_EQ(notes[0]["text"], "tests pass; -now the docs");
  EXPECT_EQ(notes[0]["attempt"], 1);
  EXPECT_EQ(MustJson({"events"}).back()["type"], "task.note");
  EXPECT_EQ(testing::ReadFile(Path(".tx/logs/" + id + "/1.log")),
            "agent output\n[tx] note: tests pass; -now the docs\n");
}

TEST_F(McpTest, TaskAddAddsASubtaskOfTheAgentsTaskUpToMaxSubtasks_Issue22) {
  { std::ofstream(Path(".tx/config.toml")) << "[worker]\nmax_subtasks = 2\n"; }
  std::string id = Add("parent");
  std::string token = Claim(id);
  Env env = AgentEnv(id, token);
  env["TX_MAX_SUBTASKS"] = "50";  // an agent raising its own limit gains nothing
  auto mcp = StartMcp(env);
  mcp->Initialize();
  json first = mcp->Call("task_add", {{"title", "-first, with a dash"},
                                      {"priority", 5},
                                      {"requires", {"linux"}},
                                      {"description", "d"}});
  ASSERT_EQ(first["isError"], false) << first;
  std::string child = first["structuredContent"]["id"];
  EXPECT_EQ(Text(first), "added " + child + " (ready), a subtask of " + id);
  json c = Show(child);
  EXPECT_EQ(c["title"], "-first, with a dash");
  EXPECT_EQ(c["priority"], 5);
  EXPECT_EQ(c["requires"], json::array({"linux"}));
  EXPECT_EQ(c["metadata"]["parent"], id);
  EXPECT_EQ(c["metadata"]["depth"], 1);
  EXPECT_EQ(mcp->Call("task_add", {{"title", "second"}})["isError"], false);
  std::int64_t before = LastEvent();
  json third = mcp->Call("task_add", {{"title", "third"}});
  EXPECT_EQ(third["isError"], true);
  EXPECT_NE(Text(third).find("max_subtasks = 2"), std::string::npos) << third;
  EXPECT_EQ(LastEvent(), before);
  EXPECT_EQ(TaskCount(), 3u);
  EXPECT_EQ(Show(id)["metadata"]["subtasks"].size(), 2u);
  // The same refusal from the CLI: backpressure, exit 5, one line.
  RunResult cli = Tx({"task", "add", "fourth"}, AgentEnv(id, token));
  EXPECT_EQ(cli.exit_code, 5) << cli.err;
  EXPECT_NE(cli.err.find("max_subtasks"), std::string::npos) << cli.err;
  EXPECT_EQ(TaskCount(), 3u);
  // A lower limit from the worker holds.
  RunResult lower = Tx({"task", "add", "x"}, [&] {
    Env e = AgentEnv(id, token);
    e["TX_MAX_SUBTASKS"] = "1";
    return e;
  }());
  EXPECT_EQ(lower.exit_code, 5) << lower.err;
}

TEST_F(McpTest, ASubtaskDeeperThanTwoLevelsIsRefused_Issue22) {
  std::string root = Add("root");
  std::string root_token = Claim(root, "w0");
  auto add_under = [&](const std::string& parent, const std::string& token) {
    auto mcp = StartMcp(AgentEnv(parent, token));
    mcp->Initialize();
    return mcp->Call("task_add", {{"title", "under " + parent}});
  };
  json one = add_under(root, root_token);
  ASSERT_EQ(one["isError"], false) << one;
  std::string level1 = one["structuredContent"]["id"];
  json two = add_under(level1, Claim(level1, "w1"));
  ASSERT_EQ(two["isError"], false) << two;
  std::string level2 = two["structuredContent"]["id"];
  EXPECT_EQ(Show(level2)["metadata"]["depth"], 2);
  std::string token2 = Claim(level2, "w2");
  std::int64_t before = LastEvent();
  json three = add_under(level2, token2);
  EXPECT_EQ(three["isError"], true);
  EXPECT_NE(Text(three).find("2 levels"), std::string::npos) << three;
  EXPECT_EQ(LastEvent(), before);
  EXPECT_EQ(TaskCount(), 3u);
  // The CLI's word for it: a conflict, exit 4.
  RunResult cli = Tx({"task", "add", "deeper"}, AgentEnv(level2, token2));
  EXPECT_EQ(cli.exit_code, 4) << cli.err;
}

TEST_F(McpTest, AToolWhoseCommandTheAllowListRefusesIsRefused_Issue22) {
  std::string id = Add("t");
  std::string token = Claim(id);
  Env env = AgentEnv(id, token);
  env["TX_ALLOWED_COMMANDS"] = "task.show,task.done";  // tx mcp itself needs no entry
  auto mcp = StartMcp(env);
  mcp->Initialize();
  json add = mcp->Call("task_add", {{"title", "sneaky"}});
  EXPECT_EQ(add["isError"], true);
  EXPECT_NE(Text(add).find("not allowed here"), std::string::npos) << add;
  json note = mcp->Call("task_note", {{"text", "x"}});
  EXPECT_EQ(note["isError"], true);
  EXPECT_EQ(TaskCount(), 1u);
  EXPECT_EQ(mcp->Call("task_done")["isError"], false);
  EXPECT_EQ(Show(id)["status"], "done");
}

TEST_F(McpTest, WithoutATaskTheToolsSaySoInOneLine_Issue22) {
  auto mcp = StartMcp({{"TX_DB", Db()}});
  mcp->Initialize();
  json r = mcp->Call("task_done");
  EXPECT_EQ(r["isError"], true);
  EXPECT_NE(Text(r).find("TX_TASK_ID is not set"), std::string::npos) << r;
}

// ================================ the CLI under the tools =======================================

TEST_F(McpTest, TaskNoteFromTheCliIsFencedByTheToken_Issue22) {
  std::string id = Add("t");
  std::string token = Claim(id);
  RunResult ok = Tx({"task", "note", "step one done"}, AgentEnv(id, token));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // No log yet (the worker makes it at the agent's first byte): the note makes it.
  EXPECT_EQ(testing::ReadFile(Path(".tx/logs/" + id + "/1.log")), "[tx] note: step one done\n");
  RunResult flags =
      Tx({"task", "note", "--task", id, "--token", token, "--", "-two"}, {{"TX_DB", Db()}});
  EXPECT_EQ(flags.exit_code, 0) << flags.err;
  json notes = Show(id)["metadata"]["notes"];
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1]["text"], "-two");
  RunResult stale = Tx({"task", "note", "x", "--token", "999"}, AgentEnv(id, token));
  EXPECT_EQ(stale.exit_code, 4) << stale.err;
  RunResult no_task = Tx({"task", "note", "x"}, {{"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(no_task.exit_code, 2);
  EXPECT_NE(no_task.err.find("TX_TASK_ID"), std::string::npos) << no_task.err;
  RunResult empty = Tx({"task", "note", ""}, AgentEnv(id, token));
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_EQ(Show(id)["metadata"]["notes"].size(), 2u);
}

TEST_F(McpTest, AnOperatorsTaskAddIsNotASubtask_Issue22) {
  std::string id = Add("top");
  EXPECT_FALSE(Show(id)["metadata"].contains("parent"));
}

// ================================ a real worker's agent =========================================

// A worker runs a task whose "agent" is a script speaking MCP to tx mcp, as Claude Code would
// once registered: the note lands in the log the worker writes, and task_done finishes the task.
TEST_F(McpTest, AWorkersAgentReportsThroughTxMcp_Issue22) {
  std::string script = Path("agent.sh");
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
           "echo agent starts\n"
           "printf '%s\\n' "
           "'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
           "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
           "{\"name\":\"sh\",\"version\":\"1\"}}}' "
           "'{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}' "
           "'{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"task_note\",\"arguments\":{\"text\":\"halfway there\"}}}' "
           "'{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"task_done\",\"arguments\":{\"result\":\"through mcp\"}}}' "
           "| tx mcp > mcp.out\n"
           "echo agent ends\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  std::string id = Add("mcp agent", {"--command", script, "--workdir", dir_.str()});
  testing::BackgroundProcess worker(TX_BINARY, {"worker", "start", "--poll-interval", "200ms"}, {},
                                    dir_.str(), Path("worker.log"));
  ASSERT_TRUE(testing::WaitFor([&] { return Show(id)["status"] == "done"; }, 60s))
      << worker.Output();
  json t = Show(id);
  EXPECT_EQ(t["result"], "through mcp");
  EXPECT_EQ(t["metadata"]["notes"][0]["text"], "halfway there");
  std::string log = testing::ReadFile(Path(".tx/logs/" + id + "/1.log"));
  EXPECT_NE(log.find("agent starts\n"), std::string::npos) << log;
  EXPECT_NE(log.find("[tx] note: halfway there\n"), std::string::npos) << log;
  std::string replies = testing::ReadFile(Path("mcp.out"));
  EXPECT_NE(replies.find("\"id\":3"), std::string::npos) << replies;
  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(60s), 0) << worker.Output();
}

}  // namespace
}  // namespace tx
