// Claude Code's `claude -p --output-format stream-json --verbose` output (docs/agents.md names the
// version checked): one JSON object a line —
//   {"type":"system","subtype":"init","session_id","model","permissionMode",...}
//   {"type":"assistant","message":{"id","model","content":[{"type":"text","text"} |
//     {"type":"tool_use","id","name","input"} | {"type":"thinking",...}],"usage":{...}},
//     "error"?: "rate_limit" | "authentication_failed" | ..., "session_id"}
//     (one line per content block: the same message id, and usage, may come several times)
//   {"type":"user","message":{"content":[{"type":"tool_result","tool_use_id","content",
//     "is_error"}]}}
//   {"type":"rate_limit_event","rate_limit_info":{"status":"allowed"|"allowed_warning"|
//     "rejected","resetsAt":<epoch s>,"rateLimitType",...}}
//   {"type":"result","subtype","is_error","result","session_id","num_turns","total_cost_usd",
//    "usage":{...},"modelUsage":{MODEL:{...}},"permission_denials":[{"tool_name","tool_use_id",
//    "tool_input"}],"api_error_status"?}
// and, interleaved, whatever it writes to stderr as plain text.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/limits.h"
#include "agent/parser.h"
#include "core/validation.h"

namespace tx::agent {

namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A count the agent gives, bounded (core/usage.h): a float or a huge number is no count.
std::int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? BoundTokens(it->get<std::int64_t>()) : 0;
}

TokenCounts Tokens(const json& usage) {
  TokenCounts t;
  if (!usage.is_object()) return t;
  t.input = Int(usage, "input_tokens");
  t.output = Int(usage, "output_tokens");
  t.cache_read = Int(usage, "cache_read_input_tokens");
  t.cache_write = Int(usage, "cache_creation_input_tokens");
  return t;
}

// What a tool call acts on, for one line: Bash's command, a file tool's path, a search's
// pattern, a fetch's URL; else the input as JSON.
std::string CallInput(const json& input) {
  if (!input.is_object()) return "";
  for (const char* key : {"command", "file_path", "notebook_path", "path", "pattern", "url",
                          "query", "description", "prompt"}) {
    std::string v = Str(input, key);
    if (!v.empty()) return OneLine(v);
  }
  return OneLine(input.dump(-1, ' ', false, json::error_handler_t::replace));
}

// A tool result's content: a string, or [{"type":"text","text"},...].
std::string ResultText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && Str(part, "type") == "text") out += Str(part, "text") + "\n";
    }
  }
  return out;
}

std::string Summary(const std::string& text) {
  std::size_t lines = text.empty() ? 0 : 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  if (!text.empty() && text.back() == '\n') --lines;
  std::string first = OneLine(text.substr(0, text.find('\n')), 120);
  if (lines <= 1) return first;
  return first + " (" + std::to_string(lines) + " lines)";
}

// Lines past this are candidates for QuickResult.
constexpr std::size_t kBigLine = 4096;

// The string value that starts at `at` (just past its opening quote): its first line, unescaped
// enough to read (\" \\ \t; a \uXXXX as '?'), at most `max` bytes; and how many
// lines it has. False when it does not end (a cut line).
bool ScanString(std::string_view s, std::size_t at, std::size_t max, std::string& first,
                std::size_t& lines) {
  lines = 1;
  bool in_first = true;
  std::size_t i = at;
  std::size_t newline_end = std::string_view::npos;  // just past the last \n escape
  while (i < s.size()) {
    // Jump to the next quote or backslash: the rest is copied (or skipped) in bulk. (A loop, not
    // find_first_of, which calls memchr on the set for every byte.)
    std::size_t next = i;
    while (next < s.size() && s[next] != '"' && s[next] != '\\') ++next;
    if (next == s.size()) return false;
    if (in_first && first.size() < max)
      first.append(s.substr(i, std::min(next - i, max - first.size())));
    if (s[next] == '"') {
      if (newline_end == next) --lines;  // a last newline ends a line rather than starting one
      return true;
    }
    if (next + 1 >= s.size()) return false;
    char e = s[next + 1];
    i = next + 2;
    if (e == 'n') {
      ++lines;
      in_first = false;
      newline_end = i;
    } else if (in_first && first.size() < max) {
      first += e == 't' ? '\t' : e == 'u' ? '?' : e;
      if (e == 'u') i = std::min(s.size(), i + 4);
    }
  }
  return false;
}

class ClaudeParser final : public OutputParser {
 public:
  bool structured() const override { return true; }

  void ParseLine(std::string_view line, bool truncated, std::vector<AgentEvent>& out) override {
    if (line.empty()) return;
    if (line.front() != '{') {
      Plain(line, out);
      return;
    }
    if (truncated) {
      // The head of a huge line: a tool's result (a whole file) or a message carrying one.
      if (line.starts_with("{\"type\":\"user\"")) {
        AgentEvent e;
        e.kind = AgentEvent::Kind::kToolResult;
        e.text = "(a result of more than 1 MiB)";
        out.push_back(std::move(e));
      }
      return;
    }
    // Partial-message events (--include-partial-messages) repeat what the whole message says.
    if (line.starts_with("{\"type\":\"stream_event\"")) return;
    // A tool's result is most of an agent's output (a file, a test run) and is shown as one
    // line: a big one is summed up without parsing it whole (the worker must follow a stream of
    // megabytes a second cheaply).
    if (line.size() > kBigLine && line.starts_with("{\"type\":\"user\"") &&
        QuickResult(line, out)) {
      return;
    }
    // Nested past kMaxJsonDepth, a line would overflow the stack of whatever copies it.
    json j = NestsDeeperThan(line) ? json() : json::parse(line, nullptr, false);
    if (!j.is_object()) {
      Plain(line, out);
      return;
    }
    std::string type = Str(j, "type");
    if (type == "system") {
      System(j, out);
    } else if (type == "assistant") {
      Assistant(j, out);
    } else if (type == "user") {
      User(j, out);
    } else if (type == "rate_limit_event") {
      RateLimit(j, out);
    } else if (type == "result") {
      Result(j, out);
    }
    // Other types (stream_event, tool_progress, auth_status, ...): nothing to show.
  }

 private:
  std::vector<std::string> denied_;  // tool_use ids of the denials said as they happened

  void Plain(std::string_view line, std::vector<AgentEvent>& out) {
    AgentEvent e;
    e.kind = AgentEvent::Kind::kText;
    e.text = std::string(line);
    out.push_back(std::move(e));
    ClassifyPlainLine(line, out);
  }

  // A user line of tool results whose content is a string: its result event from a scan of the
  // text, not a parse. False (nothing said) when the line is not of that simple shape.
  bool QuickResult(std::string_view line, std::vector<AgentEvent>& out) {
    constexpr std::string_view kContent = "\"type\":\"tool_result\"";
    std::size_t at = line.find(kContent);
    if (at == std::string_view::npos || line.find(kContent, at + 1) != std::string_view::npos) {
      return false;  // none, or several results in one message: the parse says them all
    }
    std::size_t content = line.find("\"content\":\"", at);
    std::size_t id = line.find("\"tool_use_id\":\"");
    if (content == std::string_view::npos) return false;
    AgentEvent e;
    e.kind = AgentEvent::Kind::kToolResult;
    if (id != std::string_view::npos) {
      std::size_t start = id + 15, end = line.find('"', start);
      if (end != std::string_view::npos && end - start < 128)
        e.id = std::string(line.substr(start, end - start));
    }
    std::string first;
    std::size_t lines = 0;
    if (!ScanString(line, content + 11, 120, first, lines)) return false;
    // Inside a string a quote is escaped, so this matches the field alone.
    e.is_error = line.find("\"is_error\":true") != std::string_view::npos;
    e.text = OneLine(first, 120) + (lines > 1 ? " (" + std::to_string(lines) + " lines)" : "");
    out.push_back(std::move(e));
    return true;
  }

  void System(const json& j, std::vector<AgentEvent>& out) {
    std::string subtype = Str(j, "subtype");
    if (subtype == "init") {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kSession;
      e.text = Str(j, "session_id");
      e.model = Str(j, "model");
      out.push_back(std::move(e));
    } else if (subtype == "permission_denied") {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kDenial;
      e.tool = Str(j, "tool_name");
      e.id = Str(j, "tool_use_id");
      e.text = OneLine(Str(j, "message"));
      denied_.push_back(e.id);
      out.push_back(std::move(e));
    } else if (subtype == "api_retry") {
      // The CLI retries a failed API call up to max_retries times, for minutes: a refused login
      // will not get better, so it is said at once; other errors (a 429 it waits out, a 5xx)
      // are only shown.
      std::string error = Str(j, "error");
      std::int64_t status = Int(j, "error_status");
      AgentEvent e;
      e.text = "API error " + std::to_string(status) + (error.empty() ? "" : " (" + error + ")") +
               ", retry " + std::to_string(Int(j, "attempt")) + " of " +
               std::to_string(Int(j, "max_retries"));
      e.kind = error == "authentication_failed" || status == 401 ? AgentEvent::Kind::kAuth
                                                                 : AgentEvent::Kind::kError;
      out.push_back(std::move(e));
    }
  }

  void Assistant(const json& j, std::vector<AgentEvent>& out) {
    auto m = j.find("message");
    if (m == j.end() || !m->is_object()) return;
    std::string model = Str(*m, "model");
    // An error turned into a message by the CLI ("<synthetic>", "error": "rate_limit", ...):
    // its text is the CLI's words for what went wrong.
    std::string error = Str(j, "error");
    bool synthetic = model == "<synthetic>" || !error.empty();
    auto content = m->find("content");
    if (content != m->end() && content->is_array()) {
      for (const auto& block : *content) {
        if (!block.is_object()) continue;
        std::string kind = Str(block, "type");
        if (kind == "text") {
          std::string text = Str(block, "text");
          AgentEvent e;
          e.kind = AgentEvent::Kind::kText;
          e.text = text;
          out.push_back(std::move(e));
          if (synthetic) SyntheticError(error, text, out);
        } else if (kind == "tool_use") {
          AgentEvent e;
          e.kind = AgentEvent::Kind::kToolCall;
          e.tool = Str(block, "name");
          e.id = Str(block, "id");
          auto input = block.find("input");
          if (input != block.end()) e.text = CallInput(*input);
          out.push_back(std::move(e));
        }
      }
    }
    auto usage = m->find("usage");
    if (!synthetic && usage != m->end() && usage->is_object()) {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kUsage;
      e.id = Str(*m, "id");
      e.model = model;
      e.tokens = Tokens(*usage);
      e.turns = 1;
      out.push_back(std::move(e));
    }
  }

  // A message the CLI wrote for an API error: a usage or rate limit, a refused login, or another
  // error, by its `error` field, else by its words.
  void SyntheticError(const std::string& error, const std::string& text,
                      std::vector<AgentEvent>& out) {
    std::size_t before = out.size();
    if (error == "rate_limit") {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kLimit;
      e.text = text;
      e.reset = FindReset(text);
      out.push_back(std::move(e));
      return;
    }
    if (error == "authentication_failed" || error == "oauth_org_not_allowed") {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kAuth;
      e.text = text;
      out.push_back(std::move(e));
      return;
    }
    ClassifyPlainLine(text, out);
    if (out.size() == before && !error.empty()) {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kError;
      e.text = error + ": " + text;
      out.push_back(std::move(e));
    }
  }

  void User(const json& j, std::vector<AgentEvent>& out) {
    auto m = j.find("message");
    if (m == j.end() || !m->is_object()) return;
    auto content = m->find("content");
    if (content == m->end() || !content->is_array()) return;
    for (const auto& block : *content) {
      if (!block.is_object() || Str(block, "type") != "tool_result") continue;
      AgentEvent e;
      e.kind = AgentEvent::Kind::kToolResult;
      e.id = Str(block, "tool_use_id");
      auto is_error = block.find("is_error");
      e.is_error = is_error != block.end() && is_error->is_boolean() && is_error->get<bool>();
      auto c = block.find("content");
      e.text = Summary(c != block.end() ? ResultText(*c) : "");
      if (e.text.empty()) e.text = e.is_error ? "failed" : "ok";
      out.push_back(std::move(e));
    }
  }

  void RateLimit(const json& j, std::vector<AgentEvent>& out) {
    auto info = j.find("rate_limit_info");
    if (info == j.end() || !info->is_object()) return;
    if (Str(*info, "status") != "rejected") return;  // allowed, allowed_warning: still running
    AgentEvent e;
    e.kind = AgentEvent::Kind::kLimit;
    std::string kind = Str(*info, "rateLimitType");
    e.text = "rate limit rejected" + (kind.empty() ? "" : " (" + kind + ")");
    std::int64_t resets = Int(*info, "resetsAt");
    if (resets > 0) e.reset.at = resets < 100'000'000'000 ? resets * 1000 : resets;
    out.push_back(std::move(e));
  }

  void Result(const json& j, std::vector<AgentEvent>& out) {
    auto denials = j.find("permission_denials");
    if (denials != j.end() && denials->is_array()) {
      for (const auto& d : *denials) {
        if (!d.is_object()) continue;
        // Each denial was said as it happened (system permission_denied), in this version.
        std::string id = Str(d, "tool_use_id");
        if (!id.empty() && std::find(denied_.begin(), denied_.end(), id) != denied_.end()) {
          // Its input is known only here: the follower adds it to the one recorded.
          AgentEvent e;
          e.kind = AgentEvent::Kind::kDenial;
          e.tool = Str(d, "tool_name");
          e.id = id;
          auto input = d.find("tool_input");
          if (input != d.end()) e.text = CallInput(*input);
          e.is_error = true;  // a repeat: the follower updates the one it has
          out.push_back(std::move(e));
          continue;
        }
        AgentEvent e;
        e.kind = AgentEvent::Kind::kDenial;
        e.tool = Str(d, "tool_name");
        e.id = Str(d, "tool_use_id");
        auto input = d.find("tool_input");
        if (input != d.end()) e.text = CallInput(*input);
        out.push_back(std::move(e));
      }
    }
    AgentEvent e;
    e.kind = AgentEvent::Kind::kResult;
    auto is_error = j.find("is_error");
    e.is_error = is_error != j.end() && is_error->is_boolean() && is_error->get<bool>();
    e.text = Str(j, "result");
    auto errors = j.find("errors");
    if (e.text.empty() && errors != j.end() && errors->is_array()) {
      for (const auto& err : *errors) {
        if (err.is_string()) e.text += (e.text.empty() ? "" : "; ") + err.get<std::string>();
      }
    }
    if (e.text.empty() && e.is_error) e.text = Str(j, "subtype");
    // total_cost_usd adds up the whole session, earlier (resumed) runs included; this run's own
    // cost is in model_usage_since_last_result when the CLI gives it.
    auto cost = j.find("total_cost_usd");
    if (cost != j.end() && cost->is_number()) e.cost_usd = BoundCost(cost->get<double>());
    auto since = j.find("model_usage_since_last_result");
    if (since != j.end() && since->is_object() && !since->empty()) {
      double run = 0;
      bool all = true;
      for (const auto& [model, u] : since->items()) {
        auto c = u.is_object() ? u.find("costUSD") : u.end();
        if (!u.is_object() || c == u.end() || !c->is_number()) {
          all = false;
          break;
        }
        run += c->get<double>();
      }
      if (all) e.cost_usd = BoundCost(run);
    }
    e.turns = static_cast<int>(std::min<std::int64_t>(Int(j, "num_turns"), 1'000'000));
    auto usage = j.find("usage");
    if (usage != j.end()) e.tokens = Tokens(*usage);
    for (const char* key : {"modelUsage", "model_usage_since_last_result"}) {
      auto models = j.find(key);
      if (models != j.end() && models->is_object() && models->size() == 1) {
        e.model = models->begin().key();
      }
    }
    std::string session = Str(j, "session_id");
    if (!session.empty()) {
      AgentEvent s;
      s.kind = AgentEvent::Kind::kSession;
      s.text = session;
      out.push_back(std::move(s));
    }
    std::int64_t status = Int(j, "api_error_status");
    std::string text = e.text;
    bool failed = e.is_error;
    out.push_back(std::move(e));
    if (!failed) return;
    std::size_t before = out.size();
    ClassifyPlainLine(text, out);
    if (out.size() > before) return;
    if (status == 429) {
      AgentEvent l;
      l.kind = AgentEvent::Kind::kLimit;
      l.text = text;
      l.reset = FindReset(text);
      out.push_back(std::move(l));
    } else if (status == 401 || status == 403) {
      AgentEvent a;
      a.kind = AgentEvent::Kind::kAuth;
      a.text = text;
      out.push_back(std::move(a));
    }
  }
};

}  // namespace

std::unique_ptr<OutputParser> MakeClaudeParser() { return std::make_unique<ClaudeParser>(); }

}  // namespace tx::agent
