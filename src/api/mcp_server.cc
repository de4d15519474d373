#include "api/mcp_server.h"

#include <algorithm>
#include <iostream>
#include <string>

#include "exec/command.h"

namespace tx::api {

namespace {

using nlohmann::json;

// JSON-RPC 2.0's error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

constexpr std::string_view kServerVersion = "0.1.0";

json ErrorReply(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json ResultReply(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json Str(const char* description, bool non_empty = false) {
  json s = {{"type", "string"}, {"description", description}};
  if (non_empty) s["minLength"] = 1;
  return s;
}

json Schema(json properties, std::vector<std::string> required = {}) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = required;
  s["additionalProperties"] = false;
  return s;
}

struct Tool {
  const char* name;
  const char* title;
  const char* description;
  json (*schema)();
};

const Tool kTools[] = {
    {"task_show", "Show a task",
     "Show your task (or another, by id: a subtask you added) as `tx task show` does: status, "
     "attempts, result, metadata (its notes, parent and subtasks).",
     [] {
       return Schema({{"id", Str("A task id (default: your own task)", true)}});
     }},
    {"task_done", "Report your task done",
     "Report that your task is done, with a one-line summary of the result. Fenced by your "
     "claim's token: refused if the task is no longer yours.",
     [] {
       return Schema({{"result", Str("One-line summary of what was done")}});
     }},
    {"task_fail", "Report your task failed",
     "Report that your task cannot be done, saying why; it is retried (maybe by another "
     "attempt) until its attempts run out.",
     [] {
       return Schema({{"error", Str("Why it cannot be done", true)}}, {"error"});
     }},
    {"task_review", "Send your task to review",
     "Report your task finished but needing a person's review before it is done.",
     [] {
       return Schema({{"result", Str("Summary for the reviewer")}});
     }},
    {"task_ask", "Ask a person a question",
     "Ask a person a question you cannot answer yourself. Your attempt ends and the task waits "
     "for the answer; the next attempt gets the question and its answer.",
     [] {
       return Schema({{"question", Str("The question, for a person", true)}}, {"question"});
     }},
    {"task_note", "Note progress on your task",
     "Record a line on your task: kept in its notes (tx task show) and in your attempt's log.",
     [] {
       return Schema({{"text", Str("The note", true)}}, {"text"});
     }},
    {"task_add", "Add a subtask",
     "Add a subtask of your task, to be run by a worker as a task of its own. Limited per task "
     "(max_subtasks, 10 by default) and to two levels below a task a person added.",
     [] {
       return Schema(
           {{"title", Str("What the subtask is, in a line", true)},
            {"description", Str("Longer description")},
            {"instructions", Str("Instructions for the agent that runs it")},
            {"priority", {{"type", "integer"}, {"description", "Higher runs first (default 0)"}}},
            {"queue", Str("Queue name (default: default)", true)},
            {"requires",
             {{"type", "array"},
              {"items", {{"type", "string"}}},
              {"description", "Capabilities a worker must have to run it"}}},
            {"agent", Str("Agent profile to run it (default: the worker's)", true)}},
           {"title"});
     }},
};

const Tool* FindTool(std::string_view name) {
  for (const auto& t : kTools) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// Checks `arguments` against the tool's own schema (the few forms ours use): unknown properties,
// required ones, types, empty strings where one is refused.
Status CheckArguments(const Tool& tool, const json& arguments) {
  json schema = tool.schema();
  const json& properties = schema["properties"];
  for (const auto& [key, value] : arguments.items()) {
    auto p = properties.find(key);
    if (p == properties.end()) {
      return Error::InvalidArgument(std::string(tool.name) + ": unknown argument '" + key + "'");
    }
    const std::string type = (*p)["type"];
    bool ok = type == "string"    ? value.is_string()
              : type == "integer" ? value.is_number_integer()
              : type == "array"
                  ? value.is_array() && std::all_of(value.begin(), value.end(),
                                                    [](const json& e) { return e.is_string(); })
                  : false;
    if (!ok) {
      return Error::InvalidArgument(std::string(tool.name) + ": argument '" + key + "' must be " +
                                    (type == "array" ? "an array of strings" : "a " + type));
    }
    if (p->contains("minLength") && value.get<std::string>().empty()) {
      return Error::InvalidArgument(std::string(tool.name) + ": argument '" + key +
                                    "' must not be empty");
    }
  }
  for (const auto& name : schema.value("required", json::array())) {
    if (!arguments.contains(name.get<std::string>())) {
      return Error::InvalidArgument(std::string(tool.name) + ": argument '" +
                                    name.get<std::string>() + "' is required");
    }
  }
  return Ok();
}

// The first non-empty line of `text`, without a leading "tx: ".
std::string FirstLine(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) return line.rfind("tx: ", 0) == 0 ? line.substr(4) : line;
    pos = end + 1;
  }
  return "";
}

json TextResult(const std::string& text, bool is_error) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

// A tool's result from its command's run: the command's --json output (a task) as structured
// content with a line saying what happened, or its error in one line.
json ToolResult(std::string_view tool, const ToolRun& run) {
  json out = json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  if (run.exit_code != 0) {
    std::string why;
    if (out.is_object() && out.contains("error") && out["error"].is_object()) {
      why = out["error"].value("message", "");
    }
    if (why.empty()) why = FirstLine(run.err);
    if (why.empty()) why = "tx exited " + std::to_string(run.exit_code);
    return TextResult(why, true);
  }
  if (!out.is_object()) {
    std::string text = FirstLine(run.out);
    return TextResult(text.empty() ? "ok" : text, false);
  }
  std::string id = out.value("id", "");
  std::string status = out.value("status", "");
  std::string text;
  if (tool == "task_show") {
    text = out.dump(2, ' ', false, json::error_handler_t::replace);
  } else if (tool == "task_add") {
    text = "added " + id + " (" + status + ")";
    if (auto m = out.find("metadata"); m != out.end() && m->is_object() && m->contains("parent")) {
      text += ", a subtask of " + (*m)["parent"].get<std::string>();
    }
  } else if (tool == "task_note") {
    text = "noted on " + id;
  } else {
    text = id + " is " + status;
  }
  json result = TextResult(text, false);
  result["structuredContent"] = std::move(out);
  return result;
}

Result<ToolRun> RunWithCommand(const std::vector<std::string>& argv, long long timeout_ms) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult r, exec::RunCommand(argv, "", {}, 4u << 20, timeout_ms));
  if (r.timed_out) {
    return Error::Unavailable("'tx " + (argv.size() > 3 ? argv[2] + " " + argv[3] : "") +
                              "' did not finish within " + std::to_string(timeout_ms / 1000) +
                              " s");
  }
  return ToolRun{r.exit_code, std::move(r.out), std::move(r.err)};
}

// Whether `id` may identify a JSON-RPC request: a string or an integer (MCP: never null).
bool ValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

json McpTools() {
  json tools = json::array();
  for (const auto& t : kTools) {
    tools.push_back({{"name", t.name},
                     {"title", t.title},
                     {"description", t.description},
                     {"inputSchema", t.schema()}});
  }
  return tools;
}

Result<std::vector<std::string>> McpToolArgv(std::string_view name, const json& arguments,
                                             const std::string& task_id) {
  const Tool* tool = FindTool(name);
  if (tool == nullptr) return Error::NotFound("unknown tool '" + std::string(name) + "'");
  if (!arguments.is_object()) {
    return Error::InvalidArgument(std::string(name) + ": arguments must be an object");
  }
  TX_RETURN_IF_ERROR(CheckArguments(*tool, arguments));
  auto text = [&](const char* key) { return arguments.value(key, std::string()); };
  std::string task = name == "task_show" ? text("id") : "";
  if (task.empty()) task = task_id;
  // task_ask and task_add find the task (and token) in the environment themselves.
  if (task.empty() && name != "task_ask" && name != "task_add") {
    return Error::InvalidArgument(std::string(name) +
                                  ": no task to act for: TX_TASK_ID is not set (tx mcp serves "
                                  "the agent a worker runs)");
  }
  // Options as --name=value, and free text after "--", so that no value is read as an option.
  std::vector<std::string> argv = {"--json", "task"};
  auto option = [&](const char* flag, const char* key) {
    if (arguments.contains(key)) argv.push_back(std::string(flag) + "=" + text(key));
  };
  if (name == "task_show") {
    argv.insert(argv.end(), {"show", "--", task});
  } else if (name == "task_done" || name == "task_review") {
    argv.push_back(name == "task_done" ? "done" : "review");
    option("--result", "result");
    argv.insert(argv.end(), {"--", task});
  } else if (name == "task_fail") {
    argv.push_back("fail");
    option("--error", "error");
    argv.insert(argv.end(), {"--", task});
  } else if (name == "task_ask") {
    argv.insert(argv.end(), {"ask", "--", text("question")});
  } else if (name == "task_note") {
    argv.insert(argv.end(), {"note", "--task=" + task, "--", text("text")});
  } else if (name == "task_add") {
    argv.push_back("add");
    option("--description", "description");
    option("--instructions", "instructions");
    if (arguments.contains("priority")) {
      argv.push_back("--priority=" + std::to_string(arguments["priority"].get<std::int64_t>()));
    }
    option("--queue", "queue");
    for (const auto& cap : arguments.value("requires", json::array())) {
      argv.push_back("--requires=" + cap.get<std::string>());
    }
    option("--agent", "agent");
    argv.insert(argv.end(), {"--", text("title")});
  }
  return argv;
}

McpServer::McpServer(McpOptions options) : options_(std::move(options)) {
  if (!options_.run) {
    long long timeout = options_.tool_timeout_ms;
    options_.run = [timeout](const std::vector<std::string>& argv) {
      return RunWithCommand(argv, timeout);
    };
  }
}

json McpServer::Initialize(const json& params) {
  auto v = params.find("protocolVersion");
  if (v == params.end() || !v->is_string()) return nullptr;
  const std::string asked = *v;
  protocol_version_ = std::string(std::end(kMcpProtocolVersions)[-1]);
  for (std::string_view known : kMcpProtocolVersions) {
    if (asked == known) protocol_version_ = asked;
  }
  return {{"protocolVersion", protocol_version_},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "tx"}, {"title", "tx task tools"}, {"version", kServerVersion}}},
          {"instructions",
           "Tools for the task a tx worker gave you: report it done, failed or for review, ask a "
           "person, note progress, add subtasks. They act for your own task, with your claim's "
           "token."}};
}

json McpServer::CallTool(const json& params) {
  const std::string name = params["name"];
  json arguments = params.value("arguments", json::object());
  Result<std::vector<std::string>> args = McpToolArgv(name, arguments, options_.task_id);
  if (!args.ok()) {
    if (args.error().code() == ErrorCode::kNotFound) return nullptr;  // -32602: unknown tool
    return TextResult(args.error().message(), true);
  }
  std::vector<std::string> argv = {options_.tx_binary};
  argv.insert(argv.end(), args->begin(), args->end());
  Result<ToolRun> run = options_.run(argv);
  if (!run.ok()) {
    std::cerr << "tx mcp: " << name << ": " << run.error().message() << '\n';
    return TextResult(run.error().message(), true);
  }
  json result = ToolResult(name, *run);
  std::cerr << "tx mcp: " << name << ": exit " << run->exit_code << '\n';
  return result;
}

json McpServer::HandleMessage(const json& m) {
  if (!m.is_object()) return ErrorReply(nullptr, kInvalidRequest, "Invalid Request: not an object");
  auto id_it = m.find("id");
  const bool has_id = id_it != m.end();
  const json id = has_id && ValidId(*id_it) ? *id_it : json(nullptr);
  auto method_it = m.find("method");
  if (method_it == m.end() && has_id && (m.contains("result") || m.contains("error"))) {
    return nullptr;  // a response to a request of ours: we send none, so nothing to do
  }
  if (m.value("jsonrpc", json()) != "2.0") {
    return ErrorReply(id, kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"");
  }
  if (method_it == m.end() || !method_it->is_string()) {
    return ErrorReply(id, kInvalidRequest, "Invalid Request: method must be a string");
  }
  if (has_id && !ValidId(*id_it)) {
    return ErrorReply(nullptr, kInvalidRequest,
                      "Invalid Request: id must be a string or an integer");
  }
  const std::string method = *method_it;
  json params = m.value("params", json::object());
  if (!params.is_object()) {
    return has_id ? ErrorReply(id, kInvalidParams, "Invalid params: must be an object") : nullptr;
  }
  if (!has_id) return nullptr;  // notifications: initialized, cancelled, ... need no answer

  if (method == "initialize") {
    json result = Initialize(params);
    if (result.is_null()) {
      return ErrorReply(id, kInvalidParams, "Invalid params: protocolVersion must be a string");
    }
    return ResultReply(id, std::move(result));
  }
  if (method == "ping") return ResultReply(id, json::object());
  if (method == "tools/list") return ResultReply(id, {{"tools", McpTools()}});
  if (method == "tools/call") {
    auto name = params.find("name");
    if (name == params.end() || !name->is_string()) {
      return ErrorReply(id, kInvalidParams, "Invalid params: name must be a string");
    }
    if (params.contains("arguments") && !params["arguments"].is_object()) {
      return ErrorReply(id, kInvalidParams, "Invalid params: arguments must be an object");
    }
    json result = CallTool(params);
    if (result.is_null()) {
      return ErrorReply(id, kInvalidParams, "Unknown tool: " + name->get<std::string>());
    }
    return ResultReply(id, std::move(result));
  }
  return ErrorReply(id, kMethodNotFound, "Method not found: " + method);
}

std::optional<std::string> McpServer::Handle(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::nullopt;
  json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
  json reply;
  if (message.is_discarded()) {
    reply = ErrorReply(nullptr, kParseError, "Parse error: not valid JSON");
  } else if (message.is_array()) {
    if (message.empty()) {
      reply = ErrorReply(nullptr, kInvalidRequest, "Invalid Request: an empty batch");
    } else {
      reply = json::array();
      for (const auto& m : message) {
        json one = HandleMessage(m);
        if (!one.is_null()) reply.push_back(std::move(one));
      }
      if (reply.empty()) return std::nullopt;
    }
  } else {
    reply = HandleMessage(message);
  }
  if (reply.is_null()) return std::nullopt;
  // One line: dump() escapes every newline inside strings; invalid UTF-8 is replaced.
  return reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

void McpServer::Serve(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (std::optional<std::string> reply = Handle(line)) {
      out << *reply << '\n';
      out.flush();
    }
  }
}

}  // namespace tx::api
