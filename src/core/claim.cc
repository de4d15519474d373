#include "core/claim.h"

#include <array>

namespace tx {

namespace {
constexpr std::array<std::string_view, 4> kClaimStatus = {"active", "released", "expired",
                                                          "completed"};
constexpr std::array<std::string_view, 17> kEndReasons = {"",
                                                          "exited",
                                                          "failed",
                                                          "timed_out",
                                                          "stalled",
                                                          "lease_lost",
                                                          "worker_died",
                                                          "cancelled",
                                                          "shutdown",
                                                          "released",
                                                          "forced",
                                                          "orphaned",
                                                          "rate_limited",
                                                          "spawn_failed",
                                                          "over_budget",
                                                          "agent_unavailable",
                                                          "asked"};

template <typename Enum, std::size_t N>
Result<Enum> ParseFrom(const std::array<std::string_view, N>& names, std::string_view name,
                       const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return Error::Internal(std::string("unknown ") + what + " '" + std::string(name) + "'");
}
}  // namespace

std::string_view ToString(ClaimStatus s) { return kClaimStatus[static_cast<std::size_t>(s)]; }
Result<ClaimStatus> ParseClaimStatus(std::string_view name) {
  return ParseFrom<ClaimStatus>(kClaimStatus, name, "claim status");
}
std::string_view ToString(EndReason r) { return kEndReasons[static_cast<std::size_t>(r)]; }
Result<EndReason> ParseEndReason(std::string_view name) {
  return ParseFrom<EndReason>(kEndReasons, name, "end reason");
}
bool CountsAsAttempt(EndReason r) {
  return r != EndReason::kShutdown && r != EndReason::kReleased && r != EndReason::kRateLimited &&
         r != EndReason::kSpawnFailed && r != EndReason::kAgentUnavailable &&
         r != EndReason::kAsked;
}

}  // namespace tx
