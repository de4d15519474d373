#pragma once
// What an agent's output says, as events: the vocabulary every adapter's parser speaks
// (docs/agents.md). Pure data.

#include <optional>
#include <string>

#include "core/clock.h"
#include "core/usage.h"

namespace tx::agent {

// A usage limit's reset as the agent gave it, not yet a point in time: an epoch, a delay, or a
// wall-clock time of day in some time zone (the worker resolves the last against the zone's
// rules, worker/reset_time.h). None set: the agent named no reset.
struct ResetHint {
  Millis at = 0;        // epoch milliseconds
  Millis after_ms = 0;  // from the moment it was seen
  int hour = -1;        // 0..23, with minute: the next such time of day ...
  int minute = 0;
  int year = 0;  // ... or, when a date is given, that day's (month 1..12, day 1..31)
  int month = 0;
  int day = 0;
  std::string zone;  // ... in this IANA zone ("" = the machine's local time)
  bool given() const { return at > 0 || after_ms > 0 || hour >= 0; }
  bool operator==(const ResetHint&) const = default;
};

struct AgentEvent {
  enum class Kind {
    kText,        // the agent's words: text
    kToolCall,    // a tool it calls: tool, text = the call's input on one line, id
    kToolResult,  // what a tool gave back: text = a summary, is_error, id
    kSession,     // its session: text = the session id, model
    kUsage,       // one model call's tokens: id (a message id: the same call may be reported
                  // more than once), model, tokens
    kResult,      // the run's end as the agent reports it: text, is_error, tokens (the run's
                  // total when given), cost_usd, turns, model
    kLimit,       // a usage or rate limit: text, reset
    kDenial,      // a tool call its permissions refused: tool, text = the input or the reason,
                  // id; is_error marks a repeat of one already said (which may add its input)
    kAuth,        // not logged in, or its credentials refused: text
    kError,       // another error it reported: text
  };
  Kind kind = Kind::kText;
  std::string text;
  std::string tool;
  std::string id;
  std::string model;
  TokenCounts tokens;
  std::optional<double> cost_usd;
  int turns = 0;
  bool is_error = false;
  ResetHint reset;
};

}  // namespace tx::agent
