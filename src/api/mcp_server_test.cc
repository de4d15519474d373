#include "api/mcp_server.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tx::api {
namespace {

using nlohmann::json;

// A server whose tools' commands are recorded and answered with `reply` instead of run (the
// real binary runs them in tests/mcp_test.cc).
struct Recorded {
  std::vector<std::vector<std::string>> calls;
  ToolRun reply{0, R"({"id": "task-abcdefgh", "status": "done"})", ""};
};

McpServer ServerFor(Recorded& r, const std::string& task_id = "task-abcdefgh") {
  McpOptions o;
  o.tx_binary = "/bin/tx";
  o.task_id = task_id;
  o.run = [&r](const std::vector<std::string>& argv) -> Result<ToolRun> {
    r.calls.push_back(argv);
    return r.reply;
  };
  return McpServer(o);
}

json Reply(McpServer& s, const json& message) {
  std::optional<std::string> line = s.Handle(message.dump());
  EXPECT_TRUE(line.has_value()) << message;
  return line ? json::parse(*line) : json();
}

json Call(McpServer& s, const std::string& tool, json arguments) {
  return Reply(s, {{"jsonrpc", "2.0"},
                   {"id", 7},
                   {"method", "tools/call"},
                   {"params", {{"name", tool}, {"arguments", arguments}}}})["result"];
}

TEST(McpToolArgv, EachToolRunsItsCommandWithValuesThatCannotPassForOptions_Issue22) {
  const std::string id = "task-abcdefgh";
  EXPECT_EQ(*McpToolArgv("task_show", json::object(), id),
            (std::vector<std::string>{"--json", "task", "show", "--", id}));
  EXPECT_EQ(*McpToolArgv("task_show", {{"id", "task-other000"}}, id),
            (std::vector<std::string>{"--json", "task", "show", "--", "task-other000"}));
  EXPECT_EQ(*McpToolArgv("task_done", {{"result", "--force"}}, id),
            (std::vector<std::string>{"--json", "task", "done", "--result=--force", "--", id}));
  EXPECT_EQ(*McpToolArgv("task_review", json::object(), id),
            (std::vector<std::string>{"--json", "task", "review", "--", id}));
  EXPECT_EQ(*McpToolArgv("task_fail", {{"error", "no"}}, id),
            (std::vector<std::string>{"--json", "task", "fail", "--error=no", "--", id}));
  EXPECT_EQ(*McpToolArgv("task_ask", {{"question", "-which?"}}, id),
            (std::vector<std::string>{"--json", "task", "ask", "--", "-which?"}));
  EXPECT_EQ(*McpToolArgv("task_note", {{"text", "half"}}, id),
            (std::vector<std::string>{"--json", "task", "note", "--task=" + id, "--", "half"}));
  EXPECT_EQ(*McpToolArgv("task_add",
                         {{"title", "t"},
                          {"priority", -2},
                          {"requires", {"a", "b"}},
                          {"queue", "q"},
                          {"agent", "codex"},
                          {"description", "d"},
                          {"instructions", "i"}},
                         id),
            (std::vector<std::string>{"--json", "task", "add", "--description=d",
                                      "--instructions=i", "--priority=-2", "--queue=q",
                                      "--requires=a", "--requires=b", "--agent=codex", "--", "t"}));
  EXPECT_EQ(McpToolArgv("task_nope", json::object(), id).error().code(), ErrorCode::kNotFound);
  for (const json& bad :
       {json{{"priority", "high"}, {"title", "t"}}, json{{"title", ""}},
        json{{"requires", {1}}, {"title", "t"}}, json{{"title", "t"}, {"owner", "me"}},
        json{{"title", "t"}, {"command", "make"}}, json::object()}) {
    auto r = McpToolArgv("task_add", bad, id);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(McpToolArgv("task_done", json::object(), "").ok());  // no task
  EXPECT_TRUE(McpToolArgv("task_add", {{"title", "t"}}, "").ok());  // a task of one's own
}

TEST(McpServer, AToolsFailureIsAResultWithIsErrorAndOneLine_Issue22) {
  Recorded r;
  McpServer s = ServerFor(r);
  r.reply = {4,
             R"({"error": {"code": "conflict", "message": "token 3 of task-abcdefgh is stale"}})",
             "tx: token 3 of task-abcdefgh is stale\n"};
  json refused = Call(s, "task_done", json::object());
  EXPECT_EQ(refused["isError"], true);
  EXPECT_EQ(refused["content"][0]["text"], "token 3 of task-abcdefgh is stale");
  r.reply = {2, "", "tx: 'tx task add' is not allowed here: TX_ALLOWED_COMMANDS=task.show\n"};
  json denied = Call(s, "task_add", {{"title", "x"}});
  EXPECT_EQ(denied["content"][0]["text"],
            "'tx task add' is not allowed here: TX_ALLOWED_COMMANDS=task.show");
  r.reply = {0, R"({"id": "task-abcdefgh", "status": "done"})", ""};
  json done = Call(s, "task_done", {{"result", "ok"}});
  EXPECT_EQ(done["isError"], false);
  EXPECT_EQ(done["content"][0]["text"], "task-abcdefgh is done");
  EXPECT_EQ(done["structuredContent"]["status"], "done");
  ASSERT_EQ(r.calls.size(), 3u);
  EXPECT_EQ(r.calls[2][0], "/bin/tx");
}

TEST(McpServer, TheLifecycleAndTheErrorsOfJsonRpc_Issue22) {
  Recorded r;
  McpServer s = ServerFor(r);
  json init = Reply(s, {{"jsonrpc", "2.0"},
                        {"id", "a"},
                        {"method", "initialize"},
                        {"params", {{"protocolVersion", "2025-06-18"}}}});
  EXPECT_EQ(init["id"], "a");
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(s.protocol_version(), "2025-06-18");
  EXPECT_FALSE(s.Handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_FALSE(s.Handle("   "));
  EXPECT_FALSE(s.Handle(R"({"jsonrpc":"2.0","id":3,"result":{}})"));  // a response: none due
  EXPECT_EQ(
      Reply(s, json::parse(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"))["error"]["code"],
      -32600);
  EXPECT_EQ(json::parse(*s.Handle("[]"))["error"]["code"], -32600);
  EXPECT_EQ(json::parse(*s.Handle("nope"))["error"]["code"], -32700);
  json batch = json::parse(
      *s.Handle(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"},)"
                R"({"jsonrpc":"2.0","id":2,"method":"nope"}])"));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0]["result"], json::object());
  EXPECT_EQ(batch[1]["error"]["code"], -32601);
  // Each answer is one line whatever the text holds.
  r.reply = {1, "", "tx: line one\nline two\n"};
  std::string line = *s.Handle(
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"task_note","arguments":{"text":"a\nb"}}})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(line)["result"]["content"][0]["text"], "line one");
}

TEST(McpServer, ServeAnswersLineByLineUntilTheEndOfInput_Issue22) {
  Recorded r;
  McpServer s = ServerFor(r);
  std::istringstream in(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
  std::ostringstream out;
  s.Serve(in, out);
  std::istringstream lines(out.str());
  std::string first, second, third;
  ASSERT_TRUE(std::getline(lines, first));
  ASSERT_TRUE(std::getline(lines, second));
  EXPECT_FALSE(std::getline(lines, third));
  EXPECT_EQ(json::parse(first)["id"], 1);
  EXPECT_EQ(json::parse(second)["result"]["tools"].size(), 7u);
}

}  // namespace
}  // namespace tx::api
