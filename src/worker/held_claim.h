#pragma once
// HeldClaim: the claim a worker is running an agent for, as its claim loop (main thread) and its
// heartbeat thread share it: the claim (Holding), whether its lease was lost, whether the worker
// was evicted, and how many tasks it completed (its heartbeats report the count). Every field is
// guarded by one mutex; the heartbeat thread reports trouble by setting a flag here and writing
// to the main loop's wake-up eventfd.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/claim.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace tx::worker {

// The claim the worker is running an agent for.
struct Holding {
  std::string task_id;
  std::int64_t token = 0;
  Millis lease_ms = 0;
  Millis lease_expires_at = 0;  // as last confirmed by the store
  pid_t agent_pid = 0;          // 0 until the agent has started
  // The same instant on the steady clock, where the store keeps one (core/claim.h).
  std::optional<Millis> lease_expires_steady;
};

// How long the held lease still runs at `now`, judged as the store judges it (core/claim.h).
inline Millis HeldLeaseLeft(const Holding& h, const Moment& now) {
  if (h.lease_expires_steady && now.steady) return *h.lease_expires_steady - *now.steady;
  return h.lease_expires_at - now.wall;
}

class HeldClaim {
 public:
  void Hold(Holding h) TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    holding_ = std::move(h);
    lease_lost_.clear();
  }
  void Drop() TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    holding_.reset();
    lease_lost_.clear();
  }
  std::optional<Holding> holding() const TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return holding_;
  }
  void SetAgentPid(pid_t pid) TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (holding_) holding_->agent_pid = pid;
  }
  // Records a renewal of `token` (ignored when the worker has moved on to another claim).
  void Renewed(const Claim& claim) TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (holding_ && holding_->token == claim.token) {
      holding_->lease_expires_at = claim.lease_expires_at;
      holding_->lease_expires_steady = claim.lease_expires_steady;
    }
  }

  // Set by the heartbeat thread when the claim with `token` can no longer be trusted.
  void LoseLease(std::int64_t token, std::string why) TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (holding_ && holding_->token == token && lease_lost_.empty()) lease_lost_ = std::move(why);
  }
  std::string lease_lost() const TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return lease_lost_;
  }

  // Set by the heartbeat thread when the store says this worker is no longer live (declared dead
  // or stopped by someone else): the worker must stop.
  void Evict(std::string why) TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (evicted_.empty()) evicted_ = std::move(why);
  }
  std::string evicted() const TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return evicted_;
  }

  void CountCompleted() TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++tasks_completed_;
  }
  std::int64_t tasks_completed() const TX_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return tasks_completed_;
  }

 private:
  mutable Mutex mu_;
  std::optional<Holding> holding_ TX_GUARDED_BY(mu_);
  std::string lease_lost_ TX_GUARDED_BY(mu_);
  std::string evicted_ TX_GUARDED_BY(mu_);
  std::int64_t tasks_completed_ TX_GUARDED_BY(mu_) = 0;
};

}  // namespace tx::worker
