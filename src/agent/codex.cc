// The Codex CLI's `codex exec --json` output (docs/agents.md names the version checked): one JSON
// object a line — thread.started {thread_id}, turn.started, item.started / item.completed {item:
// {id, type: agent_message | reasoning | command_execution | file_change | mcp_tool_call |
// web_search | todo_list | error, ...}}, turn.completed {usage: {input_tokens,
// cached_input_tokens, output_tokens, ...}}, turn.failed {error: {message}}, error {message}.

#include <nlohmann/json.hpp>
#include <set>

#include "agent/parser.h"
#include "core/validation.h"

namespace tx::agent {

namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? BoundTokens(it->get<std::int64_t>()) : 0;
}

class CodexParser final : public OutputParser {
 public:
  bool structured() const override { return true; }

  void ParseLine(std::string_view line, bool truncated, std::vector<AgentEvent>& out) override {
    if (line.empty()) return;
    if (line.front() != '{') {
      Plain(line, out);
      return;
    }
    if (truncated) return;  // the head of a huge item (a command's whole output): nothing to show
    // Nested past kMaxJsonDepth, a line would overflow the stack of whatever copies it.
    json j = NestsDeeperThan(line) ? json() : json::parse(line, nullptr, false);
    if (!j.is_object()) {
      Plain(line, out);
      return;
    }
    std::string type = Str(j, "type");
    if (type == "thread.started") {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kSession;
      e.text = Str(j, "thread_id");
      if (!e.text.empty()) out.push_back(std::move(e));
    } else if (type == "item.started" || type == "item.completed") {
      auto item = j.find("item");
      if (item != j.end() && item->is_object()) Item(*item, type == "item.completed", out);
    } else if (type == "turn.completed") {
      auto usage = j.find("usage");
      if (usage == j.end() || !usage->is_object()) return;
      AgentEvent e;
      e.kind = AgentEvent::Kind::kUsage;
      e.id = "turn-" + std::to_string(++turns_);
      std::int64_t cached = Int(*usage, "cached_input_tokens");
      // OpenAI counts cached input inside input_tokens; the ledger keeps them apart, as Claude's.
      e.tokens.input = std::max<std::int64_t>(0, Int(*usage, "input_tokens") - cached);
      e.tokens.cache_read = cached;
      e.tokens.cache_write = Int(*usage, "cache_write_input_tokens");
      e.tokens.output = Int(*usage, "output_tokens");
      e.turns = 1;
      out.push_back(std::move(e));
    } else if (type == "turn.failed") {
      auto err = j.find("error");
      std::string message = err != j.end() && err->is_object() ? Str(*err, "message") : "";
      if (message.empty() || message == last_error_) return;  // already said by its error line
      Error(message, out);
    } else if (type == "error") {
      std::string message = Str(j, "message");
      if (message.empty()) return;
      last_error_ = message;
      Error(message, out);
    }
    // turn.started and types this version does not know: nothing to show.
  }

 private:
  void Plain(std::string_view line, std::vector<AgentEvent>& out) {
    // What Codex says on stderr of its own set-up, every run: nothing for a person to read.
    if (line.starts_with("Reading additional input from stdin") ||
        line.starts_with("WARNING: proceeding, even though we could not create PATH aliases")) {
      return;
    }
    AgentEvent e;
    e.kind = AgentEvent::Kind::kText;
    e.text = std::string(line);
    out.push_back(std::move(e));
    ClassifyPlainLine(line, out);
  }

  void Error(const std::string& message, std::vector<AgentEvent>& out) {
    std::size_t before = out.size();
    ClassifyPlainLine(message, out);
    if (out.size() > before) return;
    AgentEvent e;
    e.kind = AgentEvent::Kind::kError;
    e.text = message;
    out.push_back(std::move(e));
  }

  void Item(const json& item, bool completed, std::vector<AgentEvent>& out) {
    std::string type = Str(item, "type");
    std::string id = Str(item, "id");
    if (type == "agent_message") {
      if (!completed) return;
      AgentEvent e;
      e.kind = AgentEvent::Kind::kText;
      e.text = Str(item, "text");
      out.push_back(std::move(e));
      return;
    }
    if (type == "error") {
      if (completed) Error(Str(item, "message"), out);
      return;
    }
    std::string tool, input;
    if (type == "command_execution") {
      tool = "shell";
      input = Str(item, "command");
    } else if (type == "file_change") {
      tool = "edit";
      auto changes = item.find("changes");
      if (changes != item.end() && changes->is_array()) {
        for (const auto& c : *changes) {
          if (!c.is_object()) continue;
          if (!input.empty()) input += ", ";
          input += Str(c, "kind") + " " + Str(c, "path");
        }
      }
    } else if (type == "mcp_tool_call") {
      tool = Str(item, "server") + "." + Str(item, "tool");
    } else if (type == "web_search") {
      tool = "web_search";
      input = Str(item, "query");
    } else {
      return;  // reasoning, todo_list, and types this version does not know
    }
    // A call is shown once, when it starts (or, never seen starting, when it completes).
    bool shown = !id.empty() && started_.count(id) > 0;
    if (!shown) {
      AgentEvent call;
      call.kind = AgentEvent::Kind::kToolCall;
      call.tool = tool;
      call.id = id;
      call.text = OneLine(input);
      out.push_back(std::move(call));
    }
    if (!completed) {
      if (!id.empty()) started_.insert(id);
      return;
    }
    started_.erase(id);
    AgentEvent result;
    result.kind = AgentEvent::Kind::kToolResult;
    result.id = id;
    std::string status = Str(item, "status");
    result.is_error = status == "failed" || status == "declined";
    if (type == "command_execution") {
      auto code = item.find("exit_code");
      std::string output = Str(item, "aggregated_output");
      result.text = (code != item.end() && code->is_number_integer()
                         ? "exit " + std::to_string(code->get<int>())
                         : status) +
                    (output.empty() ? "" : ": " + OneLine(output, 120));
    } else {
      result.text = status;
    }
    out.push_back(std::move(result));
  }

  int turns_ = 0;
  std::string last_error_;
  std::set<std::string> started_;  // ids of calls shown at item.started, not yet completed
};

}  // namespace

std::unique_ptr<OutputParser> MakeCodexParser() { return std::make_unique<CodexParser>(); }

}  // namespace tx::agent
