#include "service/agent_service.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "core/duration.h"
#include "service/agent_gate.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;

namespace {

constexpr Millis kDayMs = 86'400'000;

std::string Usd(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// Replaces the bytes of `s` that are not valid UTF-8 (an agent's words may be anything) with '?',
// so that they can be stored as text and written as JSON.
std::string ValidUtf8(std::string s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (!ok) {
      s[i] = '?';
      n = 1;
    }
    i += n;
  }
  return s;
}

// A task leaving `running` for `ready` without counting its attempt, at `run_after`; or failing,
// its budget spent.
Status RequeueUncounted(store::Txn& txn, Task& task, EndReason why, Millis run_after, Millis now,
                        nlohmann::json extra = nlohmann::json::object()) {
  if (task.attempt > 0) --task.attempt;
  task.updated_at = now;
  TX_ASSIGN_OR_RETURN(bool spent, detail::FailIfBudgetSpent(txn, task, now));
  if (spent) return Ok();
  TX_RETURN_IF_ERROR(
      CheckTransition(task.id, task.status, TaskEvent::kRequeue, TaskStatus::kReady));
  task.status = TaskStatus::kReady;
  task.run_after = std::max(run_after, now);
  TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
  extra["reason"] = ToString(why);
  extra["attempt"] = task.attempt;
  extra["counted"] = false;
  if (task.run_after > now) extra["run_after"] = FormatTime(task.run_after);
  return Emit(txn, now, "task.requeued", task.id, "", std::move(extra));
}

}  // namespace

AgentService::AgentService(store::Store& store, const Clock& clock, ServiceOptions options)
    : store_(store), clock_(clock), options_(WithDefaults(std::move(options))) {}

Status AgentService::RecordUsage(AttemptUsage usage) {
  const Moment now = clock_.Now();
  usage.session_id = ValidUtf8(std::move(usage.session_id));
  usage.model = ValidUtf8(std::move(usage.model));
  if (!usage.denials.is_array()) usage.denials = nlohmann::json::array();
  return store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetClaim(usage.token));
    if (!claim) return Error::NotFound("no claim has token " + std::to_string(usage.token));
    if (claim->task_id != usage.task_id) {
      return Error::Conflict("token " + std::to_string(usage.token) + " belongs to task " +
                             claim->task_id + ", not " + usage.task_id);
    }
    if (!usage.worker_id.empty() && claim->worker_id != usage.worker_id) {
      return Error::Conflict("token " + std::to_string(usage.token) + " is held by worker " +
                             claim->worker_id + ", not " + usage.worker_id);
    }
    TX_ASSIGN_OR_RETURN(Task task, detail::LoadTask(txn, usage.task_id));
    TX_ASSIGN_OR_RETURN(std::optional<AttemptUsage> before, txn.GetUsage(usage.token));
    AttemptUsage row = usage;
    row.worker_id = claim->worker_id;
    row.attempt = claim->attempt;
    row.queue = task.queue;
    row.started_at = before && before->started_at > 0 ? before->started_at
                     : usage.started_at > 0           ? usage.started_at
                                                      : claim->claimed_at;
    row.updated_at = now;
    return txn.PutUsage(row);
  });
}

Result<std::vector<AttemptUsage>> AgentService::TaskUsage(std::string_view task_id) {
  std::vector<AttemptUsage> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListUsageForTask(task_id));
    return Ok();
  }));
  return out;
}

Result<double> AgentService::TaskCost(std::string_view task_id) {
  double out = 0;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.TaskCost(task_id));
    return Ok();
  }));
  return out;
}

Result<std::map<std::string, UsageTotal>> AgentService::TaskTotals(
    const std::vector<std::string>& task_ids) {
  std::map<std::string, UsageTotal> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(auto sums, txn.SumUsageOfTasks(task_ids));
    out = std::map<std::string, UsageTotal>(std::make_move_iterator(sums.begin()),
                                            std::make_move_iterator(sums.end()));
    return Ok();
  }));
  return out;
}

Result<std::vector<UsageGroup>> AgentService::Summarize(const std::string& by, Millis since,
                                                        Millis until) {
  if (by != "task" && by != "queue" && by != "agent" && by != "day") {
    return Error::InvalidArgument("invalid grouping '" + by +
                                  "': expected task, queue, agent or day");
  }
  std::map<std::string, UsageGroup> groups;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    groups.clear();
    TX_ASSIGN_OR_RETURN(std::vector<AttemptUsage> rows, txn.ListUsage(since, until));
    for (const auto& u : rows) {
      std::string key = by == "task"    ? u.task_id
                        : by == "queue" ? u.queue
                        : by == "agent" ? u.agent
                                        : UtcDay(u.updated_at);
      UsageGroup& g = groups[key];
      g.key = key;
      g.total.Add(u);
    }
    if (by == "task") {
      for (auto& [id, g] : groups) {
        TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(id));
        if (t) g.title = t->title;
      }
    }
    return Ok();
  }));
  std::vector<UsageGroup> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  if (by != "day") {
    std::stable_sort(out.begin(), out.end(), [](const UsageGroup& a, const UsageGroup& b) {
      return a.total.cost_usd > b.total.cost_usd;
    });
  }
  return out;
}

Result<nlohmann::json> AgentService::UsageDocument(const std::string& by, Millis since) {
  TX_ASSIGN_OR_RETURN(std::vector<UsageGroup> groups, Summarize(by, since));
  UsageTotal total;
  nlohmann::json out = {{"by", by},
                        {"since", since > 0 ? nlohmann::json(FormatTime(since)) : nullptr},
                        {"groups", nlohmann::json::array()}};
  for (const auto& g : groups) {
    nlohmann::json j = ToJson(g.total);
    j["key"] = g.key;
    if (by == "task") j["title"] = g.title;
    out["groups"].push_back(std::move(j));
    total.tokens += g.total.tokens;
    total.cost_usd += g.total.cost_usd;
    total.turns += g.total.turns;
    total.attempts += g.total.attempts;
    total.estimated = total.estimated || g.total.estimated;
  }
  out["total"] = ToJson(total);
  return out;
}

Result<Task> AgentService::EndLimited(std::string_view task_id, std::int64_t token,
                                      const LimitReport& report) {
  if (report.profile.empty()) return Error::InvalidArgument("a limit names its agent profile");
  const Moment now = clock_.Now();
  std::string reason = ValidUtf8(report.reason.substr(0, 2000));
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(detail::CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kReleased, EndReason::kRateLimited,
                                        now, std::nullopt, {.heartbeat = now}));
    TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, txn.ListAgentLimits());
    AgentLimit limit;
    limit.profile = report.profile;
    limit.account = report.account;
    const AgentLimit* before = nullptr;
    for (const auto& l : limits) {
      if (l.profile == report.profile && l.account == report.account) before = &l;
    }
    // A reset later than this is a misreading (or a hostile report): capped, so that no report
    // parks a profile for longer.
    Millis reset_at = std::min<Millis>(report.reset_at, now + kMaxLimitMs);
    bool active = before != nullptr && IsActive(*before, now);
    if (active) {
      // The same episode, told by another attempt (or a task given back while it lasts): it
      // keeps its strikes, and a later reset, if one is told, extends it.
      limit.strikes = before->strikes;
      limit.until = std::max(before->until, reset_at);
      limit.since = before->since;
    } else {
      // Episodes in a row (the last one ended less than an hour ago) back off further.
      bool in_a_row = before != nullptr && before->until + 3'600'000 > now;
      limit.strikes = in_a_row ? before->strikes + 1 : 1;
      limit.until = reset_at > now ? reset_at : now + LimitBackoff(limit.strikes);
      limit.since = now;
    }
    limit.reason = reason;
    limit.task_id = task.id;
    bool announce = !active || before->until < limit.until;
    TX_RETURN_IF_ERROR(txn.PutAgentLimit(limit));
    if (announce) {
      TX_RETURN_IF_ERROR(Emit(txn, now, "agent.limited", task.id, claim.worker_id,
                              {{"agent", limit.profile},
                               {"account", limit.account},
                               {"until", FormatTime(limit.until)},
                               {"reset_given", reset_at > now},
                               {"reason", reason}}));
    }
    // Back to the queue: at the reset, unless another account of the profile is free now.
    std::vector<AgentLimit> now_limits = limits;
    bool replaced = false;
    for (auto& l : now_limits) {
      if (l.profile == limit.profile && l.account == limit.account) {
        l = limit;
        replaced = true;
      }
    }
    if (!replaced) now_limits.push_back(limit);
    std::vector<std::string> accounts = report.accounts;
    accounts.erase(std::remove(accounts.begin(), accounts.end(), std::string()), accounts.end());
    bool free = FreeAccount(limit.profile, accounts, now_limits, now).has_value();
    Millis run_after = free ? now : limit.until;
    if (task.status == TaskStatus::kRunning) {
      TX_RETURN_IF_ERROR(
          RequeueUncounted(txn, task, EndReason::kRateLimited, run_after, now,
                           {{"agent", limit.profile}, {"until", FormatTime(limit.until)}}));
    }
    return task;
  });
}

Result<Task> AgentService::EndUnavailable(std::string_view task_id, std::int64_t token,
                                          EndReason reason, const std::string& profile,
                                          const std::string& why) {
  if (reason != EndReason::kSpawnFailed && reason != EndReason::kAgentUnavailable) {
    return Error::InvalidArgument("an unavailable agent ends spawn_failed or agent_unavailable");
  }
  const Moment now = clock_.Now();
  std::string text = ValidUtf8(why.substr(0, 2000));
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(detail::CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kReleased, reason, now,
                                        std::nullopt, {.heartbeat = now}));
    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(claim.worker_id));
    if (w && IsLive(w->status) && !profile.empty()) {
      nlohmann::json& missing = w->metadata["unavailable_agents"];
      if (!missing.is_object()) missing = nlohmann::json::object();
      missing[profile] = text;
      TX_RETURN_IF_ERROR(txn.UpdateWorker(*w));
    }
    TX_RETURN_IF_ERROR(Emit(txn, now, "worker.agent_unavailable", task.id, claim.worker_id,
                            {{"agent", profile}, {"end_reason", ToString(reason)}, {"why", text}}));
    if (task.status == TaskStatus::kRunning) {
      TX_RETURN_IF_ERROR(RequeueUncounted(txn, task, reason, now, now, {{"agent", profile}}));
    }
    return task;
  });
}

Result<Task> AgentService::EndOverBudget(std::string_view task_id, std::int64_t token,
                                         const std::string& why) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(detail::CheckToken(txn, task_id, token, now, claim, task));
    TX_RETURN_IF_ERROR(detail::EndClaim(txn, claim, ClaimStatus::kCompleted, EndReason::kOverBudget,
                                        now, std::nullopt, {.heartbeat = now}));
    TX_ASSIGN_OR_RETURN(bool spent, detail::FailIfBudgetSpent(txn, task, now));
    if (!spent) {
      // The estimate passed the budget before the ledger did (the agent's own figure came in
      // lower, or not at all): the budget still stops the task.
      TX_RETURN_IF_ERROR(
          CheckTransition(task.id, task.status, TaskEvent::kBudgetSpent, TaskStatus::kFailed));
      task.status = TaskStatus::kFailed;
      task.error = "budget: " + why;
      task.finished_at = now;
      task.updated_at = now;
      TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
      TX_RETURN_IF_ERROR(Emit(txn, now, "task.failed", task.id, claim.worker_id,
                              {{"reason", "budget"},
                               {"attempt", task.attempt},
                               {"budget_usd", BudgetUsd(task)},
                               {"error", task.error}}));
    }
    return task;
  });
}

Result<std::vector<AgentLimit>> AgentService::Limits() {
  std::vector<AgentLimit> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListAgentLimits());
    return Ok();
  }));
  return out;
}

Result<std::vector<AgentLimit>> AgentService::ResumeExpired() {
  return ResumeExpiredLimits(store_, clock_.NowMs());
}

Result<std::vector<AgentLimit>> AgentService::Lift(const std::string& profile,
                                                   const std::optional<std::string>& account) {
  std::vector<AgentLimit> out;
  const Moment now = clock_.Now();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    out.clear();
    TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, txn.ListAgentLimits());
    for (auto& l : limits) {
      if (l.profile != profile || (account && l.account != *account) || !IsActive(l, now)) {
        continue;
      }
      l.until = now;
      l.strikes = 0;
      l.resumed = true;
      TX_RETURN_IF_ERROR(txn.PutAgentLimit(l));
      TX_RETURN_IF_ERROR(Emit(txn, now, "agent.resumed", "", "",
                              {{"agent", l.profile},
                               {"account", l.account},
                               {"limited_since", FormatTime(l.since)},
                               {"lifted", true}}));
      out.push_back(l);
    }
    if (out.empty()) {
      return Error::NotFound("agent " + profile +
                             (account ? " (account " + *account + ")" : std::string()) +
                             " is not limited");
    }
    store::TaskFilter f;
    f.status = TaskStatus::kReady;
    TX_ASSIGN_OR_RETURN(std::vector<Task> ready, txn.ListTasks(f));
    for (auto& t : ready) {
      bool held = t.command.empty() && (t.agent == profile || t.agent.empty()) && t.run_after > now;
      if (!held) continue;
      t.run_after = now;
      t.updated_at = now;
      TX_RETURN_IF_ERROR(txn.UpdateTask(t));
    }
    txn.WakeWatchersOnCommit();
    return Ok();
  }));
  return out;
}

Result<std::vector<AgentLimit>> ResumeExpiredLimits(store::Store& store, Millis now) {
  std::vector<AgentLimit> out;
  // A read first: nearly always there is nothing to announce, and a read never waits on writers.
  std::vector<AgentLimit> all;
  TX_RETURN_IF_ERROR(store.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(all, txn.ListAgentLimits());
    return Ok();
  }));
  bool any = std::any_of(all.begin(), all.end(),
                         [&](const AgentLimit& l) { return !l.resumed && !IsActive(l, now); });
  if (!any) return out;
  TX_RETURN_IF_ERROR(store.Write([&](store::Txn& txn) -> Status {
    out.clear();
    TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, txn.ListAgentLimits());
    for (auto& l : limits) {
      if (l.resumed || IsActive(l, now)) continue;
      l.resumed = true;
      TX_RETURN_IF_ERROR(txn.PutAgentLimit(l));
      TX_RETURN_IF_ERROR(Emit(
          txn, now, "agent.resumed", "", "",
          {{"agent", l.profile}, {"account", l.account}, {"limited_since", FormatTime(l.since)}}));
      // Its tasks may be claimed again: wake the idle workers.
      txn.WakeWatchersOnCommit();
      out.push_back(l);
    }
    return Ok();
  }));
  return out;
}

Result<BudgetState> AgentService::Spending(const Budgets& budgets) {
  BudgetState st;
  const Moment now = clock_.Now();
  st.day = UtcDay(now);
  st.next_day_at = NextUtcDay(now);
  Millis day_start = st.next_day_at - kDayMs;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    st.reached_queues.clear();
    TX_ASSIGN_OR_RETURN(st.spent_usd, txn.SumCostSince(day_start, ""));
    st.reached = budgets.daily_usd > 0 && st.spent_usd >= budgets.daily_usd;
    for (const auto& [queue, budget] : budgets.queue_daily_usd) {
      if (budget <= 0) continue;
      TX_ASSIGN_OR_RETURN(double spent, txn.SumCostSince(day_start, queue));
      st.queue_spent[queue] = spent;
      if (spent >= budget) st.reached_queues.push_back(queue);
    }
    return Ok();
  }));
  return st;
}

Result<nlohmann::json> AgentService::StatusOf(const Budgets& budgets) {
  const Moment now = clock_.Now();
  TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> limits, Limits());
  nlohmann::json out = {{"limits", nlohmann::json::array()}, {"budget", nullptr}};
  for (const auto& l : limits) {
    if (IsActive(l, now)) out["limits"].push_back(ToJson(l));
  }
  if (budgets.any()) {
    TX_ASSIGN_OR_RETURN(BudgetState b, Spending(budgets));
    out["budget"] = ToJson(b);
    out["budget"]["daily_usd"] = budgets.daily_usd;
    nlohmann::json queues = nlohmann::json::object();
    for (const auto& [q, usd] : budgets.queue_daily_usd) queues[q] = usd;
    out["budget"]["queue_daily_usd"] = queues;
  }
  return out;
}

Result<BudgetState> AgentService::CheckBudgets(const Budgets& budgets) {
  TX_ASSIGN_OR_RETURN(BudgetState st, Spending(budgets));
  std::vector<std::pair<std::string, double>> reached;  // scope, budget
  if (st.reached) reached.emplace_back("daily", budgets.daily_usd);
  for (const auto& q : st.reached_queues) {
    reached.emplace_back("queue:" + q, budgets.queue_daily_usd.at(q));
  }
  if (reached.empty()) return st;
  const Moment now = clock_.Now();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    for (const auto& [scope, budget] : reached) {
      TX_ASSIGN_OR_RETURN(bool first, txn.NoteOnce("budget.reached:" + scope + ":" + st.day, now));
      if (!first) continue;
      double spent = scope == "daily" ? st.spent_usd : st.queue_spent[scope.substr(6)];
      TX_RETURN_IF_ERROR(Emit(txn, now, "budget.reached", "", "",
                              {{"scope", scope},
                               {"day", st.day},
                               {"spent_usd", std::stod(Usd(spent))},
                               {"budget_usd", budget},
                               {"resumes_at", FormatTime(st.next_day_at)}}));
    }
    return Ok();
  }));
  return st;
}

}  // namespace tx::service
