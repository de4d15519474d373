#pragma once
// Usage limits in an agent's words: what Claude Code, the Codex CLI and Aider print when an
// account has hit its limit, and when it resets (docs/agents.md names the versions checked).
// Pure: no I/O.

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "agent/events.h"
#include "core/error.h"

namespace tx::agent {

// A limit recognised in one line of text (an assistant message, a result, plain output), with
// its reset when the text gives one:
//   Claude: "Claude AI usage limit reached|1767225600" (epoch seconds after the bar);
//           "5-hour limit reached ∙ resets 2pm", "You've hit your limit · resets 3:30pm
//           (Europe/Berlin)", "Claude usage limit reached. Your limit will reset at 7pm
//           (America/New_York)."
//   Codex:  "You've hit your usage limit. ... try again in 2 days 3 hours 4 minutes." or
//           "... try again at 3:04 PM." ; "Rate limit reached ... Please try again in 1.5s."
//   Aider (litellm): "litellm.RateLimitError: ..." (no reset given).
// nullopt when the line says nothing of a limit.
std::optional<AgentEvent> RecognizeLimit(std::string_view line);

// The reset named in a text, in any of the forms above: "|<epoch>", "resets 2pm (Zone)",
// "reset at 14:05", "try again in 2h 5m" / "in 3 days 4 hours", "try again at 3:04 PM",
// "retry after 30 seconds". An empty hint when there is none.
ResetHint FindReset(std::string_view text);

// A profile's own patterns ([agents.NAME] limit_patterns), compiled once.
class LimitPatterns {
 public:
  // invalid_argument naming the pattern that does not compile.
  static Result<LimitPatterns> Compile(const std::vector<std::string>& patterns);
  LimitPatterns() = default;
  // A limit when a pattern matches the line (lines over 4 KiB are not searched), with the reset
  // the line names (FindReset).
  std::optional<AgentEvent> Match(std::string_view line) const;
  bool empty() const { return regexes_.empty(); }

 private:
  std::vector<std::regex> regexes_;
};

}  // namespace tx::agent
