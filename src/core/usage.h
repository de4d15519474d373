#pragma once
// The usage ledger and the agent limits (docs/agents.md): what each attempt of an agent cost, as
// the agent reported it (or as estimated from its token counts), and which agent profiles (or
// accounts of one) are limited until a reset time, fleet-wide.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace tx {

// Token counts by kind, as the agents report them.
// Bounds on what an agent (or a remote worker) may say it used: past them a figure is a misreading
// or a lie, and summing it would overflow.
inline constexpr std::int64_t kMaxTokens = 1'000'000'000'000;
inline constexpr double kMaxCostUsd = 1'000'000;
inline std::int64_t BoundTokens(std::int64_t n) {
  return n < 0 ? 0 : n > kMaxTokens ? kMaxTokens : n;
}
inline double BoundCost(double usd) {
  return !(usd > 0) ? 0 : usd > kMaxCostUsd ? kMaxCostUsd : usd;  // NaN too is 0
}

struct TokenCounts {
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::int64_t cache_read = 0;
  std::int64_t cache_write = 0;

  // Saturating: a sum never wraps.
  TokenCounts& operator+=(const TokenCounts& o) {
    for (auto [a, b] :
         {std::pair{&input, o.input}, std::pair{&output, o.output},
          std::pair{&cache_read, o.cache_read}, std::pair{&cache_write, o.cache_write}}) {
      if (__builtin_add_overflow(*a, b, a)) *a = b < 0 ? INT64_MIN : INT64_MAX;
    }
    return *this;
  }
  bool empty() const { return input == 0 && output == 0 && cache_read == 0 && cache_write == 0; }
  bool operator==(const TokenCounts&) const = default;
};

// One attempt's row of the ledger, keyed by its claim's token. Written by the attempt's worker
// while the agent runs and when it ends; the last write wins.
struct AttemptUsage {
  std::int64_t token = 0;
  std::string task_id;
  int attempt = 0;
  std::string worker_id;
  std::string agent;    // the profile
  std::string account;  // "" when the profile has no accounts
  std::string queue;
  std::string session_id;
  std::string model;
  TokenCounts tokens;
  double cost_usd = 0;
  bool cost_estimated = false;  // from [prices] and the token counts, not the agent's own figure
  int turns = 0;
  // Tool calls the agent's permissions refused: [{"tool": "Bash", "input": "rm -rf /"}].
  nlohmann::json denials = nlohmann::json::array();
  Millis started_at = 0;
  Millis updated_at = 0;  // the day a cost counts in (a daily budget) is this one's

  bool operator==(const AttemptUsage&) const = default;
};

// A profile (or one account of it) that reported a usage limit: no worker starts its agent until
// `until`. Rows stay after the reset (`resumed` once agent.resumed is recorded): their `strikes`
// count limits in a row, the exponent of the backoff when a limit names no reset time.
struct AgentLimit {
  std::string profile;
  std::string account;  // "" when the profile has no accounts
  Millis until = 0;
  Millis since = 0;
  std::string reason;   // the agent's words
  std::string task_id;  // whose attempt met it
  int strikes = 0;
  bool resumed = false;

  bool operator==(const AgentLimit&) const = default;
};

inline bool IsActive(const AgentLimit& l, Millis now) { return now < l.until; }

nlohmann::json ToJson(const AttemptUsage& u);
nlohmann::json ToJson(const TokenCounts& t);
nlohmann::json ToJson(const AgentLimit& l);

// The sum of several attempts' usage (a task's total, a group of tx usage): tokens, cost, turns;
// the model and session of the last one given.
struct UsageTotal {
  TokenCounts tokens;
  double cost_usd = 0;
  int turns = 0;
  int attempts = 0;
  bool estimated = false;  // any part of the cost is an estimate

  void Add(const AttemptUsage& u);
};
nlohmann::json ToJson(const UsageTotal& t);

}  // namespace tx
