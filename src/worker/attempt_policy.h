#pragma once
// AttemptPolicy: the decisions of one running attempt, as a step function (docs/worker.md,
// docs/agents.md). The worker's loop observes — the agent's output and exit, the signals, the
// lease, the operator's requests, what the agent said of its limits and cost — hands it to
// Step, and does what Step decides. Pure: times are a monotonic clock's milliseconds passed in,
// so tests drive it with a fake clock and no process.
//
// In order of precedence (the order Step checks them), an attempt ends because:
//   its claim was revoked (a cancel, an operator's --force, an ended session): kill now;
//   its lease was lost (a refused renewal, the worker evicted): kill now (lease_lost);
//   the agent exited: finish (the worker reads how);
//   it reported its outcome itself and has not exited within kReportGraceMs — kRetryGraceMs
//   when it reported a failure, which may be retried elsewhere soon, or asked a question, which
//   may be answered soon: stop it (the outcome stands; it is left that long to finish writing
//   its session, its last output);
//   a second stop signal, or a first one while paused: stop it now (shutdown); a first: let it
//   run up to the shutdown timeout, then stop it (shutdown);
//   (while paused, nothing below applies)
//   the agent cannot log in: stop it (agent_unavailable);
//   the agent reported a usage limit: stop it (rate_limited);
//   the task's budget is spent (earlier attempts plus this one's running cost): stop it
//   (over_budget);
//   the task timeout passed (timed_out), or no output for the stall timeout (stalled).
// Time spent paused counts against neither the timeout nor the stall timer; nothing but a
// revoke, a lost lease or a stop ends a paused attempt.

#include "core/claim.h"
#include "core/clock.h"
#include "core/task.h"
#include "core/worker.h"

namespace tx::worker {

struct AttemptLimits {
  Millis timeout_ms = kDefaultTaskTimeoutMs;       // the task's, capped by the worker's
  Millis stall_ms = 0;                             // 0 = no stall timeout
  Millis shutdown_ms = kDefaultShutdownTimeoutMs;  // how long a stop waits for the agent
  double budget_left_usd = 0;                      // what this attempt may cost; 0 = no budget
};

// What the loop saw, at `now` (a monotonic clock's milliseconds).
struct AttemptObservation {
  Millis now = 0;
  bool exited = false;
  Millis last_output_at = 0;  // the start, until there is output
  bool paused = false;
  int stop_signals = 0;  // 1: drain, 2 or more: hurry
  bool revoked = false;
  // The agent reported its outcome itself (its claim is completed) and has not exited yet.
  bool reported = false;
  // What it reported was a failure or a question: a retry, or the answer's attempt, may start
  // soon.
  bool reported_failure = false;
  bool lease_lost = false;
  bool auth_failed = false;
  bool limit_seen = false;
  double cost_usd = 0;  // this attempt's, reported or estimated
};

enum class AttemptAction {
  kWait,       // nothing to do until wake_at (or something happens)
  kFinish,     // the agent exited: report how
  kKill,       // SIGKILL its group now: someone else may hold the task
  kTerminate,  // stop it in phases (SIGTERM, the kill grace, SIGKILL), then end with `reason`
};

struct AttemptDecision {
  AttemptAction action = AttemptAction::kWait;
  EndReason reason = EndReason::kNone;  // kKill, kTerminate: why the attempt ends
  Millis wake_at = 0;                   // kWait: look again by then at the latest
  bool operator==(const AttemptDecision&) const = default;
};

class AttemptPolicy {
 public:
  static constexpr Millis kReportGraceMs = 30'000;
  // Shorter than the first retry's backoff, so that a retry never runs beside it.
  static constexpr Millis kRetryGraceMs = 500;

  AttemptPolicy(const AttemptLimits& limits, Millis started_at);

  AttemptDecision Step(const AttemptObservation& seen);

  // Time spent paused so far (counted up to the last Step).
  Millis paused_total() const { return paused_total_; }

 private:
  AttemptLimits limits_;
  Millis started_at_;
  bool paused_ = false;
  Millis paused_since_ = 0;
  Millis paused_total_ = 0;
  Millis resumed_at_ = 0;
  Millis shutdown_at_ = -1;  // when a stop stops the agent; -1 = no stop yet
  Millis reported_at_ = -1;  // when its own report was first seen; -1 = not yet
};

}  // namespace tx::worker
