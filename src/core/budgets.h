#pragma once
// The daily budgets ([budgets] in config.toml, docs/agents.md) and where the day's spending
// stands against them, with their wire forms (GET /api/usage, the remote workers' agent state,
// tx orchestrator status). Pure: no I/O.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

// Daily budgets ([budgets] in config.toml): once the day's (UTC) agent costs reach one, no agent
// attempt starts until the next day or a higher budget. 0 = none.
struct Budgets {
  double daily_usd = 0;
  std::map<std::string, double> queue_daily_usd;  // [budgets.queues.NAME] daily_usd
  bool any() const { return daily_usd > 0 || !queue_daily_usd.empty(); }
};

// Where the day's spending stands against the budgets.
struct BudgetState {
  std::string day;  // YYYY-MM-DD, UTC
  double spent_usd = 0;
  bool reached = false;                       // the fleet's daily budget
  std::vector<std::string> reached_queues;    // queues whose own budget is reached
  std::map<std::string, double> queue_spent;  // for the queues with a budget
  Millis next_day_at = 0;                     // when the day (and the budgets) start afresh
};

nlohmann::json ToJson(const Budgets& b);
Result<Budgets> BudgetsFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const BudgetState& b);
Result<BudgetState> BudgetStateFromJson(const nlohmann::json& j);

// The UTC day of a time, YYYY-MM-DD, and the start of the next one.
std::string UtcDay(Millis t);
Millis NextUtcDay(Millis t);

}  // namespace tx
