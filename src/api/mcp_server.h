#pragma once
// McpServer: `tx mcp`, the Model Context Protocol over standard input and output (docs/mcp.md):
// newline-delimited JSON-RPC 2.0 messages, per the MCP specification (revision 2025-11-25, and
// the earlier ones a client may ask for). It serves tools that act for the agent's own task —
// task_show, task_done, task_fail, task_review, task_ask, task_note, task_add — each by running
// the tx command it stands for (`tx --json task done ID ...`) as a child process: fencing by the
// claim token in the environment, TX_ALLOWED_COMMANDS, and the store or the server it reaches
// are exactly the CLI's, and nothing the command prints can reach the protocol stream.
//
// Lives in tx_mcp, which links no HTTP library, so that plain tx serves it.
//
// Thread safety: none; one per connection.

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx::api {

// The protocol revisions served, oldest first; the last is the one offered to a client that asks
// for a revision not in this list.
inline constexpr std::string_view kMcpProtocolVersions[] = {"2024-11-05", "2025-03-26",
                                                            "2025-06-18", "2025-11-25"};

// How a tool's command ended: its exit code (128 + N when killed by signal N) and its output.
struct ToolRun {
  int exit_code = 0;
  std::string out;
  std::string err;
};
// Runs `argv` (argv[0] the tx binary) to completion. An error when it could not be started.
using ToolRunner = std::function<Result<ToolRun>(const std::vector<std::string>& argv)>;

struct McpOptions {
  std::string tx_binary;  // argv[0] of every tool's command: the running tx
  // The task the tools act for when a call names none ($TX_TASK_ID); "" = none.
  std::string task_id;
  // Runs a tool's command; empty: exec::RunCommand with this process's environment, stdin
  // /dev/null, at most `tool_timeout_ms`.
  ToolRunner run;
  long long tool_timeout_ms = 120'000;
};

// The tools, as tools/list lists them: name, title, description, inputSchema (a JSON Schema
// object).
nlohmann::json McpTools();

// The argv (after the tx binary) of the command a call of `tool` with `arguments` stands for,
// e.g. {"--json", "task", "done", ID, "--result", R}. `task_id` is the agent's task.
// invalid_argument, in one line naming it, for arguments that do not fit the tool's schema (one
// missing, of the wrong type, or unknown) or a tool that needs a task when there is none;
// not_found for an unknown tool.
Result<std::vector<std::string>> McpToolArgv(std::string_view tool, const nlohmann::json& arguments,
                                             const std::string& task_id);

class McpServer {
 public:
  explicit McpServer(McpOptions options);

  // One message (a line read from the client), and what to answer: a line to write (without its
  // newline), or nullopt when nothing is due (a notification, a response, a blank line).
  //  - malformed JSON: -32700; not a JSON-RPC 2.0 request or notification: -32600;
  //  - an unknown method: -32601 (an unknown notification is ignored);
  //  - params that do not fit the method (initialize without protocolVersion, tools/call
  //    without a name, an unknown tool): -32602;
  //  - a tool whose command fails, or whose arguments do not fit its schema: a result with
  //    isError true and one line of text saying why.
  // A batch (a JSON array) gets an array of the answers due.
  std::optional<std::string> Handle(std::string_view line);

  // Reads messages from `in`, one a line, until its end, writing each answer to `out` as one
  // line, flushed. Returns at end of input.
  void Serve(std::istream& in, std::ostream& out);

  // The protocol revision agreed at initialize ("" before).
  const std::string& protocol_version() const { return protocol_version_; }

 private:
  // The answer due for one message (a JSON value), or a null json when none is.
  nlohmann::json HandleMessage(const nlohmann::json& message);
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json CallTool(const nlohmann::json& params);

  McpOptions options_;
  std::string protocol_version_;
};

}  // namespace tx::api
