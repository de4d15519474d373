#include "core/usage.h"

#include <cmath>

#include "core/duration.h"

namespace tx {

namespace {
nlohmann::json Time(Millis t) { return t > 0 ? nlohmann::json(FormatTime(t)) : nlohmann::json(); }
// Dollars to the micro-dollar: what the agents report is finer than a cent, never finer than this.
double Usd(double v) { return std::round(v * 1e6) / 1e6; }
}  // namespace

void UsageTotal::Add(const AttemptUsage& u) {
  tokens += u.tokens;
  cost_usd += u.cost_usd;
  turns += u.turns;
  ++attempts;
  estimated = estimated || u.cost_estimated;
}

nlohmann::json ToJson(const TokenCounts& t) {
  return {{"input", t.input},
          {"output", t.output},
          {"cache_read", t.cache_read},
          {"cache_write", t.cache_write}};
}

nlohmann::json ToJson(const AttemptUsage& u) {
  return {
      {"token", u.token},
      {"task_id", u.task_id},
      {"attempt", u.attempt},
      {"worker_id", u.worker_id},
      {"agent", u.agent},
      {"account", u.account},
      {"queue", u.queue},
      {"session_id", u.session_id.empty() ? nlohmann::json() : nlohmann::json(u.session_id)},
      {"model", u.model.empty() ? nlohmann::json() : nlohmann::json(u.model)},
      {"tokens", ToJson(u.tokens)},
      {"cost_usd", Usd(u.cost_usd)},
      {"cost_estimated", u.cost_estimated},
      {"turns", u.turns},
      {"permission_denials", u.denials},
      {"started_at", Time(u.started_at)},
      {"updated_at", Time(u.updated_at)},
  };
}

nlohmann::json ToJson(const UsageTotal& t) {
  return {{"attempts", t.attempts},
          {"tokens", ToJson(t.tokens)},
          {"cost_usd", Usd(t.cost_usd)},
          {"cost_estimated", t.estimated},
          {"turns", t.turns}};
}

nlohmann::json ToJson(const AgentLimit& l) {
  return {{"agent", l.profile},
          {"account", l.account},
          {"until", Time(l.until)},
          {"since", Time(l.since)},
          {"reason", l.reason},
          {"task_id", l.task_id.empty() ? nlohmann::json() : nlohmann::json(l.task_id)},
          {"strikes", l.strikes},
          {"resumed", l.resumed}};
}

}  // namespace tx
