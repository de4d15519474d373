#include "core/budgets.h"

#include "core/duration.h"

namespace tx {

namespace {
constexpr Millis kDayMs = 86'400'000;
}  // namespace

nlohmann::json ToJson(const Budgets& b) {
  nlohmann::json queues = nlohmann::json::object();
  for (const auto& [q, usd] : b.queue_daily_usd) queues[q] = usd;
  return {{"daily_usd", b.daily_usd}, {"queues", queues}};
}

Result<Budgets> BudgetsFromJson(const nlohmann::json& j) {
  Budgets b;
  if (!j.is_object()) return Error::InvalidArgument("budgets: not an object");
  auto number = [](const nlohmann::json& v) { return v.is_number() && v.get<double>() >= 0; };
  if (auto it = j.find("daily_usd"); it != j.end()) {
    if (!number(*it)) return Error::InvalidArgument("budgets: 'daily_usd' must be a number >= 0");
    b.daily_usd = it->get<double>();
  }
  if (auto it = j.find("queues"); it != j.end()) {
    if (!it->is_object()) return Error::InvalidArgument("budgets: 'queues' must be an object");
    for (const auto& [q, usd] : it->items()) {
      if (!number(usd)) {
        return Error::InvalidArgument("budgets: 'queues." + q + "' must be a number >= 0");
      }
      b.queue_daily_usd[q] = usd.get<double>();
    }
  }
  return b;
}

nlohmann::json ToJson(const BudgetState& b) {
  nlohmann::json queues = nlohmann::json::object();
  for (const auto& [q, usd] : b.queue_spent) queues[q] = usd;
  return {{"day", b.day},
          {"spent_usd", b.spent_usd},
          {"reached", b.reached},
          {"reached_queues", b.reached_queues},
          {"queue_spent_usd", queues},
          {"next_day_at",
           b.next_day_at > 0 ? nlohmann::json(FormatTime(b.next_day_at)) : nlohmann::json()}};
}

Result<BudgetState> BudgetStateFromJson(const nlohmann::json& j) {
  BudgetState b;
  if (!j.is_object()) return Error::InvalidArgument("budget: not an object");
  b.day = j.value("day", "");
  if (auto it = j.find("spent_usd"); it != j.end() && it->is_number()) b.spent_usd = *it;
  b.reached = j.value("reached", false);
  if (auto it = j.find("reached_queues"); it != j.end() && it->is_array()) {
    for (const auto& q : *it) {
      if (q.is_string()) b.reached_queues.push_back(q.get<std::string>());
    }
  }
  if (auto it = j.find("queue_spent_usd"); it != j.end() && it->is_object()) {
    for (const auto& [q, usd] : it->items()) {
      if (usd.is_number()) b.queue_spent[q] = usd.get<double>();
    }
  }
  if (auto it = j.find("next_day_at"); it != j.end() && it->is_string()) {
    Result<Millis> t = ParseTime(it->get<std::string>());
    if (t.ok()) b.next_day_at = *t;
  }
  return b;
}

std::string UtcDay(Millis t) { return FormatTime(t).substr(0, 10); }  // "YYYY-MM-DD"

Millis NextUtcDay(Millis t) { return (t / kDayMs + 1) * kDayMs; }

}  // namespace tx
