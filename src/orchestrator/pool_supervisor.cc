#include "orchestrator/pool_supervisor.h"

#include <algorithm>
#include <limits>

#include "core/duration.h"

namespace tx::orchestrator {
namespace {

// The pending_deadline of a slot that waits for capacity as long as it takes: a restart.
constexpr Millis kNoDeadline = std::numeric_limits<Millis>::max();

bool HasProcessOrStart(SlotState s) {
  return s == SlotState::kStarting || s == SlotState::kRunning || s == SlotState::kDraining ||
         s == SlotState::kOrphan;
}

}  // namespace

const char* ToString(SlotState s) {
  switch (s) {
    case SlotState::kPending:
      return "pending";
    case SlotState::kStarting:
      return "starting";
    case SlotState::kRunning:
      return "running";
    case SlotState::kBackoff:
      return "backoff";
    case SlotState::kDraining:
      return "draining";
    case SlotState::kOrphan:
      return "orphan";
    case SlotState::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string SlotName(int index) { return "slot-" + std::to_string(index); }

PoolSupervisor::PoolSupervisor(PoolPolicy policy, int desired, Millis now) : policy_(policy) {
  for (int i = 1; i <= desired; ++i) {
    wanted_.insert(i);
    slots_.push_back(NewSlot(i, now));
  }
}

Slot PoolSupervisor::NewSlot(int index, Millis now) const {
  Slot s;
  s.name = SlotName(index);
  s.index = index;
  s.backoff_ms = policy_.backoff_initial_ms;
  s.failed_retry_ms = policy_.failed_retry_initial_ms;
  s.pending_deadline = now + policy_.capacity_timeout_ms;
  return s;
}

Slot* PoolSupervisor::At(int index) {
  auto it =
      std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.index == index; });
  return it == slots_.end() ? nullptr : &*it;
}

Slot* PoolSupervisor::FindMutable(const std::string& slot) {
  auto it =
      std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.name == slot; });
  return it == slots_.end() ? nullptr : &*it;
}

const Slot* PoolSupervisor::Find(const std::string& slot) const {
  return const_cast<PoolSupervisor*>(this)->FindMutable(slot);
}

const Slot* PoolSupervisor::FindByPid(pid_t pid) const {
  if (pid <= 0) return nullptr;
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.pid == pid; });
  return it == slots_.end() ? nullptr : &*it;
}

void PoolSupervisor::Remove(int index) {
  std::erase_if(slots_, [&](const Slot& s) { return s.index == index; });
  unreported_failures_.erase(index);
}

void PoolSupervisor::Retry(Slot& s) {
  s.state = SlotState::kPending;
  s.recent_exits.clear();
  s.backoff_ms = policy_.backoff_initial_ms;
  s.failed_retry_ms = policy_.failed_retry_initial_ms;
  s.restarts = 0;
  s.failure.clear();
  unreported_failures_.erase(s.index);
}

void PoolSupervisor::SetCapacityDeadlines(Millis now) {
  for (Slot& s : slots_) {
    if (Wanted(s) && s.state == SlotState::kPending) {
      s.pending_deadline = now + policy_.capacity_timeout_ms;
    }
  }
}

void PoolSupervisor::Scale(int n, Millis now) {
  if (stopping_) return;
  n = std::max(n, 0);
  while (desired() > n) wanted_.erase(std::prev(wanted_.end()));
  for (int i = 1; desired() < n; ++i) wanted_.insert(i);
  Sync(now);
}

int PoolSupervisor::Grow(Millis now) {
  if (stopping_) return -1;
  int index = 1;
  while (wanted_.count(index) > 0) ++index;
  wanted_.insert(index);
  Sync(now);
  return index;
}

bool PoolSupervisor::Retire(int index) {
  if (!wants(index)) return false;
  wanted_.erase(index);
  Slot* s = At(index);
  if (s != nullptr && !HasProcessOrStart(s->state)) Remove(index);
  return true;
}

void PoolSupervisor::Sync(Millis now) {
  // Unwanted slots without a process go at once; those with one are drained by Step, and a start
  // in flight is drained once Started() reports its pid.
  std::vector<int> gone;
  for (const Slot& s : slots_) {
    if (!Wanted(s) && !HasProcessOrStart(s.state)) gone.push_back(s.index);
  }
  for (int index : gone) Remove(index);

  bool added = false;
  for (int i : wanted_) {
    if (At(i) == nullptr) {
      slots_.push_back(NewSlot(i, now));
      added = true;
    }
  }
  if (added) {
    std::sort(slots_.begin(), slots_.end(),
              [](const Slot& a, const Slot& b) { return a.index < b.index; });
  }
  for (Slot& s : slots_) {
    if (Wanted(s) && s.state == SlotState::kFailed) Retry(s);
  }
  SetCapacityDeadlines(now);
}

void PoolSupervisor::RetryFailed(Millis now) {
  if (stopping_) return;
  for (Slot& s : slots_) {
    if (Wanted(s) && s.state == SlotState::kFailed) Retry(s);
  }
  SetCapacityDeadlines(now);
}

void PoolSupervisor::Adopt(int index, pid_t pid, Millis now) {
  if (!wants(index) || pid <= 0) return;
  Slot* s = At(index);
  // A slot that already has a process (or a start in flight) keeps it: never two per slot.
  if (s == nullptr || (s->state != SlotState::kPending && s->state != SlotState::kBackoff)) return;
  s->state = SlotState::kOrphan;
  s->pid = pid;
  s->started_at = now;
}

void PoolSupervisor::Started(const std::string& slot, pid_t pid, Millis now) {
  Slot* s = FindMutable(slot);
  if (s == nullptr || s->state != SlotState::kStarting) return;
  // Even if the slot is no longer wanted (scaled away or stopping meanwhile): Step drains it.
  s->state = SlotState::kRunning;
  s->pid = pid;
  s->started_at = now;
  s->failure.clear();  // it runs again: what status shows now is its last exit
}

void PoolSupervisor::Exited(const std::string& slot, const std::string& how, Reached reached,
                            Millis now) {
  Slot* s = FindMutable(slot);
  if (s == nullptr || !HasProcessOrStart(s->state)) return;  // nothing of ours ran there
  SlotState was = s->state;
  s->pid = 0;
  s->last_exit = how;
  if (!Wanted(*s)) {
    Remove(s->index);
    return;
  }
  if (was == SlotState::kOrphan || was == SlotState::kDraining) {
    // Not a crash of ours (a previous orchestrator's worker, or one we drained and were then
    // asked for again): start at once, with no backoff and nothing counted against the slot.
    s->state = SlotState::kPending;
    s->pending_deadline = kNoDeadline;
    return;
  }

  if (was == SlotState::kRunning && now - s->started_at >= policy_.stable_after_ms) {
    s->backoff_ms = policy_.backoff_initial_ms;
    s->failed_retry_ms = policy_.failed_retry_initial_ms;
  }
  if (reached == Reached::kNothing) {
    s->recent_exits.push_back(now);
    while (!s->recent_exits.empty() && now - s->recent_exits.front() >= policy_.restart_window_ms) {
      s->recent_exits.pop_front();
    }
    if (static_cast<int>(s->recent_exits.size()) > policy_.max_restarts) {
      s->state = SlotState::kFailed;
      s->failure = std::to_string(s->recent_exits.size()) + " exits within " +
                   FormatDuration(policy_.restart_window_ms) + " before registering; last: " + how;
      s->recent_exits.clear();
      s->next_start_at = now + s->failed_retry_ms;
      s->failed_retry_ms = std::min(s->failed_retry_ms * 2, policy_.failed_retry_max_ms);
      unreported_failures_.insert(s->index);
      return;
    }
  }
  s->state = SlotState::kBackoff;
  s->next_start_at = now + s->backoff_ms;
  s->backoff_ms = std::min(s->backoff_ms * 2, policy_.backoff_max_ms);
  ++s->restarts;
}

void PoolSupervisor::StopAll() {
  stopping_ = true;
  // Failed slots stay so that status still says why; the rest without a process has nothing
  // left to do.
  std::erase_if(slots_, [](const Slot& s) {
    return s.state == SlotState::kPending || s.state == SlotState::kBackoff;
  });
}

std::vector<Action> PoolSupervisor::Step(Millis now) {
  std::vector<Action> actions;
  for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) {
    if (it->state == SlotState::kRunning && !Wanted(*it)) {
      it->state = SlotState::kDraining;
      actions.push_back({Action::Kind::kDrain, it->name, it->pid, ""});
    }
  }
  for (const Slot& s : slots_) {
    if (s.state == SlotState::kFailed && unreported_failures_.erase(s.index) > 0) {
      actions.push_back({Action::Kind::kFailed, s.name, 0, s.failure});
    }
  }
  if (stopping_) return actions;

  // Lowest index first, so that the slots a request asked for first get the capacity first.
  int free = policy_.max_workers - live();
  for (Slot& s : slots_) {
    if (free <= 0) break;
    bool due = s.state == SlotState::kPending ||
               ((s.state == SlotState::kBackoff || s.state == SlotState::kFailed) &&
                s.next_start_at <= now);
    if (!Wanted(s) || !due) continue;
    // A failed slot's cool-down is over: it tries again, its failure kept for status until it
    // runs; its next failure waits twice as long.
    if (s.state == SlotState::kFailed) {
      ++s.restarts;
      s.backoff_ms = policy_.backoff_initial_ms;  // a fresh history, but for the cool-down
    }
    s.state = SlotState::kStarting;
    --free;
    actions.push_back({Action::Kind::kStart, s.name, 0, ""});
  }
  GiveUpForCapacity(now, actions);
  return actions;
}

// Runs after the starts, so a slot whose deadline passes just as capacity frees is started, not
// dropped.
void PoolSupervisor::GiveUpForCapacity(Millis now, std::vector<Action>& actions) {
  std::vector<int> expired;
  for (const Slot& s : slots_) {
    if (Wanted(s) && s.state == SlotState::kPending && s.pending_deadline <= now) {
      expired.push_back(s.index);
    }
  }
  if (expired.empty()) return;

  int asked = desired();
  for (int index : expired) {
    wanted_.erase(index);
    Remove(index);
  }
  int running = 0;
  for (const Slot& s : slots_) {
    if (Wanted(s) && s.state != SlotState::kPending && s.state != SlotState::kFailed) ++running;
  }
  actions.push_back({Action::Kind::kNoCapacity, "", 0,
                     "no capacity: " + std::to_string(running) + " of " + std::to_string(asked) +
                         " workers running (max-workers " + std::to_string(policy_.max_workers) +
                         ")"});
}

std::optional<Millis> PoolSupervisor::NextDeadline() const {
  if (stopping_) return std::nullopt;
  // With no free capacity a due restart waits for an exit, which is an event, not a deadline;
  // returning its past time would make the loop spin.
  bool can_start = live() < policy_.max_workers;
  std::optional<Millis> next;
  auto consider = [&](Millis t) { next = next ? std::min(*next, t) : t; };
  for (const Slot& s : slots_) {
    if (!Wanted(s)) continue;
    if (s.state == SlotState::kPending && s.pending_deadline != kNoDeadline) {
      consider(s.pending_deadline);
    }
    if ((s.state == SlotState::kBackoff || s.state == SlotState::kFailed) && can_start) {
      consider(s.next_start_at);
    }
  }
  return next;
}

int PoolSupervisor::live() const {
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(),
                                        [](const Slot& s) { return HasProcessOrStart(s.state); }));
}

}  // namespace tx::orchestrator
