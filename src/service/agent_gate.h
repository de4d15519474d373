#pragma once
// Which agent tasks a worker may start now (docs/agents.md): the rule that turns the fleet's
// limits, the budgets and the programs missing on this machine into a pick's gate
// (store::PickCriteria::blocked_agents). Pure.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/usage.h"

namespace tx::service {

struct GateInputs {
  Millis now = 0;
  std::vector<AgentLimit> limits;  // the store's
  // Each profile the worker can run by name, with its accounts' names (empty: one unnamed
  // account, whose limit row has account "").
  std::map<std::string, std::vector<std::string>> profiles;
  std::string default_profile;        // what a task naming no agent runs
  std::set<std::string> unavailable;  // profiles whose program is missing here, or not logged in
  bool daily_budget_reached = false;  // [budgets] daily_usd: no agent starts anywhere
  std::vector<std::string> budget_queues;  // queues whose own daily budget is reached
};

struct Gate {
  std::vector<std::string> blocked_agents;  // as PickCriteria::blocked_agents
  std::vector<std::string> blocked_agent_queues;
  // When a limit that blocks something ends (0 = none): a worker looks again then.
  Millis next_change = 0;
  bool operator==(const Gate&) const = default;
};

Gate ComputeGate(const GateInputs& in);

// The first account of `accounts` (in order) that no active limit holds, "" for a profile with no
// accounts that is not limited; nullopt when every one is limited.
std::optional<std::string> FreeAccount(const std::string& profile,
                                       const std::vector<std::string>& accounts,
                                       const std::vector<AgentLimit>& limits, Millis now);

// When a limit that named no reset ends: 5 minutes, doubling with each limit in a row (strikes,
// 1-based), at most an hour.
Millis LimitBackoff(int strikes);

// The longest a limit lasts, whatever reset a report names: a week and a day (Claude's weekly
// limits reset within a week; anything later is a misreading, or a hostile report).
inline constexpr Millis kMaxLimitMs = 8 * 24 * 3'600'000LL;

}  // namespace tx::service
