#pragma once
// PoolSupervisor: the decisions of a worker pool, with no I/O (docs/orchestrator.md). The
// orchestrator's loop tells it what happened (a worker started, a worker exited, the operator
// asked for N workers) and calls Step(now), which returns what to do now: start a slot's worker,
// drain one (SIGTERM), or report a slot that failed or a request that found no capacity. Tests
// drive it with made-up times and never start a process.
//
// Slots are named slot-1, slot-2, …; the pool wants a set of them (1..N at first; Scale grows by
// the lowest free indices and shrinks by the highest, Retire takes out one by name). Rules:
//   - A wanted slot with no process is started at once the first time, and after an exit at
//     `now + backoff`. The backoff starts at backoff_initial_ms and doubles at each restart up to
//     backoff_max_ms; a worker that ran for stable_after_ms or longer resets it (its exit is
//     restarted after backoff_initial_ms).
//   - A worker that exits after it registered crashed: it is restarted after its backoff, however
//     often (as a supervisor like Kubernetes' CrashLoopBackOff does), and never given up on.
//   - Crash-loop protection, for workers that cannot start: when a slot whose worker exited
//     before it registered (or could not be spawned) would be restarted for the
//     (max_restarts + 1)-th time within restart_window_ms, it becomes `failed` instead (Action
//     kFailed with the reason, e.g. "6 exits within 1m; last: exited 2"). A failed slot is tried
//     again after a cool-down that starts at failed_retry_initial_ms and doubles to
//     failed_retry_max_ms (a worker that then runs for stable_after_ms resets it), or at once
//     when Scale() or RetryFailed() is called. So the pool never gives up on a slot for good.
//   - Capacity: live processes (running + draining + orphans waited for) never exceed
//     max_workers. A slot wanted beyond it waits (state kPending) until capacity frees or its
//     deadline (the request's time + capacity_timeout_ms) passes; then it is dropped from the
//     pool, `desired` shrinks to what runs, and Step returns kNoCapacity naming how many of how
//     many could run.
//   - Scale down: surplus slots are drained highest first (kDrain once per slot); a draining
//     slot's exit removes it and is never restarted. Retire drains one named slot the same way.
//   - An orphan (a worker of this slot left running by a previous orchestrator, adopted with
//     Adopt) holds its slot until it exits; the slot then starts without backoff.
//   - After StopAll(), nothing is started again; every running slot gets kDrain (the loop around
//     handles the shutdown timeout and SIGKILL).
//
// Where the rules above meet (decisions of pool_supervisor.cc):
//   - One entry per index, so a slot never has two processes. A slot scaled away and then wanted
//     again while it drains keeps draining; when that process exits the slot starts again at once
//     (no backoff, no recorded exit: we stopped it).
//   - The latest request (the constructor, Scale, Grow, RetryFailed) sets the capacity deadline of
//     every slot waiting for capacity, so overlapping requests give up together with one
//     kNoCapacity, which drops every slot still pending (the set may then have holes: slot-1 and
//     slot-3). A restart (backoff, an orphan's or a re-wanted drain's exit) has no deadline of its
//     own; a kBackoff slot never gives up for capacity, a kPending one only at a later request's
//     deadline.
//   - StopAll() drops the slots without a process, keeps failed ones for status, leaves orphans
//     to the loop (they are signalled there) and removes every slot whose process exits.
//
// Not thread-safe: one thread (the orchestrator's loop) owns it.

#include <sys/types.h>

#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"

namespace tx::orchestrator {

// How long a request for a worker waits for room at max_workers, unless configured.
inline constexpr Millis kDefaultCapacityTimeoutMs = 30'000;

struct PoolPolicy {
  int max_workers = 10;
  Millis backoff_initial_ms = 100;
  Millis backoff_max_ms = 30'000;
  Millis stable_after_ms = 60'000;
  int max_restarts = 5;
  Millis restart_window_ms = 60'000;
  Millis failed_retry_initial_ms = 60'000;
  Millis failed_retry_max_ms = 15 * 60'000;
  Millis capacity_timeout_ms = kDefaultCapacityTimeoutMs;
  bool operator==(const PoolPolicy&) const = default;
};

enum class SlotState {
  kPending,   // wanted, waiting for capacity (max_workers)
  kStarting,  // a start was returned by Step; waiting for Started() or Exited()
  kRunning,   // its worker process is alive
  kBackoff,   // exited; restarts at next_start_at
  kDraining,  // SIGTERM sent (scale down or shutdown); removed when it exits
  kOrphan,    // a previous orchestrator's worker still runs in it; starts when that exits
  kFailed,    // could not start, again and again; tried again at next_start_at
};
const char* ToString(SlotState s);

struct Slot {
  std::string name;  // "slot-3"
  int index = 0;     // 3
  SlotState state = SlotState::kPending;
  pid_t pid = 0;                    // the running, draining or orphan process; 0 otherwise
  Millis started_at = 0;            // when its current process started
  Millis next_start_at = 0;         // kBackoff, kFailed: when to start again
  Millis backoff_ms = 0;            // the delay the next restart will wait
  Millis failed_retry_ms = 0;       // the cool-down the next failure will wait
  Millis pending_deadline = 0;      // kPending: when to give up for want of capacity
  int restarts = 0;                 // restarts since the slot was (re)created, for status
  std::deque<Millis> recent_exits;  // exits inside restart_window_ms
  std::string last_exit;            // how the last process ended, as ExitOutcome::Describe says
  std::string failure;              // kFailed: why
};

struct Action {
  enum class Kind {
    kStart,       // start a worker for `slot`, then call Started() or Exited()
    kDrain,       // send SIGTERM to `slot`'s worker (pid)
    kFailed,      // `slot` is crash-looping and was given up; `reason` says why
    kNoCapacity,  // a scale request could not be met in time; `reason` says how far it got
  };
  Kind kind;
  std::string slot;  // empty for kNoCapacity
  pid_t pid = 0;     // kDrain
  std::string reason;
  bool operator==(const Action&) const = default;
};

class PoolSupervisor {
 public:
  PoolSupervisor(PoolPolicy policy, int desired, Millis now);

  // Wants `n` workers from now on (n >= 0). Growing adds slots (pending until Step starts them;
  // their capacity deadline is now + capacity_timeout_ms); shrinking marks the surplus for
  // draining. Failed slots inside the new size are retried with a fresh history.
  void Scale(int n, Millis now);
  // Wants one more slot, the lowest index not wanted, and returns it (a caller that configures
  // the slot — tx's POST /api/workers — does so before the next Step). -1 while stopping.
  int Grow(Millis now);
  // Stops wanting slot `index`: without a process it goes at once, with one Step drains it, and
  // its exit removes it (never restarted). False when the slot is not wanted.
  bool Retire(int index);
  // Restarts every failed slot with a fresh history (an operator's retry).
  void RetryFailed(Millis now);
  // A previous orchestrator's worker (pid) still runs slot `index`: hold the slot until it
  // exits (report that with Exited()). Call before the first Step.
  void Adopt(int index, pid_t pid, Millis now);

  // The loop started slot's process (after a kStart).
  void Started(const std::string& slot, pid_t pid, Millis now);
  // How far a slot's process got before it exited.
  enum class Reached {
    kNothing,     // it could not be spawned, or exited before it registered: a failure to start
    kRegistered,  // it registered as a worker: a crash
  };
  // Slot's process exited (or could not be started: pid 0), `how` describing it. Decides
  // restart (backoff) or failure; Step reports a failure.
  void Exited(const std::string& slot, const std::string& how, Reached reached, Millis now);

  // Stop starting anything; drain everything that runs.
  void StopAll();

  // Decides by `policy` from now on (a configuration read again): backoffs and failures to come,
  // capacity at the next Step. Workers over a lowered max_workers are not stopped; no new one
  // starts until the pool is under it.
  void SetPolicy(const PoolPolicy& policy) { policy_ = policy; }

  // What to do now. Idempotent between events: calling it twice at the same time returns the
  // second time only what is new (a slot is started or drained once).
  std::vector<Action> Step(Millis now);

  // The earliest time at which Step would do something without a new event (a backoff ending,
  // a capacity deadline), or nullopt.
  std::optional<Millis> NextDeadline() const;

  int desired() const { return static_cast<int>(wanted_.size()); }
  bool wants(int index) const { return !stopping_ && wanted_.count(index) > 0; }
  bool stopping() const { return stopping_; }
  // Processes alive (running, draining and orphans) plus starts in flight (kStarting), which
  // hold capacity too.
  int live() const;
  const std::vector<Slot>& slots() const { return slots_; }  // ordered by index
  const Slot* Find(const std::string& slot) const;
  // Name of the slot whose process has `pid`, or nullptr.
  const Slot* FindByPid(pid_t pid) const;

 private:
  bool Wanted(const Slot& s) const { return wants(s.index); }
  Slot* At(int index);
  Slot* FindMutable(const std::string& slot);
  Slot NewSlot(int index, Millis now) const;
  void Remove(int index);
  // Makes the slots match the wanted set: idle unwanted ones go, missing wanted ones are added
  // pending, failed wanted ones are retried, and waiting ones get the deadline of `now`.
  void Sync(Millis now);
  void Retry(Slot& s);
  // Every slot waiting for capacity gets the deadline of the request made at `now`.
  void SetCapacityDeadlines(Millis now);
  void GiveUpForCapacity(Millis now, std::vector<Action>& actions);

  PoolPolicy policy_;
  std::set<int> wanted_;  // the indices the pool wants
  bool stopping_ = false;
  std::vector<Slot> slots_;
  // Indices of failed slots whose kFailed Step has not returned yet (each failure is told once).
  std::set<int> unreported_failures_;
};

std::string SlotName(int index);  // "slot-<index>"

}  // namespace tx::orchestrator
