#include "worker/attempt_policy.h"

#include <algorithm>

namespace tx::worker {

namespace {
constexpr Millis kLookAgainMs = 1'000;  // at most this long between looks at the lease and requests
}  // namespace

AttemptPolicy::AttemptPolicy(const AttemptLimits& limits, Millis started_at)
    : limits_(limits), started_at_(started_at), resumed_at_(started_at) {}

AttemptDecision AttemptPolicy::Step(const AttemptObservation& seen) {
  const Millis now = seen.now;
  if (seen.paused && !paused_) {
    paused_ = true;
    paused_since_ = now;
  } else if (!seen.paused && paused_) {
    paused_ = false;
    paused_total_ += now - paused_since_;
    resumed_at_ = now;
  }
  auto end = [](AttemptAction a, EndReason r) { return AttemptDecision{a, r, 0}; };
  if (seen.revoked) return end(AttemptAction::kKill, EndReason::kCancelled);
  if (seen.lease_lost) return end(AttemptAction::kKill, EndReason::kLeaseLost);
  if (seen.exited) return AttemptDecision{AttemptAction::kFinish, EndReason::kNone, 0};
  if (seen.reported) {
    if (reported_at_ < 0) reported_at_ = now;
    Millis stop_at = reported_at_ + (seen.reported_failure ? kRetryGraceMs : kReportGraceMs);
    if (now >= stop_at) return end(AttemptAction::kTerminate, EndReason::kExited);
    return AttemptDecision{AttemptAction::kWait, EndReason::kNone,
                           std::min(stop_at, now + kLookAgainMs)};
  }
  if (seen.stop_signals > 0 && shutdown_at_ < 0) shutdown_at_ = now + limits_.shutdown_ms;
  // A frozen agent cannot finish: a stop while paused does not wait for it.
  if (seen.stop_signals > 1 || (seen.stop_signals > 0 && seen.paused)) shutdown_at_ = now;
  if (shutdown_at_ >= 0 && now >= shutdown_at_) {
    return end(AttemptAction::kTerminate, EndReason::kShutdown);
  }
  Millis wake = now + kLookAgainMs;
  if (shutdown_at_ >= 0) wake = std::min(wake, shutdown_at_);
  if (seen.paused) return AttemptDecision{AttemptAction::kWait, EndReason::kNone, wake};
  if (seen.auth_failed) return end(AttemptAction::kTerminate, EndReason::kAgentUnavailable);
  if (seen.limit_seen) return end(AttemptAction::kTerminate, EndReason::kRateLimited);
  if (limits_.budget_left_usd > 0 && seen.cost_usd >= limits_.budget_left_usd) {
    return end(AttemptAction::kTerminate, EndReason::kOverBudget);
  }
  Millis deadline = started_at_ + limits_.timeout_ms + paused_total_;
  if (now >= deadline) return end(AttemptAction::kTerminate, EndReason::kTimedOut);
  wake = std::min(wake, deadline);
  if (limits_.stall_ms > 0) {
    Millis stall_at = std::max(seen.last_output_at, resumed_at_) + limits_.stall_ms;
    if (now >= stall_at) return end(AttemptAction::kTerminate, EndReason::kStalled);
    wake = std::min(wake, stall_at);
  }
  return AttemptDecision{AttemptAction::kWait, EndReason::kNone, wake};
}

}  // namespace tx::worker
