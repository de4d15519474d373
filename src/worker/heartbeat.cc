#include "worker/heartbeat.h"

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/duration.h"
#include "exec/process_info.h"

namespace tx::worker {
HeartbeatLoop::HeartbeatLoop(std::unique_ptr<Coordinator> fleet, const WorkerConfig& config,
                             std::string worker_id, HeldClaim& state, int wake_fd)
    : fleet_(std::move(fleet)),
      heartbeat_idle_ms_(config.heartbeat_idle_ms),
      heartbeat_running_ms_(config.heartbeat_running_ms),
      worker_id_(std::move(worker_id)),
      state_(state),
      wake_fd_(wake_fd) {}

HeartbeatLoop::~HeartbeatLoop() { Stop(); }

void HeartbeatLoop::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void HeartbeatLoop::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void HeartbeatLoop::Kick() {
  {
    MutexLock lock(mu_);
    kicked_ = true;
  }
  cv_.NotifyAll();
}

void HeartbeatLoop::KickLater(std::int64_t token, Millis delay_ms) {
  const auto at = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms);
  {
    MutexLock lock(mu_);
    // One already pending (a task that ended sooner) comes first: it beats for this claim
    // instead, a little early, and the thread is not woken once a task to learn that.
    if (later_ && later_->at <= at) {
      later_->token = token;
      return;
    }
    later_ = Later{token, at};
  }
  cv_.NotifyAll();
}

void HeartbeatLoop::Wake() {
  std::uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) {
    // The eventfd counter cannot overflow in practice; the main loop also polls on a timer.
  }
}

void HeartbeatLoop::Loop() {
  using std::chrono::steady_clock;
  auto due = steady_clock::now() + std::chrono::milliseconds(NextWait());
  for (;;) {
    // Set when the wake-up is a KickLater's alone: beat only if its claim is still held.
    std::optional<std::int64_t> only_while_held;
    {
      MutexLock lock(mu_);
      for (;;) {
        const auto until = later_ && later_->at < due ? later_->at : due;
        const bool woken = cv_.WaitUntil(mu_, until, [&]() TX_REQUIRES(mu_) {
          return stop_ || kicked_ || (later_ && later_->at < until);
        });
        if (stop_) return;
        if (kicked_ || !woken) break;
        // A sooner KickLater arrived: wait for it instead.
      }
      if (!kicked_ && later_ && steady_clock::now() < due) only_while_held = later_->token;
      kicked_ = false;
      later_.reset();  // a beat records the agent's pid anyway
    }
    if (only_while_held) {
      std::optional<Holding> h = state_.holding();
      // That task is over: nothing to record, and the regular beat stays when it was due.
      if (!h || h->token != *only_while_held) continue;
    }
    Beat();
    due = steady_clock::now() + std::chrono::milliseconds(NextWait());
  }
}

Millis HeartbeatLoop::NextWait() {
  std::optional<Holding> h = state_.holding();
  // Busy, the worker promises its running interval and is stale after two of them: beating at
  // half of it, one beat may come late by a whole interval and a half without that.
  Millis wait = std::max<Millis>(1, heartbeat_running_ms_ / 2);
  if (!h) return row_busy_ ? std::min(wait, heartbeat_idle_ms_) : heartbeat_idle_ms_;
  // Renew once half the lease has gone, however long the heartbeat interval is; judged on the
  // steady clock where the store keeps one, so that a step of the wall clock neither looks like
  // an overdue renewal (a beat every 20 ms) nor delays one.
  return std::clamp<Millis>(HeldLeaseLeft(*h, fleet_->Now()) - h->lease_ms / 2, 20, wait);
}

nlohmann::json HeartbeatLoop::Metadata() {
  Millis now = fleet_->NowMs();
  double cpu = exec::SelfCpuSeconds();
  double pct = 0;
  if (last_cpu_at_ > 0 && now > last_cpu_at_) {
    pct = 100.0 * (cpu - last_cpu_seconds_) / ((now - last_cpu_at_) / 1000.0);
  }
  last_cpu_seconds_ = cpu;
  last_cpu_at_ = now;
  std::optional<Holding> h = state_.holding();
  nlohmann::json m = {
      {"cpu_percent", static_cast<double>(static_cast<int>(pct * 100)) / 100},
      {"rss_mb", static_cast<double>(static_cast<int>(exec::SelfResidentMb() * 10)) / 10},
      {"tasks_completed", state_.tasks_completed()},
      {"agent_pid", h ? h->agent_pid : 0}};
  return m;
}

void HeartbeatLoop::Beat() {
  Result<Worker> hb = fleet_->Heartbeat(worker_id_, {std::nullopt, Metadata()});
  if (!hb.ok() && hb.error().code() != ErrorCode::kUnavailable) {
    state_.Evict(hb.error().message());
    Wake();
    return;
  }
  // A request the main loop has not seen (its wake-up was lost): make it look.
  if (hb.ok() && hb->request != WorkerRequest::kNone) Wake();
  std::optional<Holding> h = state_.holding();
  if (hb.ok()) row_busy_ = !h && hb->status == WorkerStatus::kBusy;
  if (!h) return;
  const Moment now = fleet_->Now();
  Result<Claim> claim = fleet_->Inspect(h->token);
  if (!claim.ok()) {
    if (claim.error().code() != ErrorCode::kUnavailable) {
      state_.LoseLease(h->token, claim.error().message());
      Wake();
    } else if (HeldLeaseLeft(*h, now) <= 0) {
      state_.LoseLease(h->token,
                       "the store was unreachable past the lease: " + claim.error().message());
      Wake();
    }
    return;
  }
  if (claim->status != ClaimStatus::kActive) {
    std::string why = "the claim was " + std::string(ToString(claim->status));
    if (claim->end_reason != EndReason::kNone) {
      why += " (" + std::string(ToString(claim->end_reason)) + ")";
    }
    // The agent may have reported its outcome itself: that ends the claim too, and is no loss.
    if (claim->status != ClaimStatus::kCompleted) {
      state_.LoseLease(h->token, why);
      Wake();
    }
    return;
  }
  if (IsExpired(*claim, now)) {
    state_.LoseLease(h->token,
                     "the lease expired " + FormatDuration(-LeaseLeft(*claim, now)) + " ago");
    Wake();
    return;
  }
  if (LeaseLeft(*claim, now) > h->lease_ms / 2) {
    state_.Renewed(*claim);
    return;
  }
  Result<Claim> renewed = fleet_->Renew(h->task_id, h->token);
  if (renewed.ok()) {
    state_.Renewed(*renewed);
  } else if (renewed.error().code() != ErrorCode::kUnavailable || IsExpired(*claim, now)) {
    state_.LoseLease(h->token, "renewal refused: " + renewed.error().message());
    Wake();
  }
}

}  // namespace tx::worker
