#pragma once
// Reconciler: the repair loop's body (docs/reconcile.md). RunOnce(now) takes the four steps of the
// source PRD, each as one store transaction, and returns what it did:
//   1. dead workers: live workers stale for two heartbeat intervals are marked dead, their
//      claims end `worker_died`, their tasks go back to ready (the attempt counts);
//   2. expired leases: active claims past lease_expires_at end `lease_lost` (status expired),
//      their tasks go back to ready (the attempt counts);
//   3. orphaned tasks: `running` tasks with no active claim go back to ready;
//   4. inconsistencies: busy workers without an active claim become idle; active claims held by
//      a dead or stopped worker end `worker_died` with a requeue; active claims on a task that
//      is no longer running end `orphaned`.
// Then it marks overdue reviews: a task waiting in `review` longer than the review timeout since
// it entered review (its last attempt's end) gets metadata.review_overdue_at and one event
// task.review_overdue (a person is waited for; nothing is repaired). Entering review again clears
// the mark. And, with a question timeout (off by default), it fails each task whose agent's
// question has waited for an answer longer than that: status `failed`, an error that says so,
// event task.failed {"reason": "question_timeout", "question", ...}.
// Finally it records last_reconcile_at and the report in the store's reconciler record. Running
// it twice in a row finds nothing the second time; running it from two processes at once (a
// leader that lost its lead a moment ago, or `tx orchestrator reconcile` by hand) is safe, as
// each repair re-checks its rows inside its own write. The loop around it lives in orchestrator/.
//
// Silence (steps 1 and 2) is judged on the steady clock where the store keeps steady readings
// (core/clock.h), so a step of the wall clock kills no healthy worker. And it is counted only
// from this reconciler's last failed pass: while the store could not be written, no worker could
// heartbeat either, so a worker is declared dead, and a lease expired, only once the store has
// been writable for the whole interval it is given — counted from the first pass after the
// failed one (the store may have come back just before it), not from the failed pass.

#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/orchestrator.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

// Why the reconciler declared a worker dead (its offlineReason in the heartbeat document).
inline constexpr std::string_view kStaleHeartbeat = "stale-heartbeat";

class Reconciler {
 public:
  explicit Reconciler(store::Store& store, ServiceOptions options = {});

  // After a failed pass (the store unavailable, say), silence counts again from the next pass.
  Result<ReconcileReport> RunOnce(const Moment& now);

  // The earliest wall time after which RunOnce would find something without anything else
  // changing: a live worker going stale (last heartbeat + 2 intervals) or an active lease
  // expiring; nullopt when neither can happen. The orchestrator reconciles then, instead of
  // waiting for its next interval, so detection is bounded by the heartbeat interval and not by
  // the reconcile tick. One read.
  Result<std::optional<Millis>> NextDueAt(const Moment& now);

  // Whether RunOnce at `now` would declare `w` dead: live, stale and silent for as long as this
  // reconciler could observe (the agents of such workers are killed before the pass).
  bool WouldDeclareDead(const Worker& w, const Moment& now) const;

  // The review and question timeouts of the passes from now on (a configuration read again);
  // 0 = off, as in ServiceOptions.
  void SetTimeouts(Millis review_timeout_ms, Millis question_timeout_ms) {
    options_.review_timeout_ms = review_timeout_ms;
    options_.question_timeout_ms = question_timeout_ms;
  }

 private:
  // How long, at `now`, silence has been observable: since the last failed pass, or forever.
  Millis Observable(const Moment& now) const;
  Result<ReconcileReport> RunPasses(const Moment& now);
  Status DeclareDeadWorkers(const Moment& now, ReconcileReport& report);
  Status ReleaseExpiredLeases(const Moment& now, ReconcileReport& report);
  Status RequeueOrphanedTasks(Millis now, ReconcileReport& report);
  Status FixInconsistencies(Millis now, ReconcileReport& report);
  Status MarkOverdueReviews(Millis now, ReconcileReport& report);
  Status FailUnansweredQuestions(Millis now, ReconcileReport& report);

  store::Store& store_;
  ServiceOptions options_;
  std::optional<Moment> last_failure_;
  // Whether the last pass failed: nothing is observable until the next pass finds the store.
  bool failed_last_ = false;
};

}  // namespace tx::service
