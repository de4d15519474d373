#include "worker/runtime.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "core/duration.h"
#include "core/orchestrator.h"
#include "exec/process_info.h"
#include "exec/unique_fd.h"
#include "worker/local_coordinator.h"
#include "worker/remote.h"
#include "worker/review.h"
#include "worker/spawn_plan.h"

namespace tx::worker {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr Millis kMaxStoreBackoffMs = 5 * 60'000;

sigset_t WorkerSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  return set;
}

Millis MsUntil(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t - SteadyClock::now()).count();
}

// The fleet as this worker reaches it: the store, or (with --server) the HTTP API. The main loop's
// (`main`) watches the store for new tasks, or keeps its connection to the server open; the
// heartbeat thread's does neither.
Result<std::unique_ptr<Coordinator>> OpenCoordinator(const WorkerConfig& config,
                                                     const service::ServiceOptions& options,
                                                     bool main) {
  if (!config.server_url.empty()) {
    TX_ASSIGN_OR_RETURN(std::unique_ptr<RemoteCoordinator> remote,
                        ConnectRemote(config.server_url, config.server_token, main));
    return std::unique_ptr<Coordinator>(std::move(remote));
  }
  TX_ASSIGN_OR_RETURN(std::unique_ptr<LocalCoordinator> local,
                      LocalCoordinator::Open(config.db_path, options, main));
  return std::unique_ptr<Coordinator>(std::move(local));
}

double Jitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.8, 1.2)(rng);
}

}  // namespace

WorkerRuntime::WorkerRuntime(WorkerConfig config) : config_(std::move(config)) {}

WorkerRuntime::~WorkerRuntime() {
  heartbeat_.reset();
  if (signal_fd_ >= 0) ::close(signal_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status WorkerRuntime::Start() {
  sigset_t set = WorkerSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal_fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (signal_fd_ < 0 || wake_fd_ < 0) {
    return Error::Internal(std::string("signalfd/eventfd: ") + std::strerror(errno));
  }
  hostname_ = exec::Hostname();

  service::ServiceOptions options;
  options.default_lease_ms = config_.lease_ms;
  options.default_heartbeat_interval_ms = config_.heartbeat_idle_ms;
  TX_ASSIGN_OR_RETURN(fleet_, OpenCoordinator(config_, options, true));
  TX_ASSIGN_OR_RETURN(std::unique_ptr<Coordinator> beat, OpenCoordinator(config_, options, false));

  service::Registration r;
  r.name = config_.name;
  r.slot = config_.slot;
  r.pool = PoolId(hostname_, config_.local_dir);
  r.hostname = hostname_;
  r.pid = getpid();
  r.capabilities = config_.capabilities;
  r.queues = config_.queues;
  r.heartbeat_interval_ms = config_.heartbeat_idle_ms;
  r.metadata = {{"agent", config_.agent}, {"tasks_completed", 0}, {"agent_pid", 0}};
  if (!config_.workdir.empty()) r.metadata["workdir"] = config_.workdir;
  std::vector<Worker> replaced;
  TX_ASSIGN_OR_RETURN(Worker me, fleet_->Register(r, &replaced));
  worker_id_ = me.id;
  for (const auto& old : replaced) KillLeftoverAgent(old);
  spdlog::info("worker {} registered (name {}, slot {}, queues {}, pid {})", me.id, me.name,
               me.slot.empty() ? "-" : me.slot, nlohmann::json(me.queues).dump(), getpid());

  heartbeat_ =
      std::make_unique<HeartbeatLoop>(std::move(beat), config_, worker_id_, state_, wake_fd_);
  heartbeat_->Start();
  return Ok();
}

// The previous incarnation of this slot was just declared dead and its claims requeued; if it
// left an agent running on this machine (a hung worker, or one whose parent-death signal did
// not fire), that agent must not keep editing files while another worker redoes its task.
void WorkerRuntime::KillLeftoverAgent(const Worker& old) {
  pid_t pid = 0;
  if (old.metadata.contains("agent_pid") && old.metadata["agent_pid"].is_number_integer()) {
    pid = old.metadata["agent_pid"].get<pid_t>();
  }
  if (pid <= 0 || old.hostname != hostname_) return;
  // Only an agent that worker started (TX_WORKER_ID in its environment), not a process that
  // reused the pid; its grandchildren too, should the agent itself be gone.
  if (exec::KillAgentGroup(pid, "TX_WORKER_ID=" + old.id)) {
    spdlog::warn("killed agent group {} left running by {} (replaced)", pid, old.id);
  }
}

std::vector<int> WorkerRuntime::ReadStopSignals() {
  std::vector<int> stops;
  signalfd_siginfo si{};
  while (::read(signal_fd_, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
      stops.push_back(static_cast<int>(si.ssi_signo));
    }
    // SIGCHLD only interrupts the wait; the agent's exit is seen through its pidfd or TryWait.
  }
  return stops;
}

void WorkerRuntime::OnStopSignal(int sig) {
  ++signals_seen_;
  if (signals_seen_ == 1) {
    spdlog::info("{} received: stopping (claiming nothing more)", strsignal(sig));
    EnterStopping();
  } else {
    spdlog::info("{} received again: not waiting for the agent", strsignal(sig));
  }
}

void WorkerRuntime::HandleSignals() {
  for (int sig : ReadStopSignals()) OnStopSignal(sig);
}

void WorkerRuntime::Acknowledge(WorkerStatus status) {
  service::HeartbeatUpdate update{status, {}};
  update.clear_request = true;
  Result<Worker> w = fleet_->Heartbeat(worker_id_, update);
  if (!w.ok()) spdlog::warn("could not record {}: {}", ToString(status), w.error().message());
}

void WorkerRuntime::CheckRequests(exec::Child* child) {
  Result<Worker> me = fleet_->GetWorker(worker_id_);
  if (!me.ok()) return;
  switch (me->request) {
    case WorkerRequest::kNone:
      return;
    case WorkerRequest::kPause:
      if (!paused_) {
        paused_ = true;
        paused_since_ = SteadyClock::now();
        if (child != nullptr) exec::Freeze(*child);
        spdlog::info("paused{}", child != nullptr ? " (agent frozen)" : "");
      }
      Acknowledge(WorkerStatus::kPaused);
      return;
    case WorkerRequest::kResume:
      if (paused_) {
        paused_ = false;
        resumed_at_ = SteadyClock::now();
        paused_total_ += resumed_at_ - paused_since_;
        if (child != nullptr) exec::Thaw(*child);
        spdlog::info("resumed");
      }
      Acknowledge(child != nullptr ? WorkerStatus::kBusy : WorkerStatus::kIdle);
      return;
    case WorkerRequest::kStop:
    case WorkerRequest::kStopNow: {
      bool now = me->request == WorkerRequest::kStopNow;
      spdlog::info("stop requested{}", now ? " (not waiting for the agent)" : "");
      signals_seen_ = std::max(signals_seen_, now ? 2 : 1);
      Acknowledge(WorkerStatus::kStopping);
      return;
    }
  }
}

void WorkerRuntime::EnterStopping() {
  Result<Worker> w = fleet_->Heartbeat(worker_id_, {WorkerStatus::kStopping, {}});
  if (!w.ok()) spdlog::warn("could not record stopping: {}", w.error().message());
}

WorkerRuntime::Wake WorkerRuntime::WaitIdle(Millis timeout_ms) {
  std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  if (fleet_->watch_fd() >= 0) fds.push_back({fleet_->watch_fd(), POLLIN, 0});
  int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<Millis>(0, timeout_ms)));
  if (n <= 0) return Wake::kTimeout;
  Wake wake = Wake::kTimeout;
  if (fds.size() > 2 && (fds[2].revents & POLLIN) != 0 && fleet_->DrainWatch()) {
    wake = Wake::kStoreChanged;
  }
  if ((fds[1].revents & POLLIN) != 0) {
    std::uint64_t v;
    (void)!::read(wake_fd_, &v, sizeof v);
    wake = Wake::kNotified;
  }
  if ((fds[0].revents & POLLIN) != 0) {
    HandleSignals();
    wake = Wake::kSignal;
  }
  return wake;
}

// How long an idle worker sleeps before looking again: until a retry's backoff ends, or the poll
// fallback with jitter; 0 when a task is eligible now.
Millis WorkerRuntime::IdleWait() {
  Millis wait = static_cast<Millis>(static_cast<double>(config_.poll_ms) * Jitter());
  Result<std::optional<Millis>> next = fleet_->NextEligibleAt(worker_id_);
  if (next.ok() && *next) {
    wait = std::min(wait, std::max<Millis>(0, **next - fleet_->NowMs()));
  }
  return wait;
}

Result<int> WorkerRuntime::Run() {
  TX_RETURN_IF_ERROR(Start());
  Millis store_backoff = 0;
  int code = 0;
  while (signals_seen_ == 0) {
    if (std::string why = state_.evicted(); !why.empty()) {
      spdlog::error("worker {} is no longer registered: {}", worker_id_, why);
      code = 1;
      break;
    }
    if (paused_) {
      // Claim nothing until resumed (or stopped).
      Wake w = WaitIdle(config_.poll_ms);
      if (w != Wake::kSignal) CheckRequests(nullptr);
      continue;
    }
    Result<std::optional<service::ClaimResult>> claimed =
        fleet_->WaitsForClaims() ? ClaimWaiting() : fleet_->ClaimNext(worker_id_, config_.lease_ms);
    if (!claimed.ok()) {
      if (claimed.error().code() == ErrorCode::kConflict) {
        // Refused while still registered (stale after the machine slept, say): heartbeat, retry.
        Result<Worker> me = fleet_->GetWorker(worker_id_);
        if (me.ok() && IsLive(me->status) && me->status != WorkerStatus::kStopping) {
          spdlog::warn("cannot claim yet: {}", claimed.error().message());
          heartbeat_->Kick();
          WaitIdle(1'000);
          continue;
        }
      }
      if (claimed.error().code() != ErrorCode::kUnavailable) {
        spdlog::error("cannot claim: {}", claimed.error().message());
        code = 1;
        break;
      }
      store_backoff = std::clamp<Millis>(store_backoff * 2, 1'000, kMaxStoreBackoffMs);
      spdlog::warn("store unavailable, retrying in {}: {}", FormatDuration(store_backoff),
                   claimed.error().message());
      WaitIdle(store_backoff);
      continue;
    }
    store_backoff = 0;
    if (*claimed && signals_seen_ > 0) {
      // Claimed as a stop began: give it straight back, uncounted.
      const service::ClaimResult& c = **claimed;
      Result<Task> r = fleet_->Release(c.task.id, c.claim.token, EndReason::kShutdown);
      if (!r.ok()) spdlog::warn("{}: release: {}", c.task.id, r.error().message());
      break;
    }
    if (*claimed) {
      paused_total_ = {};
      resumed_at_ = {};
      RunAttempt(std::move(**claimed));
      continue;
    }
    if (fleet_->WaitsForClaims()) {
      // The server waited for us and came back empty-handed: a request, or nothing to do yet —
      // or it was too busy to wait, and said how long to hold off.
      CheckRequests(nullptr);
      if (Millis back = fleet_->ClaimBackoffMs(); back > 0) WaitIdle(back);
      continue;
    }
    // Idle: sleep until something may have changed, re-checking cheaply (a read) on each change.
    for (;;) {
      Millis wait = IdleWait();
      if (wait <= 0) break;
      Wake w = WaitIdle(wait);
      if (w == Wake::kStoreChanged || w == Wake::kNotified) CheckRequests(nullptr);
      if (w == Wake::kSignal || w == Wake::kNotified || w == Wake::kTimeout) break;
      if (signals_seen_ > 0 || paused_) break;
    }
  }
  heartbeat_->Stop();
  if (code == 0) {
    Result<Worker> w = fleet_->Deregister(worker_id_, "graceful-shutdown");
    if (!w.ok()) {
      spdlog::error("deregister: {}", w.error().message());
      code = 1;
    } else {
      spdlog::info("worker {} stopped", worker_id_);
    }
  }
  return code;
}

Result<std::optional<service::ClaimResult>> WorkerRuntime::ClaimWaiting() {
  Result<std::optional<service::ClaimResult>> out = std::optional<service::ClaimResult>();
  exec::UniqueFd done(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!done.valid()) return Error::Internal(std::string("eventfd: ") + std::strerror(errno));
  Millis wait = static_cast<Millis>(static_cast<double>(config_.poll_ms) * Jitter());
  // Only Interrupt() is called on fleet_ from here while the thread runs.
  std::thread waiter([&] {
    out = fleet_->ClaimNext(worker_id_, config_.lease_ms, wait);
    std::uint64_t one = 1;
    (void)!::write(done.get(), &one, sizeof one);
  });
  // The waiter owns fleet_ until it is joined: a stop's own calls (recording `stopping`) wait.
  bool interrupted = false;
  std::vector<int> stops;
  for (;;) {
    pollfd fds[] = {{signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {done.get(), POLLIN, 0}};
    // Once interrupted, interrupt again every 50 ms: an interrupt that lands before the request
    // is under way (still connecting) cannot end it.
    if (::poll(fds, 3, interrupted ? 50 : -1) == 0) fleet_->Interrupt();
    if ((fds[2].revents & POLLIN) != 0) break;
    if ((fds[0].revents & POLLIN) != 0) {
      for (int sig : ReadStopSignals()) stops.push_back(sig);
    }
    if ((fds[1].revents & POLLIN) != 0) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);  // a request: the server ends the wait by itself
    }
    // A stop, or this worker evicted: stop waiting now. A claim made as the wait was cut short is
    // not lost: the server hands it back on the next claim, and deregistering releases it.
    if (!interrupted && (signals_seen_ > 0 || !stops.empty() || !state_.evicted().empty())) {
      interrupted = true;
      fleet_->Interrupt();
    }
  }
  waiter.join();
  for (int sig : stops) OnStopSignal(sig);
  if (interrupted && !out.ok()) return std::optional<service::ClaimResult>();
  return out;
}

void WorkerRuntime::RunAttempt(service::ClaimResult claimed) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  state_.Hold({task.id, claim.token, claim.lease_ms, claim.lease_expires_at, 0});
  if (task.repo.empty()) {
    RunAgent(claimed, nullptr);
    return;
  }
  std::string base =
      task.base_branch.empty() ? GitSettingsFor(config_, task.repo).base : task.base_branch;
  // Held until the worktree's clean-up below: a worker that claims the task's next attempt (a
  // cancel and a retry meanwhile) waits for it rather than have it removed under its agent.
  Result<exec::UniqueFd> held = LockTaskWorktree(task.repo, task.id);
  Result<Worktree> wt =
      held.ok() ? PrepareWorktree(task.repo, base, task.id) : Result<Worktree>(held.error());
  Status ready =
      wt.ok() ? WriteInstructions(*wt, AgentPrompt(task, claim.attempt, &*wt)) : Status(wt.error());
  if (!ready.ok()) {
    spdlog::error("{} attempt {}: {}", task.id, claim.attempt, ready.error().message());
    Result<Task> r = fleet_->Fail(task.id, claim.token, EndReason::kFailed,
                                  "git worktree: " + ready.error().message(), std::nullopt);
    if (!r.ok()) spdlog::error("{}: {}", task.id, r.error().message());
    state_.Drop();
    return;
  }
  spdlog::info("{} attempt {}: {} worktree {} on {}", task.id, claim.attempt,
               wt->created ? "made" : "reusing", wt->path, wt->branch);
  RunAgent(claimed, &*wt);
  // Done without review, cancelled, or failed for good: the worktree has served (the branch
  // stays, for review, merge or a retry by hand). A task in review, or to be tried again, keeps
  // it as it is.
  Result<Claim> ended = fleet_->Inspect(claim.token);
  if (!ended.ok()) return;
  bool last_attempt = claim.attempt >= task.max_attempts;
  bool finished = false;
  bool auto_merge = false;
  switch (ended->end_reason) {
    case EndReason::kExited:
      finished = !task.review;
      auto_merge = task.review && AsksForAutoMerge(task);
      break;
    case EndReason::kForced:
      finished = !task.review;
      break;
    case EndReason::kCancelled:
      finished = true;
      break;
    case EndReason::kFailed:
    case EndReason::kTimedOut:
    case EndReason::kStalled:
    case EndReason::kLeaseLost:
      finished = last_attempt;
      break;
    default:  // released (shutdown, by hand): the attempt does not count; still running
      break;
  }
  if (auto_merge) {
    held->Reset();  // the merge takes the task's lock itself
    AutoMerge(task, claim.token);
    return;
  }
  if (!finished) return;
  if (Status s =
          RemoveWorktree(task.repo, task.id, GitSettingsFor(config_, task.repo).spare_worktrees);
      !s.ok()) {
    spdlog::warn("{}: {}", task.id, s.error().message());
  }
}

void WorkerRuntime::AutoMerge(const Task& task, std::int64_t token) {
  GitSettings git = GitSettingsFor(config_, task.repo);
  if (git.check.empty()) {
    spdlog::warn(
        "{} asks for auto-merge on a green check, but no [git] check is set: it waits in "
        "review",
        task.id);
    return;
  }
  // A stop signal cuts the check short (it may run for minutes): the task then stays in review.
  // Its own signalfd, of the stop signals alone (the main one is readable for every SIGCHLD), is
  // only polled: the main loop still reads the signal afterwards.
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  exec::UniqueFd stop_fd(signalfd(-1, &stops, SFD_NONBLOCK | SFD_CLOEXEC));
  if (signals_seen_ > 0) {
    spdlog::info("{}: stopping, so not auto-merged: it waits in review", task.id);
    return;
  }
  Result<TaskMerge> m = fleet_->AutoMerge(task.id, token, git, stop_fd.get());
  if (!m.ok()) {
    spdlog::warn("{}: auto-merge: {}", task.id, m.error().message());
  } else if (m->merged) {
    spdlog::info("{}: auto-merged on a green check", task.id);
  } else {
    spdlog::info("{}: auto-merge refused, sent back to the queue: {}", task.id,
                 m->why.substr(0, m->why.find('\n')));
  }
}

void WorkerRuntime::RunAgent(const service::ClaimResult& claimed, const Worktree* worktree) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  Result<exec::SpawnSpec> spec = PlanSpawn(config_, task, claim, CurrentEnvironment(), worktree);
  Result<exec::Child> spawned =
      spec.ok() ? exec::Child::Spawn(*spec) : Result<exec::Child>(spec.error());
  if (!spawned.ok()) {
    spdlog::error("{} attempt {}: {}", task.id, claim.attempt, spawned.error().message());
    Result<Task> r = fleet_->Fail(task.id, claim.token, EndReason::kFailed,
                                  "spawn failed: " + spawned.error().message(), 127);
    if (!r.ok()) spdlog::error("{}: {}", task.id, r.error().message());
    state_.Drop();
    return;
  }
  exec::Child child = std::move(*spawned);
  log_shipped_ = 0;
  log_shipped_at_ = {};
  if (!child.limits_warning().empty() && !warned_limits_) {
    spdlog::warn("{}", child.limits_warning());
    warned_limits_ = true;
  }
  state_.SetAgentPid(child.pid());
  heartbeat_->Kick();
  spdlog::info("{} attempt {} (token {}): started {} as pid {}", task.id, claim.attempt,
               claim.token, spec->argv[0], child.pid());

  Millis timeout = task.timeout_ms > 0 ? task.timeout_ms : 30 * 60'000;
  timeout = std::min(timeout, config_.task_timeout_cap_ms);
  auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout);
  std::optional<SteadyClock::time_point> shutdown_deadline;
  auto grace = std::chrono::milliseconds(config_.kill_grace_ms);
  std::optional<exec::ExitOutcome> outcome;

  auto stall = std::chrono::milliseconds(config_.stall_timeout_ms);
  while (!outcome) {
    if (signals_seen_ > 0 && !shutdown_deadline) {
      shutdown_deadline =
          SteadyClock::now() + std::chrono::milliseconds(config_.shutdown_timeout_ms);
    }
    // A frozen agent cannot finish: a stop while paused does not wait for it.
    if (signals_seen_ > 1 || (signals_seen_ > 0 && paused_)) shutdown_deadline = SteadyClock::now();
    // Time spent paused counts against neither the task timeout nor the stall timer.
    auto task_deadline = deadline + paused_total_;
    auto stall_from = std::max(child.last_output_at(), resumed_at_);

    Millis wait = 1'000;
    if (!paused_) {
      wait = std::min(wait, MsUntil(task_deadline));
      if (config_.stall_timeout_ms > 0) wait = std::min(wait, MsUntil(stall_from + stall));
    }
    if (shutdown_deadline) wait = std::min(wait, MsUntil(*shutdown_deadline));
    std::vector<pollfd> fds = {
        {signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {fleet_->watch_fd(), POLLIN, 0}};
    if (child.output_fd() >= 0) fds.push_back({child.output_fd(), POLLIN, 0});
    if (child.exit_fd() >= 0) fds.push_back({child.exit_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<Millis>(0, wait)));

    child.PumpOutput();
    ShipLog(spec->log_path, claim, false);
    if ((outcome = child.TryWait())) break;
    if ((fds[0].revents & POLLIN) != 0) HandleSignals();
    bool check = false;
    if ((fds[1].revents & POLLIN) != 0) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
      check = true;
    }
    if ((fds[2].revents & POLLIN) != 0 && fleet_->DrainWatch()) check = true;
    std::string revoked;
    if (check) {
      CheckRequests(&child);
      // A cancel or an operator's --force ends the claim and wakes us: stop the agent now rather
      // than at the next heartbeat's check.
      Result<Claim> held = fleet_->Inspect(claim.token);
      if (held.ok() && held->status != ClaimStatus::kActive) {
        revoked = "claim " + std::string(ToString(held->status)) + " (" +
                  std::string(ToString(held->end_reason)) + ")";
      }
    }
    if (!revoked.empty()) {
      child.Signal(SIGKILL);
      exec::ExitOutcome killed = child.Wait();
      spdlog::warn("{} attempt {}: {}; agent killed ({})", task.id, claim.attempt, revoked,
                   killed.Describe());
      ShipLog(spec->log_path, claim, true);
      state_.Drop();
      return;
    }
    std::string lost = state_.lease_lost();
    std::string evicted = state_.evicted();
    if (!lost.empty() || !evicted.empty()) {
      // Nobody may keep editing files under a claim another worker may already hold.
      child.Signal(SIGKILL);
      exec::ExitOutcome killed = child.Wait();
      spdlog::warn("{} attempt {}: lease lost ({}); agent killed ({})", task.id, claim.attempt,
                   lost.empty() ? evicted : lost, killed.Describe());
      Result<Claim> r = fleet_->GiveUp(task.id, claim.token, EndReason::kLeaseLost);
      if (!r.ok()) spdlog::warn("{}: {}", task.id, r.error().message());
      ShipLog(spec->log_path, claim, true);
      state_.Drop();
      return;
    }
    auto now = SteadyClock::now();
    if (shutdown_deadline && now >= *shutdown_deadline) {
      exec::StopResult stopped = exec::Terminate(child, grace);
      spdlog::info("{} attempt {}: stopped for shutdown ({})", task.id, claim.attempt,
                   stopped.outcome.Describe());
      Result<Task> r = fleet_->Release(task.id, claim.token, EndReason::kShutdown);
      if (!r.ok()) spdlog::warn("{}: release: {}", task.id, r.error().message());
      ShipLog(spec->log_path, claim, true);
      state_.Drop();
      return;
    }
    if (paused_) continue;
    if (now >= deadline + paused_total_) {
      outcome = exec::Terminate(child, grace).outcome.AsTimedOut();
    } else if (config_.stall_timeout_ms > 0 &&
               now - std::max(child.last_output_at(), resumed_at_) >= stall) {
      outcome = exec::Terminate(child, grace).outcome.AsStalled();
    }
  }
  child.PumpOutput();
  ShipLog(spec->log_path, claim, true);
  Finish(claimed, *outcome);
}

void WorkerRuntime::ShipLog(const std::string& path, const Claim& claim, bool final) {
  if (!fleet_->ShipsLogs()) return;
  auto now = std::chrono::steady_clock::now();
  if (!final && now - log_shipped_at_ < std::chrono::milliseconds(250)) return;
  log_shipped_at_ = now;
  std::error_code ec;
  auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
  if (ec) return;
  if (size < log_shipped_) log_shipped_ = 0;  // cut to its tail at the size cap: send it anew
  constexpr std::size_t kChunk = 256 * 1024;
  std::ifstream in(path, std::ios::binary);
  while (in && log_shipped_ < size) {
    std::string chunk(static_cast<std::size_t>(std::min<std::int64_t>(kChunk, size - log_shipped_)),
                      '\0');
    in.seekg(log_shipped_);
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    if (chunk.empty()) return;
    Status s = fleet_->ShipLog(claim.task_id, claim.attempt, claim.token, log_shipped_, chunk);
    if (!s.ok()) {
      spdlog::warn("{} attempt {}: could not send its log: {}", claim.task_id, claim.attempt,
                   s.error().message());
      return;  // the next call sends it again from where the server's copy ends
    }
    log_shipped_ += static_cast<std::int64_t>(chunk.size());
    if (!final) return;  // a chunk a round while the agent runs
  }
}

void WorkerRuntime::Finish(const service::ClaimResult& claimed, const exec::ExitOutcome& outcome) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  std::string head =
      task.id + " attempt " + std::to_string(claim.attempt) + ": agent " + outcome.Describe();
  Result<Claim> now = fleet_->Inspect(claim.token);
  if (now.ok() && now->status != ClaimStatus::kActive) {
    // The agent reported its own outcome (or the claim was revoked meanwhile): it stands.
    spdlog::info("{}; claim already {} ({})", head, ToString(now->status),
                 ToString(now->end_reason));
    if (now->status == ClaimStatus::kCompleted) state_.CountCompleted();
    state_.Drop();
    heartbeat_->Kick();
    return;
  }
  std::optional<int> code;
  if (outcome.kind != exec::ExitOutcome::Kind::kSpawnFailed) code = outcome.exit_code;
  // A task going to review carries its branch's summary for the reviewer.
  std::optional<nlohmann::json> branch;
  if (task.review && outcome.Classify() == exec::ExitOutcome::Class::kSuccess) {
    branch = ReviewBranch(task, GitSettingsFor(config_, task.repo));
  }
  auto report = [&]() -> Result<Task> {
    switch (outcome.Classify()) {
      case exec::ExitOutcome::Class::kSuccess:
        return fleet_->Report(task.id, claim.token, service::Outcome::kDone, "", code,
                              branch ? &*branch : nullptr);
      case exec::ExitOutcome::Class::kTimedOut:
        return fleet_->Fail(task.id, claim.token, EndReason::kTimedOut,
                            "timed out after " + FormatDuration(std::min(
                                                     task.timeout_ms, config_.task_timeout_cap_ms)),
                            code);
      case exec::ExitOutcome::Class::kStalled:
        return fleet_->Fail(task.id, claim.token, EndReason::kStalled,
                            "stalled: no output for " + FormatDuration(config_.stall_timeout_ms),
                            code);
      default:
        return fleet_->Fail(task.id, claim.token, EndReason::kFailed, outcome.Describe(), code);
    }
  };
  // The store out of reach (a connection dropped, maybe during the commit, so the outcome may or
  // may not be recorded): ask again, a few times over some seconds, unless the claim shows it was.
  // Never reporting would leave the claim to its lease, and the task to run a second time.
  Result<Task> r = report();
  auto wait = std::chrono::milliseconds(100);
  for (int tries = 1; !r.ok() && r.error().code() == ErrorCode::kUnavailable && tries < 8;
       ++tries) {
    spdlog::warn("{}; recording it failed, trying again in {} ms: {}", head, wait.count(),
                 r.error().message());
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(5'000));
    Result<Claim> held = fleet_->Inspect(claim.token);
    if (held.ok() && held->status != ClaimStatus::kActive) {
      spdlog::info("{}; recorded after all: claim {} ({})", head, ToString(held->status),
                   ToString(held->end_reason));
      if (held->status == ClaimStatus::kCompleted) state_.CountCompleted();
      state_.Drop();
      heartbeat_->Kick();
      return;
    }
    r = report();
  }
  if (r.ok() && outcome.Classify() == exec::ExitOutcome::Class::kSuccess) {
    state_.CountCompleted();
  }
  if (r.ok()) {
    spdlog::info("{} → {}", head, ToString(r->status));
  } else {
    spdlog::warn("{}; could not record it: {}", head, r.error().message());
  }
  state_.Drop();
  heartbeat_->Kick();
}

}  // namespace tx::worker
