#pragma once
// AgentService: what tx knows of the agents it runs (docs/agents.md) — the usage ledger, the
// limits that pause a profile fleet-wide, the budgets, and the ends of an attempt that are not
// the task's fault (a limit, a program missing, a refused login). Every method is one store
// transaction, over Store& and Clock&.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/budgets.h"
#include "core/clock.h"
#include "core/task.h"
#include "core/usage.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

// A usage limit an attempt met (the worker's reading of its agent's words).
struct LimitReport {
  std::string profile;
  std::string account;                // "" when the profile has no accounts
  std::vector<std::string> accounts;  // every account of the profile ("" = none)
  Millis reset_at = 0;                // 0: the agent named no reset
  std::string reason;                 // the agent's words
};

struct UsageGroup {
  std::string key;    // the task id, queue, agent or day (YYYY-MM-DD, UTC)
  std::string title;  // a task's title, when grouped by task
  UsageTotal total;
};

class AgentService {
 public:
  AgentService(store::Store& store, const Clock& clock, ServiceOptions options = {});

  // Records the usage of the attempt with `usage.token`, replacing what was recorded for it:
  // the claim must be the task's and the worker's (conflict otherwise; not_found for an unknown
  // token). The queue and attempt number are taken from the task and claim; the first record's
  // start time is kept; updated_at is now.
  Status RecordUsage(AttemptUsage usage);
  // A task's attempts' usage, by token.
  Result<std::vector<AttemptUsage>> TaskUsage(std::string_view task_id);
  // What a task's attempts have cost together.
  Result<double> TaskCost(std::string_view task_id);
  // The usage of each of these tasks summed (tokens, cost, turns, attempts), by task id, in one
  // read and one query: a task with no row of the ledger is left out.
  Result<std::map<std::string, UsageTotal>> TaskTotals(const std::vector<std::string>& task_ids);
  // The ledger since `since` (until `until`, 0 = now), grouped by "task", "queue", "agent" or
  // "day", largest cost first (days in order). invalid_argument for another grouping.
  Result<std::vector<UsageGroup>> Summarize(const std::string& by, Millis since, Millis until = 0);
  // The same as `tx usage --json` and GET /api/usage print it: {"by", "since" (a time or null),
  // "groups": [{"key", "title" (by task), "attempts", "tokens", "cost_usd", "cost_estimated",
  // "turns"}], "total": {...}}.
  Result<nlohmann::json> UsageDocument(const std::string& by, Millis since);

  // The attempt holding `token` met a usage limit: in one transaction its claim ends
  // `rate_limited` (not counted), the profile's account is limited until the reset (at most
  // kMaxLimitMs away; when none was given: LimitBackoff of the episodes in a row — a report
  // during a limit that is still on is the same episode and extends it only to a later reset it
  // names) and agent.limited recorded when it was not limited that long already, and the task goes
  // back to `ready` — with run_after at the reset, unless another account of the profile is free —
  // or fails if its budget is spent. Same token checks as ClaimService::Report.
  Result<Task> EndLimited(std::string_view task_id, std::int64_t token, const LimitReport& limit);

  // The attempt's agent could not be started (spawn_failed: its program is missing or not
  // executable) or could not log in (agent_unavailable): the claim ends with that reason, not
  // counted; the task goes back to `ready` at once for a worker that can run it; the worker
  // records the profile as unavailable (metadata.unavailable_agents {profile: why}) and
  // worker.agent_unavailable is appended. Same token checks as Report.
  Result<Task> EndUnavailable(std::string_view task_id, std::int64_t token, EndReason reason,
                              const std::string& profile, const std::string& why);

  // The agent was stopped with its task's budget spent (over_budget): the claim ends so, and the
  // task fails for good with the reason `budget`. Same token checks as Report.
  Result<Task> EndOverBudget(std::string_view task_id, std::int64_t token, const std::string& why);

  // The fleet's limits as recorded (active or not), by profile and account.
  Result<std::vector<AgentLimit>> Limits();
  // Records agent.resumed for each limit whose reset has passed and that has not been announced,
  // and returns those.
  Result<std::vector<AgentLimit>> ResumeExpired();
  // An operator lifts a profile's limit before its reset (every account's, or `account`'s): it
  // ends now with agent.resumed, its strikes are forgotten, and the agent tasks it held back
  // (ready, naming the profile or none, waiting past now) may be claimed at once. Returns the
  // limits lifted; not_found when none of them is on.
  Result<std::vector<AgentLimit>> Lift(const std::string& profile,
                                       const std::optional<std::string>& account);

  // The day's spending against `budgets`; the first call to find a budget reached on a day
  // records budget.reached for it (once per budget and day, whoever finds it).
  Result<BudgetState> CheckBudgets(const Budgets& budgets);
  // The same without recording anything (a status read).
  Result<BudgetState> Spending(const Budgets& budgets);

  // What `tx orchestrator status`, GET /api/orchestrator and the dashboard show of the agents:
  // {"limits": [the limits in force, as ToJson(AgentLimit)], "budget": ToJson(Spending) or null
  // when `budgets` has none}. One read.
  Result<nlohmann::json> StatusOf(const Budgets& budgets);

 private:
  store::Store& store_;
  const Clock& clock_;
  ServiceOptions options_;
};

// ResumeExpired for a caller that has its own `now` (the reconciler's pass).
Result<std::vector<AgentLimit>> ResumeExpiredLimits(store::Store& store, Millis now);

}  // namespace tx::service
