// Aider's plain-text output (docs/agents.md names the version checked): after each model call,
// "Tokens: 12k sent, 1.2k cache write, 3.4k cache hit, 245 received. Cost: $0.01 message, $0.05
// session." (token counts as format_tokens writes them: 245, 2.3k, 12k); at start, "Model: NAME
// with ... edit format" (or "Main model: ..."); litellm's errors when the provider refuses.

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "agent/parser.h"

namespace tx::agent {

namespace {

// "2.3k" → 2300, "245" → 245, "1.2M" → 1200000; -1 when `s` does not start with a count.
std::int64_t ParseCount(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return -1;
  double v = std::strtod(std::string(s.substr(0, i)).c_str(), nullptr);
  if (i < s.size() && (s[i] == 'k' || s[i] == 'K')) v *= 1e3;
  if (i < s.size() && (s[i] == 'm' || s[i] == 'M')) v *= 1e6;
  if (!(v < static_cast<double>(kMaxTokens))) return kMaxTokens;
  return static_cast<std::int64_t>(std::llround(v));
}

// The count just before `label` (" sent", " cache write", ...) within `line`, or 0.
std::int64_t CountBefore(std::string_view line, std::string_view label) {
  std::size_t at = line.find(label);
  if (at == std::string_view::npos) return 0;
  std::size_t start = at;
  while (start > 0 && line[start - 1] != ' ' && line[start - 1] != ',') --start;
  return BoundTokens(ParseCount(line.substr(start, at - start)));
}

// The dollar amount just before `label` (" session"), or -1.
double DollarsBefore(std::string_view line, std::string_view label) {
  std::size_t at = line.find(label);
  if (at == std::string_view::npos) return -1;
  std::size_t dollar = line.rfind('$', at);
  if (dollar == std::string_view::npos) return -1;
  return std::strtod(std::string(line.substr(dollar + 1, at - dollar - 1)).c_str(), nullptr);
}

class AiderParser final : public OutputParser {
 public:
  bool structured() const override { return false; }

  void ParseLine(std::string_view line, bool, std::vector<AgentEvent>& out) override {
    if (line.starts_with("Tokens: ")) {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kUsage;
      e.id = "message-" + std::to_string(++messages_);
      std::int64_t sent = CountBefore(line, " sent");
      e.tokens.cache_write = CountBefore(line, " cache write");
      e.tokens.cache_read = CountBefore(line, " cache hit");
      // Aider's "sent" counts the whole prompt, cached parts included.
      e.tokens.input = std::max<std::int64_t>(0, sent - e.tokens.cache_write - e.tokens.cache_read);
      e.tokens.output = CountBefore(line, " received");
      e.turns = 1;
      double session = DollarsBefore(line, " session");
      if (session >= 0) e.cost_usd = BoundCost(session);
      out.push_back(std::move(e));
      return;
    }
    for (std::string_view prefix : {"Model: ", "Main model: "}) {
      if (!line.starts_with(prefix)) continue;
      std::string_view rest = line.substr(prefix.size());
      AgentEvent e;
      e.kind = AgentEvent::Kind::kSession;
      e.model = std::string(rest.substr(0, rest.find(' ')));
      out.push_back(std::move(e));
      return;
    }
    // The model's own words (its reply, its edits) come through here too: only Aider's and
    // litellm's own error lines are read for a limit or a refused login, so that a task about
    // "rate limit exceeded" cannot stop itself.
    if (line.starts_with("litellm.") || line.starts_with("The API provider ")) {
      ClassifyPlainLine(line, out);
    }
  }

 private:
  int messages_ = 0;
};

}  // namespace

std::unique_ptr<OutputParser> MakeAiderParser() { return std::make_unique<AiderParser>(); }

}  // namespace tx::agent
