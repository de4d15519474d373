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

#include "agent/follower.h"
#include "agent/resume.h"
#include "core/duration.h"
#include "core/orchestrator.h"
#include "core/validation.h"
#include "exec/capped_log.h"
#include "exec/container.h"
#include "exec/process_info.h"
#include "exec/program.h"
#include "exec/unique_fd.h"
#include "git/review.h"
#include "service/agent_gate.h"
#include "worker/agent_gateway.h"
#include "worker/attempt_policy.h"
#include "worker/image_usage.h"
#include "worker/local_coordinator.h"
#include "worker/remote.h"
#include "worker/reset_time.h"
#include "worker/spawn_plan.h"

namespace tx::worker {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A worker that cannot reach the store tries again after 1 s, doubling to this: once it answers
// again (a full disk freed, a server back) work resumes within half a minute.
constexpr Millis kMaxStoreBackoffMs = 30'000;
// A claim still held this long after it was made gets a heartbeat, which records its agent's
// pid (for `tx worker status` and the dashboard) and from which the beats of a busy worker are
// planned; a shorter task costs no write (its claim was a beat). Killing a dead worker's agents
// does not need the pid: they are found by their TX_WORKER_ID.
constexpr Millis kFirstBusyBeatAfterMs = 100;

sigset_t WorkerSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGHUP);  // logrotate and a closed terminal must not stop it: Hangup()
  return set;
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

WorkerRuntime::WorkerRuntime(WorkerConfig config, WorkerHooks hooks)
    : config_(std::move(config)),
      hooks_(std::move(hooks)),
      budgets_(config_.config_file, config_.budgets) {}

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
    return PosixError("signalfd/eventfd", errno, ErrorCode::kInternal);
  }
  hostname_ = exec::Hostname();
  if (hooks_.log) hooks_.log->SetField("slot", config_.slot);

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
  r.busy_heartbeat_interval_ms = config_.heartbeat_running_ms;
  r.metadata = {{"agent", config_.agent}, {"tasks_completed", 0}, {"agent_pid", 0}};
  if (!config_.workdir.empty()) r.metadata["workdir"] = config_.workdir;
  CheckPrograms(/*force=*/true);
  if (!unavailable_.empty()) r.metadata["unavailable_agents"] = unavailable_;
  unavailable_published_ = unavailable_;
  std::vector<Worker> replaced;
  TX_ASSIGN_OR_RETURN(Worker me, fleet_->Register(r, &replaced));
  worker_id_ = me.id;
  beat->set_credential(fleet_->credential());
  config_.server_credential = fleet_->credential();
  for (const auto& old : replaced) KillLeftoverAgent(old);
  if (hooks_.log) hooks_.log->SetField("worker", me.id);
  spdlog::info("worker {} registered (name {}, slot {}, queues {}, pid {})", me.id, me.name,
               me.slot.empty() ? "-" : me.slot, nlohmann::json(me.queues).dump(), getpid());

  if (int swept = AgentGateway::SweepStale(); swept > 0) {
    spdlog::info("removed {} agent socket folder(s) of workers that were killed", swept);
  }

  // Said at start: the default agent's program missing here means this worker runs nothing
  // but commands and other profiles' tasks.
  if (auto it = unavailable_.find(config_.agent); it != unavailable_.end()) {
    spdlog::warn("the default agent profile '{}' cannot run here: {}", config_.agent, it->second);
  }
  std::string others;
  for (const auto& [name, why] : unavailable_) {
    if (name != config_.agent) others += (others.empty() ? "" : ", ") + name;
  }
  if (!others.empty()) {
    spdlog::info(
        "agent profiles whose program is not on PATH here (their tasks are left to other "
        "workers): {}",
        others);
  }
  heartbeat_ =
      std::make_unique<HeartbeatLoop>(std::move(beat), config_, worker_id_, state_, wake_fd_);
  heartbeat_->Start();
  return Ok();
}

// The previous incarnation of this slot was just declared dead and its claims requeued; if it
// left an agent running on this machine (a hung worker, or one whose parent-death signal did
// not fire), that agent must not keep editing files while another worker redoes its task.
void WorkerRuntime::KillLeftoverAgent(const Worker& old) {
  if (old.hostname != hostname_) return;
  // Every process that worker's agents started (TX_WORKER_ID in their environment), found
  // whatever pid it recorded: not a process that reused one.
  if (int groups = exec::KillGroupsCarrying("TX_WORKER_ID=" + old.id); groups > 0) {
    spdlog::warn("killed {} agent process group(s) left running by {} (replaced)", groups, old.id);
  }
}

std::vector<int> WorkerRuntime::ReadStopSignals() {
  std::vector<int> stops;
  signalfd_siginfo si{};
  while (::read(signal_fd_, &si, sizeof si) == sizeof si) {
    bool from_parent = pooled_ && si.ssi_signo == SIGTERM &&
                       static_cast<pid_t>(si.ssi_pid) == parent_pid_ && parent_pid_ > 1;
    if (from_parent && parent_stop_seen_) {
      spdlog::info("Terminated again by the orchestrator (pid {}) as it dies: still draining",
                   parent_pid_);
      continue;
    }
    parent_stop_seen_ = parent_stop_seen_ || from_parent;
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
      stops.push_back(static_cast<int>(si.ssi_signo));
    }
    if (si.ssi_signo == SIGHUP) Hangup();
    // SIGCHLD only interrupts the wait; the agent's exit is seen through its pidfd or TryWait.
  }
  return stops;
}

void WorkerRuntime::Hangup() {
  reload_pending_ = true;
  if (!hooks_.log || hooks_.log->path().empty()) return;
  Status reopened = hooks_.log->Reopen();
  if (reopened.ok()) {
    hangup_done_ = hooks_.log->path() + " reopened";
  } else {
    spdlog::error("Hangup received: {}; still writing to the old file", reopened.error().message());
  }
}

void WorkerRuntime::ReloadConfig() {
  reload_pending_ = false;
  std::string done = std::exchange(hangup_done_, "");
  auto say = [&](const std::string& what) { done += (done.empty() ? "" : "; ") + what; };
  if (hooks_.read_config) {
    Result<WorkerConfig> fresh = hooks_.read_config();
    if (!fresh.ok()) {
      spdlog::error("Hangup received: the config was not reloaded, the running one is kept: {}",
                    fresh.error().message());
    } else {
      WorkerConfigReload r = ReloadWorkerConfig(config_, *fresh);
      std::string applied;
      for (const auto& k : r.applied) applied += (applied.empty() ? "" : ", ") + k;
      say("config reloaded (" + (applied.empty() ? "nothing changed" : applied) + ")");
      if (!r.at_restart.empty()) {
        std::string keys;
        for (const auto& k : r.at_restart) keys += (keys.empty() ? "" : ", ") + k;
        spdlog::warn("the config changes {}, which takes effect when the worker starts again",
                     keys);
      }
      if (std::find(r.applied.begin(), r.applied.end(), "agents") != r.applied.end()) {
        // Looked at afresh: programs found or missing, logins refused before.
        held_off_at_.clear();
        unavailable_.clear();
        CheckPrograms(/*force=*/true);
      }
      agent_state_at_ = {};  // the gate is made again before the next claim
    }
  }
  if (!done.empty()) spdlog::info("Hangup received: {}", done);
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
  Result<std::optional<Millis>> next = fleet_->NextEligibleAt(worker_id_, &gate_);
  Millis now = fleet_->NowMs();
  if (next.ok() && *next) wait = std::min(wait, std::max<Millis>(0, **next - now));
  // A limit that ends, or the next day of a reached budget, may let its tasks run. Once that
  // moment has passed, the gate is made again before the next claim (RefreshAgentState): not
  // waiting at all until then would spin on claims.
  if (gate_opens_at_ > now) {
    wait = std::min(wait, gate_opens_at_ - now);
  } else if (gate_opens_at_ > 0) {
    gate_opens_at_ = 0;
    agent_state_at_ = {};
  }
  return wait;
}

Result<int> WorkerRuntime::Run() {
  TX_RETURN_IF_ERROR(Start());
  Millis store_backoff = 0;
  int code = 0;
  while (signals_seen_ == 0) {
    if (reload_pending_) ReloadConfig();
    if (std::string why = state_.evicted(); !why.empty()) {
      spdlog::error("worker {} is no longer registered: {}", worker_id_, why);
      code = 1;
      break;
    }
    if (paused_) {
      // Claim nothing until resumed (or stopped).
      GiveBackClaimedWithReport(EndReason::kReleased);
      Wake w = WaitIdle(config_.poll_ms);
      if (w != Wake::kSignal) CheckRequests(nullptr);
      continue;
    }
    Result<std::optional<service::ClaimResult>> claimed{std::in_place};
    if (claimed_with_report_) {
      claimed = std::move(*claimed_with_report_);
      claimed_with_report_.reset();
      // Nothing claimed with the report: perhaps for an operator's request, read it now.
      if (!*claimed) CheckRequests(nullptr);
    } else {
      CheckPrograms(/*force=*/false);
      RefreshAgentState(/*force=*/false);
      claimed = fleet_->WaitsForClaims()
                    ? ClaimWaiting()
                    : fleet_->ClaimNext(worker_id_, config_.lease_ms, 0, &gate_);
    }
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
  GiveBackClaimedWithReport(EndReason::kShutdown);
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

void WorkerRuntime::CheckPrograms(bool force) {
  auto now = SteadyClock::now();
  if (!force && now - programs_checked_at_ < std::chrono::seconds(30)) return;
  programs_checked_at_ = now;
  std::vector<std::string> env = CurrentEnvironment();
  for (const auto& [name, profile] : config_.profiles) {
    if (profile.argv.empty()) continue;
    // A login refused, or a program found that then failed to start (its interpreter missing,
    // say), is tried again after a quarter of an hour, not at the next look.
    if (auto held = held_off_at_.find(name); held != held_off_at_.end()) {
      if (now - held->second < std::chrono::minutes(15)) continue;
      held_off_at_.erase(held);
      unavailable_.erase(name);
      continue;
    }
    if (!agent::ProgramCheckableAhead(profile)) continue;
    Result<std::string> found = exec::FindProgram(profile.argv[0], env, config_.workdir);
    if (!found.ok()) {
      unavailable_[name] =
          "spawn '" + profile.argv[0] + "': " + found.error().message() + " (not on PATH)";
    } else if (unavailable_.erase(name) > 0) {
      spdlog::info("agent profile {} can run here again ({})", name, *found);
    }
  }
  if (unavailable_ != unavailable_published_ && !worker_id_.empty()) {
    // A merge patch: a profile that can run again is removed with a null.
    nlohmann::json patch = nlohmann::json::object();
    for (const auto& [name, why] : unavailable_published_) {
      if (!unavailable_.contains(name)) patch[name] = nullptr;
    }
    for (const auto& [name, why] : unavailable_) patch[name] = why;
    service::HeartbeatUpdate update;
    update.metadata = {{"unavailable_agents", patch}};
    Result<Worker> w = fleet_->Heartbeat(worker_id_, update);
    if (!w.ok()) {
      spdlog::warn("could not record the unavailable agents: {}", w.error().message());
    } else {
      unavailable_published_ = unavailable_;
    }
    agent_state_at_ = {};  // the gate changes with them
  }
}

void WorkerRuntime::MarkUnavailable(const std::string& profile, const std::string& why) {
  if (unavailable_[profile] == why) return;
  unavailable_[profile] = why;
  spdlog::warn("agent profile {} cannot run here: {} (its tasks are left to other workers)",
               profile, why);
  agent_state_at_ = {};
}

void WorkerRuntime::RefreshAgentState(bool force) {
  auto now = SteadyClock::now();
  if (!force && agent_state_at_ != SteadyClock::time_point{} &&
      now - agent_state_at_ < std::chrono::seconds(1)) {
    return;
  }
  // The fleet's budgets as the config file says them now: a raised budget lets work go on.
  Result<Coordinator::AgentState> st = fleet_->GetAgentState(budgets_.Current());
  if (!st.ok()) {
    spdlog::warn("could not read the agents' limits and budgets: {}", st.error().message());
    return;
  }
  agent_state_ = std::move(*st);
  agent_state_at_ = now;
  service::GateInputs in;
  in.now = fleet_->NowMs();
  in.limits = agent_state_.limits;
  for (const auto& [name, profile] : config_.profiles) in.profiles[name] = AccountNames(profile);
  in.default_profile = config_.agent;
  for (const auto& [name, why] : unavailable_) in.unavailable.insert(name);
  in.daily_budget_reached = agent_state_.budget.reached;
  in.budget_queues = agent_state_.budget.reached_queues;
  service::Gate gate = service::ComputeGate(in);
  gate_.blocked_agents = gate.blocked_agents;
  gate_.blocked_agent_queues = gate.blocked_agent_queues;
  gate_opens_at_ = gate.next_change;
  bool budget = agent_state_.budget.reached || !agent_state_.budget.reached_queues.empty();
  if (budget && (gate_opens_at_ == 0 || agent_state_.budget.next_day_at < gate_opens_at_)) {
    gate_opens_at_ = agent_state_.budget.next_day_at;
  }
}

Result<std::optional<service::ClaimResult>> WorkerRuntime::ClaimWaiting() {
  Result<std::optional<service::ClaimResult>> out = std::optional<service::ClaimResult>();
  exec::UniqueFd done(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!done.valid()) return PosixError("eventfd", errno, ErrorCode::kInternal);
  Millis wait = static_cast<Millis>(static_cast<double>(config_.poll_ms) * Jitter());
  // Only Interrupt() is called on fleet_ from here while the thread runs.
  std::thread waiter([&] {
    out = fleet_->ClaimNext(worker_id_, config_.lease_ms, wait, &gate_);
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
  log::ScopedLogField field("task", task.id);
  state_.Hold({task.id, claim.token, claim.lease_ms, claim.lease_expires_at, 0,
               claim.lease_expires_steady});
  // The claim was a beat; busy, this worker promises its running interval from now on.
  heartbeat_->KickLater(claim.token,
                        std::min(kFirstBusyBeatAfterMs, config_.heartbeat_running_ms / 2));
  ended_as_.reset();
  if (task.repo.empty()) {
    RunAgent(claimed, nullptr);
    return;
  }
  std::string base =
      task.base_branch.empty() ? GitSettingsFor(config_, task.repo).base : task.base_branch;
  // Held until the worktree's clean-up below: a worker that claims the task's next attempt (a
  // cancel and a retry meanwhile) waits for it rather than have it removed under its agent.
  Result<exec::UniqueFd> held = git::LockTaskWorktree(task.repo, task.id);
  Result<git::Worktree> wt = held.ok() ? git::PrepareWorktree(task.repo, base, task.id)
                                       : Result<git::Worktree>(held.error());
  Status ready = wt.ok() ? git::WriteInstructions(*wt, AgentPrompt(task, claim.attempt, &*wt))
                         : Status(wt.error());
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
  // Failed for good, as the store said when this worker recorded the outcome; else (the agent
  // reported it, or the lease was lost) as the counted attempts say — not claim.attempt, which
  // counts the claims given back uncounted too.
  bool failed_for_good =
      ended_as_ ? *ended_as_ == TaskStatus::kFailed : task.attempt >= task.max_attempts;
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
    case EndReason::kOverBudget:
      finished = failed_for_good;
      break;
    case EndReason::kAsked:  // waits for an answer; the next attempt resumes here
    default:                 // released (shutdown, by hand): the attempt does not count
      break;
  }
  if (auto_merge) {
    held->Reset();  // the merge takes the task's lock itself
    AutoMerge(task, claim.token);
    return;
  }
  if (!finished) return;
  if (Status s = git::RemoveWorktree(task.repo, task.id,
                                     GitSettingsFor(config_, task.repo).spare_worktrees);
      !s.ok()) {
    spdlog::warn("{}: {}", task.id, s.error().message());
  }
}

void WorkerRuntime::AutoMerge(const Task& task, std::int64_t token) {
  git::Settings git = GitSettingsFor(config_, task.repo);
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
  Result<git::TaskMerge> m = fleet_->AutoMerge(task.id, token, git, stop_fd.get());
  if (!m.ok()) {
    spdlog::warn("{}: auto-merge: {}", task.id, m.error().message());
  } else if (m->merged) {
    spdlog::info("{}: auto-merged on a green check", task.id);
  } else {
    spdlog::info("{}: auto-merge refused, sent back to the queue: {}", task.id,
                 m->why.substr(0, m->why.find('\n')));
  }
}

void WorkerRuntime::RunAgent(const service::ClaimResult& claimed, const git::Worktree* worktree) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  auto fail_counted = [&](const std::string& why) {
    spdlog::error("{} attempt {}: {}", task.id, claim.attempt, why);
    Result<Task> r =
        fleet_->Fail(task.id, claim.token, EndReason::kFailed, "spawn failed: " + why, 127);
    if (!r.ok()) spdlog::error("{}: {}", task.id, r.error().message());
    state_.Drop();
  };
  Result<AttemptPlan> base = ProfileFor(config_, task);
  if (!base.ok() && !task.agent.empty() && ValidateName("agent", task.agent).ok()) {
    // A profile this worker's config does not define (another worker's may): not the task's
    // fault. Given back uncounted, and this worker takes no more of that profile's tasks.
    std::string why = "no agent profile '" + task.agent + "' in this worker's config";
    spdlog::warn("{} attempt {}: {}", task.id, claim.attempt, why);
    MarkUnavailable(task.agent, why);
    held_off_at_[task.agent] = SteadyClock::now();
    std::optional<Result<Task>> r = Record(claim.token, task.id + ": " + why, [&] {
      return fleet_->EndUnavailable(task.id, claim.token, EndReason::kAgentUnavailable, task.agent,
                                    why);
    });
    if (r && !r->ok()) spdlog::warn("{}: {}", task.id, r->error().message());
    state_.Drop();
    return;
  }
  if (!base.ok()) {
    fail_counted(base.error().message());
    return;
  }
  RunChoice choice;
  const agent::AgentProfile& profile = base->profile;
  bool named = !base->is_command && !profile.name.empty();
  if (named) {
    if (HoldBack(claimed, profile, choice.account)) return;
    // A retry, or a task sent back from review, continues the agent's last session.
    if (claim.attempt > 1 && !agent::ResumeTemplate(profile).empty()) {
      Result<std::vector<AttemptUsage>> history = fleet_->TaskUsage(task.id);
      if (history.ok()) {
        choice.resume = agent::PlanResume(task, claim.attempt, profile, *history);
      }
      // Its session lives under its account: resumed there, if that account is free.
      if (choice.resume && choice.resume->account != choice.account) {
        std::optional<std::string> free = service::FreeAccount(
            profile.name, {choice.resume->account}, agent_state_.limits, fleet_->NowMs());
        if (free && !choice.resume->account.empty()) {
          choice.account = choice.resume->account;
        } else if (!choice.resume->account.empty() || !choice.account.empty()) {
          choice.resume.reset();
        }
      }
    }
  }
  // A sandbox its queue or the task asks for beyond the worker's own is checked once, at its
  // first use (the worker's was at its start).
  Result<SandboxSettings> sandbox = SandboxFor(config_, task);
  if (!sandbox.ok()) {
    fail_counted(sandbox.error().message());
    return;
  }
  if (sandbox->kind != config_.sandbox.kind) {
    auto checked = sandbox_checked_.find(sandbox->kind);
    if (checked == sandbox_checked_.end()) {
      checked = sandbox_checked_.emplace(sandbox->kind, CheckSandbox(*sandbox)).first;
    }
    if (!checked->second.ok()) {
      fail_counted(std::string("sandbox ") + SandboxName(sandbox->kind) + ": " +
                   checked->second.error().message());
      return;
    }
  }
  // The agent's tx reaches the store through this worker alone, for this attempt alone.
  if (gateway_ == nullptr) {
    Result<std::unique_ptr<AgentGateway>> made = AgentGateway::Start(config_.tx_binary);
    if (!made.ok()) {
      fail_counted("the agent's gateway: " + made.error().message());
      return;
    }
    gateway_ = std::move(*made);
  }
  AgentGateway::Attempt access;
  access.agent = {task.id, std::to_string(claim.token), config_.allowed_commands,
                  sandbox->kind == SandboxKind::kNone ? "" : SandboxName(sandbox->kind)};
  access.env = WorkerTxEnv(config_, task, claim);
  access.cwd = worktree != nullptr ? worktree->path
                                   : (task.workdir.empty() ? config_.workdir : task.workdir);
  AgentGateway::Admission admitted = gateway_->Admit(std::move(access));
  for (;;) {
    Result<AttemptPlan> plan =
        PlanSpawn(config_, task, claim, CurrentEnvironment(), worktree, choice, admitted.access());
    if (!plan.ok()) {
      fail_counted(plan.error().message());
      return;
    }
    // When it last ran, for tx sandbox gc; the attempt runs whether or not this is recorded.
    Status used =
        plan->image.empty() ? Ok() : RecordImageUse(ImageUsesDir(config_.local_dir), plan->image);
    if (!used.ok()) spdlog::warn("{}: {}", task.id, used.error().message());
    RunEnd end;
    // A profile's program missing (or not executable) here is this machine's fault, not the
    // task's: the attempt is not counted and this worker stops taking that profile's tasks.
    // (The program as this attempt runs it: its template expanded, in its workdir, with its
    // account's environment.)
    if (!plan->is_command && !plan->spec.argv.empty()) {
      Result<std::string> program =
          exec::FindProgram(plan->spec.argv[0], plan->spec.env, plan->spec.cwd);
      if (!program.ok()) {
        end.how = RunEnd::How::kSpawnFailed;
        end.spawn_error = "spawn '" + plan->spec.argv[0] + "': " + program.error().message();
      }
    }
    if (end.how != RunEnd::How::kSpawnFailed) end = FollowRun(claimed, *plan);
    // A container outlives its engine's client when that was killed (a timeout's SIGKILL): it
    // goes now, whatever ended the run.
    if (IsContainer(plan->sandbox.kind)) {
      Result<int> removed = exec::RemoveContainersLabelled(
          EngineCommand(plan->sandbox),
          {"tx.task=" + task.id, "tx.attempt=" + std::to_string(claim.attempt),
           "tx.worker=" + claim.worker_id});
      if (!removed.ok()) spdlog::warn("{}: {}", task.id, removed.error().message());
    }
    // A session that cannot be resumed (gone, or made on another machine) fails at once: the
    // attempt starts afresh instead.
    bool resume_failed = plan->resumed && end.how == RunEnd::How::kExited &&
                         (end.outcome.Classify() != exec::ExitOutcome::Class::kSuccess ||
                          end.summary.result_is_error) &&
                         end.summary.turns == 0 && !end.summary.limit &&
                         end.summary.auth_error.empty();
    if (resume_failed) {
      Result<Claim> held = fleet_->Inspect(claim.token);
      if (held.ok() && held->status == ClaimStatus::kActive) {
        std::string why =
            end.summary.result_text.empty() ? end.outcome.Describe() : end.summary.result_text;
        spdlog::warn("{} attempt {}: could not resume session {} ({}); starting afresh", task.id,
                     claim.attempt, plan->session_id, agent::OneLine(why, 200));
        Result<exec::CappedLog> log = exec::CappedLog::Open(plan->log_path, config_.log_cap_bytes);
        if (log.ok()) {
          log->Append("[tx] could not resume session " + plan->session_id + " (" +
                      agent::OneLine(why, 200) + "): starting afresh\n");
        }
        choice.resume.reset();
        continue;
      }
    }
    FinishRun(claimed, *plan, end);
    return;
  }
}

std::vector<std::string> WorkerRuntime::AccountNames(const agent::AgentProfile& profile) {
  std::vector<std::string> names;
  for (const auto& a : profile.accounts) names.push_back(a.name);
  return names;
}

bool WorkerRuntime::HoldBack(const service::ClaimResult& claimed,
                             const agent::AgentProfile& profile, std::string& account) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  RefreshAgentState(/*force=*/true);
  Millis now = fleet_->NowMs();
  std::vector<std::string> accounts = AccountNames(profile);
  std::optional<std::string> free =
      service::FreeAccount(profile.name, accounts, agent_state_.limits, now);
  if (free) {
    account = *free;
    const BudgetState& b = agent_state_.budget;
    bool budget = b.reached || std::find(b.reached_queues.begin(), b.reached_queues.end(),
                                         task.queue) != b.reached_queues.end();
    if (!budget) return false;
    spdlog::info("{}: the day's agent budget is reached: given back until {}", task.id,
                 FormatTime(b.next_day_at));
    std::optional<Result<Task>> r = Record(claim.token, task.id + ": release", [&] {
      return fleet_->Release(task.id, claim.token, EndReason::kReleased);
    });
    if (r && !r->ok()) spdlog::warn("{}: release: {}", task.id, r->error().message());
    state_.Drop();
    return true;
  }
  // Every account limited, as another worker found since this one's gate was made: the task
  // goes back uncounted until the first reset, and no agent starts.
  const AgentLimit* first = nullptr;
  for (const auto& l : agent_state_.limits) {
    if (l.profile == profile.name && IsActive(l, now) &&
        (first == nullptr || l.until < first->until)) {
      first = &l;
    }
  }
  service::LimitReport report;
  report.profile = profile.name;
  report.account = first != nullptr ? first->account : "";
  report.accounts = accounts;
  report.reset_at = first != nullptr ? first->until : 0;
  report.reason = first != nullptr ? first->reason : "limited";
  spdlog::info("{}: agent {} is limited until {}: given back", task.id, profile.name,
               FormatTime(report.reset_at));
  std::optional<Result<Task>> r = Record(claim.token, task.id + ": given back", [&] {
    return fleet_->EndLimited(task.id, claim.token, report);
  });
  if (r && !r->ok()) spdlog::warn("{}: {}", task.id, r->error().message());
  state_.Drop();
  return true;
}

WorkerRuntime::RunEnd WorkerRuntime::FollowRun(const service::ClaimResult& claimed,
                                               const AttemptPlan& plan) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  RunEnd end;
  const exec::SpawnSpec& spec = plan.spec;
  // The readable log, written here, when the agent's raw output goes to a file of its own.
  exec::CappedLog readable;
  if (!plan.raw_log_path.empty()) {
    Result<exec::CappedLog> log = exec::CappedLog::Open(plan.log_path, config_.log_cap_bytes);
    if (log.ok()) readable = std::move(*log);
  }
  std::string header = "[tx] attempt " + std::to_string(claim.attempt) + ": " + spec.argv[0];
  if (!plan.profile.name.empty()) header += " (profile " + plan.profile.name;
  if (!plan.account.empty()) header += ", account " + plan.account;
  if (plan.resumed) header += ", resuming session " + plan.session_id;
  if (!plan.profile.name.empty()) header += ")";
  if (!plan.raw_log_path.empty()) readable.Append(header + "\n");
  agent::LimitPatterns patterns;
  if (Result<agent::LimitPatterns> p = agent::LimitPatterns::Compile(plan.profile.limit_patterns);
      p.ok()) {
    patterns = std::move(*p);
  }
  agent::Follower follower(plan.is_command ? agent::Family::kGeneric : plan.profile.family,
                           &patterns, &config_.prices);
  follower.SetModelHint(agent::ModelOf(plan.profile.family, plan.spec.argv));
  // Codex reports a resumed thread's tokens since it began.
  if (plan.resumed && plan.profile.family == agent::Family::kCodex) {
    follower.SetBaseline(plan.session_tokens);
  }
  std::string rendered;
  Result<exec::Child> spawned = exec::Child::Spawn(spec);
  if (!spawned.ok()) {
    end.how = RunEnd::How::kSpawnFailed;
    end.spawn_error = spawned.error().message();
    return end;
  }
  exec::Child child = std::move(*spawned);
  // Declared after the follower and the readable log, so destroyed first: its last output
  // reaches them.
  child.SetOutputObserver([&](std::string_view chunk) {
    follower.Feed(chunk, rendered);
    readable.Append(rendered);
    rendered.clear();
  });
  log_shipped_ = 0;
  raw_shipped_ = 0;
  log_shipped_at_ = {};
  if (!child.limits_warning().empty() && !warned_limits_) {
    spdlog::warn("{}", child.limits_warning());
    warned_limits_ = true;
  }
  state_.SetAgentPid(child.pid());
  // Its pid is recorded by the beat planned at the claim, or (an agent that started later: a
  // worktree, a container) by one this long after its start.
  heartbeat_->KickLater(claim.token,
                        std::min(kFirstBusyBeatAfterMs, config_.heartbeat_running_ms / 2));
  spdlog::info("{} attempt {} (token {}): started {} as pid {}{}", task.id, claim.attempt,
               claim.token, spec.argv[0], child.pid(),
               plan.resumed ? " (resuming session " + plan.session_id + ")" : "");

  auto mono_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               SteadyClock::now().time_since_epoch())
        .count();
  };
  AttemptLimits limits;
  Millis timeout = task.timeout_ms > 0 ? task.timeout_ms : kDefaultTaskTimeoutMs;
  limits.timeout_ms = std::min(timeout, config_.task_timeout_cap_ms);
  limits.stall_ms = config_.stall_timeout_ms;
  limits.shutdown_ms = config_.shutdown_timeout_ms;
  if (double budget = BudgetUsd(task); budget > 0 && !plan.is_command) {
    // What earlier attempts cost comes off what this one may spend.
    Result<double> spent = fleet_->TaskCost(task.id);
    double earlier = spent.ok() ? *spent : 0;
    limits.budget_left_usd = std::max(budget - earlier, 1e-9);
  }
  AttemptPolicy policy(limits, mono_ms());
  auto ms_of = [](SteadyClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  auto grace = std::chrono::milliseconds(config_.kill_grace_ms);
  SteadyClock::time_point ledger_at = SteadyClock::now();
  Millis wake_at = mono_ms();
  bool reported = false;
  bool reported_failure = false;
  // Without a watch of the store (a remote worker), the claim is looked at this often instead, so
  // that an agent's own report or a cancel is seen while the agent still runs.
  constexpr Millis kInspectEveryMs = 1'000;
  Millis inspected_at = mono_ms();
  for (;;) {
    std::vector<pollfd> fds = {
        {signal_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {fleet_->watch_fd(), POLLIN, 0}};
    if (child.output_fd() >= 0) fds.push_back({child.output_fd(), POLLIN, 0});
    if (child.exit_fd() >= 0) fds.push_back({child.exit_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(),
           static_cast<int>(std::clamp<Millis>(wake_at - mono_ms(), 0, 1'000)));

    child.PumpOutput();
    ShipLog(plan, claim, false);
    std::optional<exec::ExitOutcome> exited = child.TryWait();
    if ((fds[0].revents & POLLIN) != 0) HandleSignals();
    bool check = false;
    if ((fds[1].revents & POLLIN) != 0) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
      check = true;
    }
    if ((fds[2].revents & POLLIN) != 0 && fleet_->DrainWatch()) check = true;
    if (fleet_->watch_fd() < 0 && mono_ms() - inspected_at >= kInspectEveryMs) check = true;
    if (check) inspected_at = mono_ms();
    AttemptObservation seen;
    if (check && !exited) {
      CheckRequests(&child);
      // A cancel or an operator's --force ends the claim and wakes us: stop the agent now rather
      // than at the next heartbeat's check.
      Result<Claim> held = fleet_->Inspect(claim.token);
      // Completed: the agent's own report (it is left to exit). Anything else ended it under
      // the agent: a cancel, an operator's --force, an ended session, a lease given up.
      reported = reported || (held.ok() && held->status == ClaimStatus::kCompleted);
      // A reported failure may be retried, and a question answered, within seconds: the next
      // attempt resumes the same session, so this agent is stopped soon rather than left 30 s.
      reported_failure =
          reported_failure ||
          (reported && held.ok() &&
           (held->end_reason == EndReason::kFailed || held->end_reason == EndReason::kAsked));
      seen.revoked = held.ok() && held->status != ClaimStatus::kActive &&
                     held->status != ClaimStatus::kCompleted;
    }
    seen.reported = reported;
    seen.reported_failure = reported_failure;
    seen.now = mono_ms();
    seen.exited = exited.has_value();
    seen.last_output_at = ms_of(child.last_output_at());
    seen.paused = paused_;
    seen.stop_signals = signals_seen_;
    seen.lease_lost = !state_.lease_lost().empty() || !state_.evicted().empty();
    seen.auth_failed = !follower.summary().auth_error.empty();
    seen.limit_seen = follower.summary().limit.has_value();
    seen.cost_usd = follower.cost_usd();
    AttemptDecision decision = policy.Step(seen);
    // The ledger follows the run, a write every few seconds at most.
    if (SteadyClock::now() - ledger_at > std::chrono::seconds(5) && follower.TakeChanged()) {
      RecordUsage(claimed, plan, follower.summary(), follower.cost_usd(),
                  follower.cost_estimated());
      ledger_at = SteadyClock::now();
    }
    if (decision.action == AttemptAction::kWait) {
      wake_at = decision.wake_at;
      continue;
    }
    if (decision.action == AttemptAction::kFinish) {
      end.how = RunEnd::How::kExited;
      end.outcome = *exited;
    } else if (decision.action == AttemptAction::kKill) {
      child.Signal(SIGKILL);
      end.outcome = child.Wait();
      end.how = RunEnd::How::kKilled;
      end.reason = decision.reason;
    } else {
      end.outcome = exec::Terminate(child, grace).outcome;
      end.how = RunEnd::How::kStopped;
      end.reason = decision.reason;
    }
    break;
  }
  child.PumpOutput();
  follower.Finish(rendered);
  readable.Append(rendered);
  end.summary = follower.summary();
  end.cost_usd = follower.cost_usd();
  end.cost_estimated = follower.cost_estimated();
  if (!plan.is_command) {
    RecordUsage(claimed, plan, end.summary, end.cost_usd, end.cost_estimated);
  }
  ShipLog(plan, claim, true);
  return end;
}

void WorkerRuntime::RecordUsage(const service::ClaimResult& claimed, const AttemptPlan& plan,
                                const agent::RunSummary& summary, double cost_usd, bool estimated) {
  AttemptUsage u;
  u.token = claimed.claim.token;
  u.task_id = claimed.task.id;
  u.worker_id = worker_id_;
  u.agent = plan.profile.name;
  u.account = plan.account;
  u.session_id = summary.session_id;
  u.model =
      summary.model.empty() ? agent::ModelOf(plan.profile.family, plan.spec.argv) : summary.model;
  u.tokens = summary.tokens;
  u.cost_usd = cost_usd;
  u.cost_estimated = estimated && cost_usd > 0;
  u.turns = summary.turns;
  u.denials = summary.denials;
  if (Status s = fleet_->RecordUsage(u); !s.ok()) {
    spdlog::warn("{} attempt {}: could not record its usage: {}", u.task_id, claimed.claim.attempt,
                 s.error().message());
  }
}

void WorkerRuntime::FinishRun(const service::ClaimResult& claimed, const AttemptPlan& plan,
                              const RunEnd& end) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  std::string head = task.id + " attempt " + std::to_string(claim.attempt);
  // Records how the attempt ended; while the store is out of reach, again (Record).
  auto done_with = [&](const std::function<Result<Task>()>& call, const std::string& what) {
    std::optional<Result<Task>> r = Record(claim.token, head + ": " + what, call);
    if (r && r->ok()) {
      spdlog::info("{}: {} → {}", head, what, ToString((*r)->status));
    } else if (r) {
      spdlog::warn("{}: {}; could not record it: {}", head, what, r->error().message());
    }
    state_.Drop();
  };
  const agent::RunSummary& said = end.summary;
  auto limited = [&](const std::string& how) {
    service::LimitReport report;
    report.profile = plan.profile.name;
    report.account = plan.account;
    report.accounts = AccountNames(plan.profile);
    report.reason = said.limit ? said.limit->text : "usage limit";
    if (said.limit) report.reset_at = ResolveReset(said.limit->reset, fleet_->NowMs());
    done_with([&] { return fleet_->EndLimited(task.id, claim.token, report); },
              how + ": usage limit of " + plan.profile.name +
                  (report.reset_at > 0 ? " until " + FormatTime(report.reset_at) : ""));
    // The gate closes at once for this worker; the others read the limit from the store.
    RefreshAgentState(/*force=*/true);
  };
  auto unavailable = [&](EndReason reason, const std::string& why) {
    if (!plan.is_command && !plan.profile.name.empty()) {
      MarkUnavailable(plan.profile.name, why);
      held_off_at_[plan.profile.name] = SteadyClock::now();
      done_with(
          [&] {
            return fleet_->EndUnavailable(task.id, claim.token, reason, plan.profile.name, why);
          },
          std::string(ToString(reason)) + ": " + why);
      return;
    }
    // A task's own command (or a template) that cannot start is the task's failure.
    done_with(
        [&] {
          return fleet_->Fail(task.id, claim.token, EndReason::kFailed, "spawn failed: " + why,
                              127);
        },
        "spawn failed: " + why);
  };
  switch (end.how) {
    case RunEnd::How::kSpawnFailed: {
      // `tx task log` of an attempt that never started says why.
      Result<exec::CappedLog> log = exec::CappedLog::Open(plan.log_path, config_.log_cap_bytes);
      if (log.ok()) log->Append("[tx] the agent could not be started: " + end.spawn_error + "\n");
      ShipLog(plan, claim, true);
      bool program = end.spawn_error.find("No such file or directory") != std::string::npos ||
                     end.spawn_error.find("Permission denied") != std::string::npos;
      if (program && end.spawn_error.find("cwd '") == std::string::npos &&
          end.spawn_error.find("log '") == std::string::npos) {
        unavailable(EndReason::kSpawnFailed, end.spawn_error);
      } else {
        done_with(
            [&] {
              return fleet_->Fail(task.id, claim.token, EndReason::kFailed,
                                  "spawn failed: " + end.spawn_error, 127);
            },
            "spawn failed: " + end.spawn_error);
      }
      return;
    }
    case RunEnd::How::kKilled:
      if (end.reason == EndReason::kLeaseLost) {
        spdlog::warn("{}: lease lost ({}); agent killed ({})", head,
                     state_.lease_lost().empty() ? state_.evicted() : state_.lease_lost(),
                     end.outcome.Describe());
        Result<Claim> r = fleet_->GiveUp(task.id, claim.token, EndReason::kLeaseLost);
        if (!r.ok()) spdlog::warn("{}: {}", task.id, r.error().message());
      } else {
        Result<Claim> held = fleet_->Inspect(claim.token);
        spdlog::warn("{}: claim {}; agent killed ({})", head,
                     held.ok() ? std::string(ToString(held->status)) + " (" +
                                     std::string(ToString(held->end_reason)) + ")"
                               : std::string("ended"),
                     end.outcome.Describe());
      }
      state_.Drop();
      return;
    case RunEnd::How::kStopped:
      switch (end.reason) {
        case EndReason::kExited:
          break;  // it reported, then lingered: what it reported stands (below)
        case EndReason::kShutdown:
          done_with([&] { return fleet_->Release(task.id, claim.token, EndReason::kShutdown); },
                    "stopped for shutdown (" + end.outcome.Describe() + ")");
          return;
        case EndReason::kRateLimited:
          limited("stopped");
          return;
        case EndReason::kAgentUnavailable:
          unavailable(EndReason::kAgentUnavailable, "not logged in: " + said.auth_error);
          return;
        case EndReason::kOverBudget: {
          char why[96];
          std::snprintf(why, sizeof why, "stopped with $%.4f spent, over its budget of $%.4f",
                        end.cost_usd, BudgetUsd(task));
          done_with([&] { return fleet_->EndOverBudget(task.id, claim.token, why); }, why);
          return;
        }
        default:
          Finish(claimed,
                 end.reason == EndReason::kTimedOut ? end.outcome.AsTimedOut()
                                                    : end.outcome.AsStalled(),
                 false, "");
          return;
      }
      [[fallthrough]];  // stopped after it reported: as if it had exited
    case RunEnd::How::kExited:
      break;
  }
  // The agent exited by itself. An outcome it reported itself stands (Finish reads the claim);
  // otherwise what it said decides: a limit or a refused login is not the task's failure.
  Result<Claim> now = fleet_->Inspect(claim.token);
  bool active = !now.ok() || now->status == ClaimStatus::kActive;
  if (active && said.limit) {
    limited("exited");
    return;
  }
  if (active && !said.auth_error.empty()) {
    unavailable(EndReason::kAgentUnavailable, "not logged in: " + said.auth_error);
    return;
  }
  bool exit_ok = end.outcome.Classify() == exec::ExitOutcome::Class::kSuccess;
  std::string failure;
  if (exit_ok && said.result_is_error) {
    failure = "the agent reported an error: " + agent::OneLine(said.result_text, 500);
  } else if (exit_ok && !said.denials.empty()) {
    // It exited 0 having been refused tools: it may not have done the task. Not silently done.
    std::string list;
    for (const auto& d : said.denials) {
      if (!list.empty()) list += ", ";
      list += d.value("tool", "?");
      std::string input = d.value("input", "");
      if (!input.empty()) list += "(" + agent::OneLine(input, 120) + ")";
    }
    failure = "permission denied: " + list +
              " (the profile's permissions refused these tools; see docs/agents.md to grant them)";
  }
  Finish(claimed, end.outcome, exit_ok && failure.empty(), failure);
}

void WorkerRuntime::ShipLog(const AttemptPlan& plan, const Claim& claim, bool final) {
  if (!fleet_->ShipsLogs()) return;
  auto now = std::chrono::steady_clock::now();
  if (!final && now - log_shipped_at_ < std::chrono::milliseconds(250)) return;
  log_shipped_at_ = now;
  ShipOne(plan.log_path, claim, final, false, log_shipped_);
  if (!plan.raw_log_path.empty()) ShipOne(plan.raw_log_path, claim, final, true, raw_shipped_);
}

void WorkerRuntime::ShipOne(const std::string& path, const Claim& claim, bool final, bool raw,
                            std::int64_t& shipped) {
  std::error_code ec;
  auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
  if (ec) return;
  if (size < shipped) shipped = 0;  // cut to its tail at the size cap: send it anew
  constexpr std::size_t kChunk = 256 * 1024;
  std::ifstream in(path, std::ios::binary);
  while (in && shipped < size) {
    std::string chunk(static_cast<std::size_t>(std::min<std::int64_t>(kChunk, size - shipped)),
                      '\0');
    in.seekg(shipped);
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    if (chunk.empty()) return;
    Status s = fleet_->ShipLog(claim.task_id, claim.attempt, claim.token, shipped, chunk, raw);
    if (!s.ok()) {
      spdlog::warn("{} attempt {}: could not send its {}log: {}", claim.task_id, claim.attempt,
                   raw ? "raw " : "", s.error().message());
      return;  // the next call sends it again from where the server's copy ends
    }
    shipped += static_cast<std::int64_t>(chunk.size());
    if (!final) return;  // a chunk a round while the agent runs
  }
}

void WorkerRuntime::Finish(const service::ClaimResult& claimed, const exec::ExitOutcome& outcome,
                           bool succeeded, const std::string& failure) {
  const Task& task = claimed.task;
  const Claim& claim = claimed.claim;
  // A success is recorded without a look at the claim first (a read a task): a claim that ended
  // meanwhile (the agent reported itself, an operator cancelled) refuses it as stale, and is
  // looked at then.
  const bool look_first = !succeeded;
  Result<Claim> now = look_first ? fleet_->Inspect(claim.token) : Result<Claim>(Claim());
  bool ended = look_first && now.ok() && now->status != ClaimStatus::kActive;
  // A signal this worker did not send, once the claim has ended elsewhere, came from tx too: the
  // reconciler or an orchestrator kills the agents of a worker it declares dead.
  std::string how =
      outcome.kind == exec::ExitOutcome::Kind::kSignalled && !outcome.sent_by_tx && ended &&
              now->end_reason != EndReason::kExited && now->end_reason != EndReason::kFailed
          ? "killed by " + exec::SignalName(outcome.signal) + " (sent by tx: its claim ended " +
                std::string(ToString(now->end_reason)) + ")"
          : outcome.Describe();
  std::string head = task.id + " attempt " + std::to_string(claim.attempt) + ": agent " + how;
  // The agent reported its own outcome (or the claim was revoked meanwhile): it stands.
  auto already_ended = [&](const Claim& c) {
    if (c.end_reason == EndReason::kAsked) {
      spdlog::info("{}; it asked a question: the task waits for an answer (tx task answer)", head);
    } else {
      spdlog::info("{}; claim already {} ({})", head, ToString(c.status), ToString(c.end_reason));
    }
    if (c.status == ClaimStatus::kCompleted && c.end_reason != EndReason::kAsked) {
      state_.CountCompleted();
    }
    state_.Drop();
  };
  if (ended) {
    already_ended(*now);
    return;
  }
  std::optional<int> code;
  if (outcome.kind != exec::ExitOutcome::Kind::kSpawnFailed) code = outcome.exit_code;
  // A task going to review carries its branch's summary for the reviewer.
  std::optional<nlohmann::json> branch;
  if (task.review && succeeded)
    branch = git::ReviewBranch(task, GitSettingsFor(config_, task.repo));
  const bool claim_too = succeeded && !branch && MayClaimWithReport(task);
  auto report = [&]() -> Result<Task> {
    if (claim_too) {
      Result<service::ClaimService::ReportResult> both = fleet_->ReportAndClaimNext(
          task.id, claim.token, service::Outcome::kDone, "", code, config_.lease_ms, &gate_);
      if (both.ok()) {
        claimed_with_report_ = std::move(both->next);
        return std::move(both->task);
      }
      const ErrorCode why = both.error().code();
      if (why == ErrorCode::kUnavailable || why == ErrorCode::kConflict) return both.error();
      // The claim's half failed (and took the report with it): the outcome alone, then.
      spdlog::warn("{}: claiming the next task with the outcome: {}", head, both.error().message());
    }
    if (succeeded) {
      return fleet_->Report(task.id, claim.token, service::Outcome::kDone, "", code,
                            branch ? &*branch : nullptr);
    }
    if (!failure.empty())
      return fleet_->Fail(task.id, claim.token, EndReason::kFailed, failure, code);
    switch (outcome.Classify()) {
      case exec::ExitOutcome::Class::kSuccess:
        return fleet_->Fail(task.id, claim.token, EndReason::kFailed, outcome.Describe(), code);
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
  std::optional<Result<Task>> r = Record(claim.token, head, report);
  if (!r) return;  // recorded after all (a claim made with it is found again by the next one)
  if (!look_first && !r->ok() && r->error().code() == ErrorCode::kConflict) {
    if (Result<Claim> c = fleet_->Inspect(claim.token);
        c.ok() && c->status != ClaimStatus::kActive) {
      already_ended(*c);
      return;
    }
  }
  if (r->ok() && succeeded) state_.CountCompleted();
  if (r->ok()) {
    spdlog::info("{} → {}{}", head, ToString((*r)->status), failure.empty() ? "" : ": " + failure);
  } else {
    spdlog::warn("{}; could not record it: {}", head, r->error().message());
  }
  state_.Drop();
}

bool WorkerRuntime::MayClaimWithReport(const Task& task) {
  if (!fleet_->ReportsAndClaims() || !task.repo.empty()) return false;
  if (signals_seen_ > 0 || paused_ || reload_pending_ || !state_.evicted().empty()) return false;
  // What the loop does before it claims, so the gate is as fresh as its own claim's would be.
  CheckPrograms(/*force=*/false);
  RefreshAgentState(/*force=*/false);
  return true;
}

void WorkerRuntime::GiveBackClaimedWithReport(EndReason why) {
  std::optional<std::optional<service::ClaimResult>> held = std::exchange(claimed_with_report_, {});
  if (!held || !*held) return;
  const service::ClaimResult& c = **held;
  Result<Task> r = fleet_->Release(c.task.id, c.claim.token, why);
  if (r.ok()) {
    spdlog::info("{}: claimed with the last outcome, given back ({})", c.task.id, ToString(why));
  } else {
    spdlog::warn("{}: release: {}", c.task.id, r.error().message());
  }
}

std::optional<Result<Task>> WorkerRuntime::Record(std::int64_t token, const std::string& head,
                                                  const std::function<Result<Task>()>& call) {
  // The store out of reach (a connection dropped, maybe during the commit, so the outcome may or
  // may not be recorded): ask again, a few times over some seconds, unless the claim shows it
  // was. Never recording would leave the claim to its lease, and the task to run a second time
  // (or a limit unknown to the other workers).
  Result<Task> r = call();
  auto wait = std::chrono::milliseconds(100);
  for (int tries = 1; !r.ok() && r.error().code() == ErrorCode::kUnavailable && tries < 8;
       ++tries) {
    spdlog::warn("{}; recording it failed, trying again in {} ms: {}", head, wait.count(),
                 r.error().message());
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(5'000));
    Result<Claim> held = fleet_->Inspect(token);
    if (held.ok() && held->status != ClaimStatus::kActive) {
      spdlog::info("{}; recorded after all: claim {} ({})", head, ToString(held->status),
                   ToString(held->end_reason));
      if (held->status == ClaimStatus::kCompleted && held->end_reason != EndReason::kAsked) {
        state_.CountCompleted();
      }
      state_.Drop();
      return std::nullopt;
    }
    r = call();
  }
  if (r.ok()) ended_as_ = r->status;
  return r;
}

}  // namespace tx::worker
