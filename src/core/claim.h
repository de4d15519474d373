#pragma once
// Claim: a lease on a task by a worker. The token is the fencing token: a monotonically increasing
// integer. Invariant: at most one active claim per task; a stale token changes nothing.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

enum class ClaimStatus { kActive, kReleased, kExpired, kCompleted };

std::string_view ToString(ClaimStatus s);
Result<ClaimStatus> ParseClaimStatus(std::string_view name);

// Why an attempt (a claim) ended. Recorded on the claim; listed as the task's attempts[].
enum class EndReason {
  kNone,              // still running
  kExited,            // success reported (done or review)
  kFailed,            // failure reported
  kTimedOut,          // task timeout
  kStalled,           // no output for the stall timeout
  kLeaseLost,         // lease expired or renewal refused
  kWorkerDied,        // the holding worker died
  kCancelled,         // the task was cancelled
  kShutdown,          // released by a graceful shutdown (does not count as an attempt)
  kReleased,          // released by hand (does not count as an attempt)
  kForced,            // an operator ended the task without the token
  kOrphaned,          // the reconciler found the claim on a task that had already moved on
  kRateLimited,       // the agent reported a usage or rate limit (does not count as an attempt)
  kSpawnFailed,       // the agent's program could not be started (does not count as an attempt)
  kOverBudget,        // the agent was stopped once the task's budget was spent
  kAgentUnavailable,  // the agent could not log in (does not count as an attempt)
  kAsked,             // the agent asked a person a question (does not count as an attempt)
};

// Whether an attempt that ended so counts against max_attempts: not a release, a shutdown, a
// limit of the agent's account, a program missing on the worker's machine, an agent that
// cannot log in there — none of them the task's fault — or a question asked of a person.
bool CountsAsAttempt(EndReason r);

std::string_view ToString(EndReason r);
Result<EndReason> ParseEndReason(std::string_view name);

// A claim's lease when neither its worker nor the service is told another.
inline constexpr Millis kDefaultLeaseMs = 30 * 60'000;

struct Claim {
  std::int64_t token = 0;
  std::string task_id;
  std::string worker_id;
  int attempt = 0;  // n of this attempt, 1-based, across the task's whole history
  Millis claimed_at = 0;
  Millis lease_ms = 0;  // the duration each renewal extends the lease by
  Millis lease_expires_at = 0;
  std::optional<Millis> lease_expires_steady;  // the same instant on the steady clock, if known
  int renewed_count = 0;
  ClaimStatus status = ClaimStatus::kActive;
  Millis ended_at = 0;
  EndReason end_reason = EndReason::kNone;
  std::optional<int> exit_code;
};

// How long the lease still runs at `now` (negative: how long ago it expired); on the steady clock
// when both have a reading (core/clock.h), else on the wall clock.
inline Millis LeaseLeft(const Claim& c, const Moment& now) {
  if (c.lease_expires_steady && now.steady) return *c.lease_expires_steady - *now.steady;
  return c.lease_expires_at - now.wall;
}
inline bool IsExpired(const Claim& c, const Moment& now) { return LeaseLeft(c, now) <= 0; }
// Sets the lease to run `lease_ms` from `now`, on both clocks.
inline void RenewLease(Claim& c, const Moment& now) {
  c.lease_expires_at = now.wall + c.lease_ms;
  c.lease_expires_steady =
      now.steady ? std::optional<Millis>(*now.steady + c.lease_ms) : std::nullopt;
}

}  // namespace tx
