#include "agent/parser.h"

#include <algorithm>
#include <cctype>

#include "agent/limits.h"

namespace tx::agent {

std::unique_ptr<OutputParser> MakeClaudeParser();
std::unique_ptr<OutputParser> MakeCodexParser();
std::unique_ptr<OutputParser> MakeAiderParser();

namespace {

class GenericParser final : public OutputParser {
 public:
  void ParseLine(std::string_view, bool, std::vector<AgentEvent>&) override {}
  bool structured() const override { return false; }
};

bool ContainsNoCase(std::string_view text, std::string_view what) {
  auto it = std::search(text.begin(), text.end(), what.begin(), what.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

}  // namespace

std::unique_ptr<OutputParser> MakeParser(Family family) {
  switch (family) {
    case Family::kClaude:
      return MakeClaudeParser();
    case Family::kCodex:
      return MakeCodexParser();
    case Family::kAider:
      return MakeAiderParser();
    case Family::kGeneric:
      break;
  }
  return std::make_unique<GenericParser>();
}

void ClassifyPlainLine(std::string_view line, std::vector<AgentEvent>& out) {
  if (line.size() > 4096) return;
  if (std::optional<AgentEvent> limit = RecognizeLimit(line)) {
    out.push_back(std::move(*limit));
    return;
  }
  // What Claude Code, the Codex CLI and litellm (Aider) print when the account cannot log in.
  for (std::string_view sign :
       {"authentication_failed", "invalid api key", "please run /login", "not logged in",
        "authenticationerror", "incorrect api key", "invalid x-api-key", "401 unauthorized",
        "oauth token has expired", "not able to authenticate you"}) {
    if (ContainsNoCase(line, sign)) {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kAuth;
      e.text = std::string(line);
      out.push_back(std::move(e));
      return;
    }
  }
}

std::string OneLine(std::string_view text, std::size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max + 3));
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    if (out.size() >= max) {
      // Cut at a character boundary, not inside a UTF-8 sequence.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
        out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80) != 0) out.pop_back();
      return out + "…";
    }
    out += c;
  }
  return out;
}

}  // namespace tx::agent
