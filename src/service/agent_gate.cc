#include "service/agent_gate.h"

#include <algorithm>

namespace tx::service {

namespace {

const AgentLimit* Find(const std::vector<AgentLimit>& limits, const std::string& profile,
                       const std::string& account) {
  for (const auto& l : limits) {
    if (l.profile == profile && l.account == account) return &l;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> FreeAccount(const std::string& profile,
                                       const std::vector<std::string>& accounts,
                                       const std::vector<AgentLimit>& limits, Millis now) {
  if (accounts.empty()) {
    const AgentLimit* l = Find(limits, profile, "");
    if (l != nullptr && IsActive(*l, now)) return std::nullopt;
    return std::string();
  }
  for (const auto& a : accounts) {
    const AgentLimit* l = Find(limits, profile, a);
    if (l == nullptr || !IsActive(*l, now)) return a;
  }
  return std::nullopt;
}

Gate ComputeGate(const GateInputs& in) {
  Gate g;
  if (in.daily_budget_reached) {
    g.blocked_agents = {"*"};
    return g;
  }
  g.blocked_agent_queues = in.budget_queues;
  std::set<std::string> blocked(in.unavailable.begin(), in.unavailable.end());
  // Limited profiles: those every account of which is limited, known to this worker or not (a
  // task may name a profile this worker lacks: it could not run it anyway, and the pick then
  // fails its spawn as it would have).
  std::map<std::string, std::vector<std::string>> profiles = in.profiles;
  for (const auto& l : in.limits) {
    if (IsActive(l, in.now) && profiles.find(l.profile) == profiles.end()) {
      profiles[l.profile] =
          l.account.empty() ? std::vector<std::string>{} : std::vector<std::string>{l.account};
    }
  }
  for (const auto& [profile, accounts] : profiles) {
    if (FreeAccount(profile, accounts, in.limits, in.now)) continue;
    blocked.insert(profile);
    // It frees up when its first account does.
    Millis free_at = 0;
    for (const auto& l : in.limits) {
      if (l.profile == profile && IsActive(l, in.now) && (free_at == 0 || l.until < free_at)) {
        free_at = l.until;
      }
    }
    if (free_at > 0 && (g.next_change == 0 || free_at < g.next_change)) g.next_change = free_at;
  }
  if (!in.default_profile.empty() && blocked.count(in.default_profile) > 0) blocked.insert("");
  g.blocked_agents.assign(blocked.begin(), blocked.end());
  return g;
}

Millis LimitBackoff(int strikes) {
  Millis d = 5 * 60'000;
  for (int i = 1; i < strikes && d < 3'600'000; ++i) d *= 2;
  return std::min<Millis>(d, 3'600'000);
}

}  // namespace tx::service
