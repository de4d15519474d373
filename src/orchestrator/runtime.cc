#include "orchestrator/runtime.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/duration.h"
#include "core/json.h"
#include "exec/atomic_file.h"
#include "exec/container.h"
#include "exec/pidfd.h"
#include "exec/process_info.h"
#include "orchestrator/agent_cleanup.h"
#include "orchestrator/process_liveness.h"
#include "service/task_service.h"
#include "store/location.h"

extern char** environ;

namespace tx::orchestrator {
namespace {

// The reconciler never runs more often than this, however close the next deadline.
constexpr Millis kMinReconcileGapMs = 50;
// Nothing wakes the orchestrator when a worker registers, claims or heartbeats elsewhere, so the
// next deadline is looked up again at least this often (one read of the live workers and
// claims). A worker that beat after a look-up is due no sooner than two of its intervals later:
// this gap delays no death of a worker that promises 125 ms or more (a shorter promise, down to
// 50 ms, may be found up to 150 ms late).
constexpr Millis kMaxReconcileCheckGapMs = 250;
// How often an orchestrator that does not lead asks for the lead (one try of an advisory lock).
constexpr Millis kLeadRetryMs = 1'000;
// After the shutdown timeout, how long SIGKILLed workers get to be reaped before giving up.
constexpr Millis kKillGraceMs = 5'000;
// A pass that failed (the store unwritable, say) is tried again after 1 s, doubling to this.
constexpr Millis kMaxReconcileBackoffMs = 30'000;
// How long a pool may have no running worker (all of them restarting, say) while tasks wait
// before it says so.
constexpr Millis kEmptyPoolGraceMs = 10'000;

// And removes the containers its agents ran in, where the workers use a container engine: a
// killed engine client leaves its container running.
void KillAgentAndSay(const Worker& w, const std::string& hostname,
                     const std::vector<exec::ContainerEngine>& engines) {
  if (KillAgentOf(w, hostname)) {
    spdlog::warn("killed the agents of worker {}", w.id);
  }
  if (w.hostname != hostname) return;
  for (const auto& engine : engines) {
    Result<int> removed = exec::RemoveContainersLabelled(engine.command, {"tx.worker=" + w.id});
    if (!removed.ok()) {
      if (engine.configured) {
        spdlog::warn("containers of worker {}: {}", w.id, removed.error().message());
      }
    } else if (*removed > 0) {
      spdlog::warn("removed {} container(s) of worker {}", *removed, w.id);
    }
  }
}

// slot-K → K, else 0.
int SlotIndex(const std::string& slot) {
  if (slot.rfind("slot-", 0) != 0 || slot.size() <= 5) return 0;
  int n = 0;
  for (char c : slot.substr(5)) {
    if (c < '0' || c > '9' || n > 100'000) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

nlohmann::json ExitJson(const exec::ExitOutcome& o) {
  const char* cls = "exited";
  switch (o.Classify()) {
    case exec::ExitOutcome::Class::kKilled:
      cls = "killed";
      break;
    case exec::ExitOutcome::Class::kTerminated:
      cls = "terminated";
      break;
    case exec::ExitOutcome::Class::kSpawnFailed:
      cls = "spawn_failed";
      break;
    default:
      break;
  }
  return {{"exit_code", o.exit_code},
          {"signal", o.signal},
          {"class", cls},
          {"description", o.Describe()}};
}

// The orchestrator's environment for its workers: its own, without what an agent's environment
// carries (a worker started from inside an agent must not pass as that agent), plus the marker a
// later orchestrator uses to recognise a worker of this store's pool, and the directory of this
// machine's files for the store (which, for a PostgreSQL store, is not beside it).
std::vector<std::string> WorkerEnvironment(const std::string& db_path,
                                           const std::string& store_dir) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (name == "TX_TASK_ID" || name == "TX_WORKER_ID" || name == "TX_CLAIM_TOKEN" ||
        name == "TX_ATTEMPT" || name == "TX_POOL_DB" || name == "TX_DB" || name == "TX_DIR") {
      continue;
    }
    env.push_back(std::move(entry));
  }
  env.push_back("TX_POOL_DB=" + db_path);
  env.push_back("TX_DIR=" + store_dir);
  return env;
}

}  // namespace

sigset_t OrchestratorSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

void BlockOrchestratorSignals() {
  sigset_t set = OrchestratorSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Orchestrator::Orchestrator(OrchestratorConfig config, OrchestratorHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)) {}

Orchestrator::~Orchestrator() = default;

Millis Orchestrator::Now() const { return store_->clock().NowMs(); }

Status Orchestrator::Start() {
  sigset_t set = OrchestratorSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal_fd_.Reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_.valid()) {
    return PosixError("signalfd", errno, ErrorCode::kInternal);
  }
  hostname_ = exec::Hostname();
  pid_ = ::getpid();

  TX_ASSIGN_OR_RETURN(store_, store::Open({config_.db_path, false}));
  if (struct stat st{};
      !store::IsPostgresUrl(config_.db_path) && ::stat(config_.db_path.c_str(), &st) == 0) {
    store_file_ = std::pair{st.st_dev, st.st_ino};
  }
  TX_ASSIGN_OR_RETURN(watch_, store_->Watch());
  workers_ = std::make_unique<service::WorkerService>(*store_, store_->clock());
  row_ = std::make_unique<service::OrchestratorService>(*store_, store_->clock());
  service::ServiceOptions reconcile_options;
  reconcile_options.review_timeout_ms = config_.review_timeout_ms;
  reconcile_options.question_timeout_ms = config_.question_timeout_ms;
  reconciler_ = std::make_unique<service::Reconciler>(*store_, reconcile_options);

  id_ = PoolId(hostname_, config_.store_dir);
  Millis now = Now();
  // Our own row's holder, on this host, is alive only if it still holds the pid-file lock, which
  // we have just taken (orchestrator/singleton.h): so it is dead, whatever now runs under its
  // old pid. Another row's is judged as anyone would.
  auto alive = [&](const OrchestratorState& o) {
    if (o.id == id_) return o.hostname != hostname_ && RecentlySeen(o, now);
    return OrchestratorAlive(o, now);
  };
  TX_RETURN_IF_ERROR(row_->Acquire(id_, config_.store_dir, pid_, hostname_, ConfigJson(config_),
                                   alive, /*exclusive=*/!store_->SharedByHosts()));

  pool_ = std::make_unique<PoolSupervisor>(config_.policy, config_.workers, now);
  AdoptOrCleanUpLeftovers();
  MaybeLead();
  MaybeReconcile(true);
  TX_RETURN_IF_ERROR(row_->SetStatus(id_, pid_, "running"));
  spdlog::info("orchestrator {} running (pid {}, store {}, {} workers, max {}){}", id_, pid_,
               store_->Describe(), config_.workers, config_.policy.max_workers,
               lead_ ? "; it leads the reconciler" : "; another orchestrator leads the reconciler");
  return Ok();
}

namespace {

// How long a leftover worker whose environment could not be read is given to finish exiting.
constexpr int kExitWaitMs = 500;

}  // namespace

// What a previous orchestrator on this host left: workers still running in our slots (they got
// SIGTERM when it died and are draining) are adopted until they exit; registered workers whose
// process is gone are dead now, not two heartbeat intervals from now.
void Orchestrator::AdoptOrCleanUpLeftovers() {
  Result<std::vector<Worker>> live = workers_->List(LiveWorkerStatuses());
  if (!live.ok()) {
    spdlog::warn("cannot list workers: {}", live.error().message());
    return;
  }
  Millis now = Now();
  for (const auto& w : *live) {
    if (w.hostname != hostname_ || w.pid <= 0) continue;
    pid_t pid = static_cast<pid_t>(w.pid);
    if (exec::ProcessAlive(pid)) {
      // The pidfd before the look at its environment: a worker killed meanwhile (its
      // environment then reads empty) is found gone here, or seen to exit once adopted, and not
      // left for its silence to be taken for a hung worker's.
      exec::ProcessHandle process = exec::OpenProcess(pid);
      exec::UniqueFd& pidfd = process.pidfd;
      bool died = process.gone;
      if (!died) {
        int index = SlotIndex(w.slot);
        bool ours =
            w.pool == id_ && exec::ProcessHasEnvironmentEntry(pid, "TX_POOL_DB=" + config_.db_path);
        if (ours && pidfd.valid() && index >= 1 && index <= pool_->desired() &&
            !orphans_.count(w.slot)) {
          spdlog::info(
              "{}: adopting worker {} (pid {}) left by the previous orchestrator; the slot "
              "starts again once it has finished",
              w.slot, w.id, pid);
          pool_->Adopt(index, pid, now);
          orphans_[w.slot] = Orphan{pid, std::move(pidfd)};
          continue;
        }
        // Our pool's worker whose environment does not name this store was exiting while it
        // was read, or its pid is another process's now (then it stays as it is).
        died = w.pool == id_ && !ours && exec::ExitsWithin(pidfd.get(), kExitWaitMs);
        if (!died) continue;
      }
    }
    KillAgentAndSay(w, hostname_, config_.container_engines);
    Result<Worker> dead =
        workers_->MarkCrashed(w.id, {{"exit_code", -1},
                                     {"signal", 0},
                                     {"class", "gone"},
                                     {"description", "gone (found by the orchestrator at start)"}});
    if (dead.ok()) {
      spdlog::warn("worker {} ({}) was registered but its process {} is gone: marked dead{}", w.id,
                   w.slot.empty() ? w.name : w.slot, pid,
                   w.current_task_id.empty() ? "" : ", task " + w.current_task_id + " requeued");
    }
  }
}

void Orchestrator::SpawnWorker(const std::string& slot) {
  log::ScopedLogField field("slot", slot);
  exec::SpawnSpec spec;
  spec.argv = {config_.tx_binary, "--db", config_.db_path, "worker", "start", "--slot", slot};
  if (!config_.config_path.empty()) {
    spec.argv.insert(spec.argv.end(), {"--config", config_.config_path});
  }
  // A slot's own settings (a created worker's, or its [orchestrator.slots.<slot>]) replace the
  // pool's.
  std::vector<std::string> own;
  if (auto it = created_args_.find(slot); it != created_args_.end()) {
    own = it->second;
  } else if (auto it = config_.slot_args.find(slot); it != config_.slot_args.end()) {
    own = it->second;
  }
  std::vector<std::string> flags = MergeWorkerArgs(config_.worker_args, own);
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  // The worker writes its log itself (reopened on SIGHUP, rotated past the cap); what it prints
  // before it opens it (a refused flag) goes to the same file, its stdout and stderr.
  std::vector<std::string> log_args = WorkerLogArgs(config_, slot);
  spec.argv.insert(spec.argv.end(), log_args.begin(), log_args.end());
  spec.env = WorkerEnvironment(config_.db_path, config_.store_dir);
  spec.log_path = config_.worker_log_path(slot);
  spec.parent_death_signal = SIGTERM;
  // A SIGHUP passed on while it starts must not end it (it reads them once running).
  spec.ignore_sighup = true;
  // Not through a pipe we read: an orphaned worker must still be able to log while it drains.
  spec.output_straight_to_log = true;
  Millis now = Now();
  Result<exec::Child> child = exec::Child::Spawn(spec);
  if (!child.ok()) {
    spdlog::error("{}: {}", slot, child.error().message());
    pool_->Exited(slot, child.error().message(), PoolSupervisor::Reached::kNothing, now);
    return;
  }
  spdlog::info("{}: worker started (pid {}), log {}", slot, child->pid(), spec.log_path);
  pool_->Started(slot, child->pid(), now);
  children_.erase(slot);
  children_.emplace(slot, std::move(*child));
}

void Orchestrator::Apply(const std::vector<Action>& actions) {
  for (const auto& a : actions) {
    pool_dirty_ = true;
    std::optional<log::ScopedLogField> field;
    if (!a.slot.empty()) field.emplace("slot", a.slot);
    switch (a.kind) {
      case Action::Kind::kStart:
        SpawnWorker(a.slot);
        break;
      case Action::Kind::kDrain:
        spdlog::info("{}: draining worker (pid {})", a.slot, a.pid);
        if (auto it = children_.find(a.slot); it != children_.end()) {
          it->second.Signal(SIGTERM);
        } else if (auto orphan = orphans_.find(a.slot); orphan != orphans_.end()) {
          exec::SignalProcess(orphan->second.pidfd.get(), orphan->second.pid, SIGTERM);
        } else if (a.pid > 0) {
          ::kill(a.pid, SIGTERM);
        }
        break;
      case Action::Kind::kFailed: {
        const Slot* slot = pool_->Find(a.slot);
        Millis retry_in = slot != nullptr ? slot->next_start_at - Now() : 0;
        spdlog::error("{}: its worker cannot start: {}; trying again in {}", a.slot, a.reason,
                      FormatDuration(retry_in));
        Status s = row_->RecordEvent(
            "slot.failed",
            {{"slot", a.slot}, {"reason", a.reason}, {"retry_in", FormatDuration(retry_in)}});
        if (!s.ok()) spdlog::warn("cannot record slot.failed: {}", s.error().message());
        break;
      }
      case Action::Kind::kNoCapacity: {
        spdlog::warn("{}", a.reason);
        Status s = row_->RecordEvent("pool.no_capacity", {{"reason", a.reason}});
        if (!s.ok()) spdlog::warn("cannot record pool.no_capacity: {}", s.error().message());
        break;
      }
    }
  }
  ResolveRequests(actions);
}

void Orchestrator::Answer(const std::string& id, PoolAnswer answer) {
  if (answers_.Record(id, std::move(answer))) pool_dirty_ = true;
}

// A scale request is answered once every slot it asked for runs (ok), or the pool gave up on
// capacity (no capacity); a created slot once its worker process runs, or when it was dropped for
// want of capacity or failed.
void Orchestrator::ResolveRequests(const std::vector<Action>& actions) {
  std::string failure;
  for (const auto& a : actions) {
    if (a.kind == Action::Kind::kNoCapacity) failure = a.reason;
  }
  for (auto it = pending_creates_.begin(); it != pending_creates_.end();) {
    const Slot* s = pool_->Find(it->second);
    if (s == nullptr || !pool_->wants(s->index)) {
      Answer(it->first, PoolAnswer::Refused(
                            failure.empty() ? "no capacity: the pool is at max-workers (" +
                                                  std::to_string(config_.policy.max_workers) + ")"
                                            : failure));
    } else if (s->state == SlotState::kFailed) {
      Answer(it->first, PoolAnswer::Refused(it->second + " failed: " + s->failure));
    } else if (s->state == SlotState::kRunning) {
      PoolAnswer created;
      created.ok = true;
      created.slot = s->name;
      created.pid = s->pid;
      Answer(it->first, std::move(created));
    } else {
      ++it;
      continue;
    }
    it = pending_creates_.erase(it);
  }
  ForgetUnwantedSlotArgs();
  if (pending_scale_ids_.empty()) return;
  // Every wanted slot must run (a failed one is not waited for; a re-wanted one still draining
  // from an earlier scale-down is).
  bool waiting = false;
  for (const auto& s : pool_->slots()) {
    if (!pool_->wants(s.index)) continue;
    waiting = waiting || s.state == SlotState::kPending || s.state == SlotState::kStarting ||
              s.state == SlotState::kDraining || s.state == SlotState::kBackoff;
  }
  if (failure.empty() && waiting) return;
  for (const auto& id : pending_scale_ids_) {
    PoolAnswer scaled = PoolAnswer::Refused(failure);
    if (failure.empty()) {
      scaled.ok = true;
      scaled.workers = pool_->desired();
    }
    Answer(id, std::move(scaled));
  }
  pending_scale_ids_.clear();
}

void Orchestrator::ForgetUnwantedSlotArgs() {
  std::erase_if(created_args_,
                [&](const auto& entry) { return !pool_->wants(SlotIndex(entry.first)); });
}

void Orchestrator::CreateSlot(const CreateRequest& request) {
  const std::string& id = request.id;
  if (stopping_) {
    Answer(id, PoolAnswer::Refused("the orchestrator is stopping"));
    return;
  }
  std::vector<std::string> args = request.args;
  Millis now = Now();
  int index = pool_->Grow(now);
  std::string slot = SlotName(index);
  std::string workdir = request.workdir;
  if (workdir.empty()) workdir = config_.store_dir + "/workers/" + slot;
  std::error_code ec;
  std::filesystem::create_directories(workdir, ec);
  Status written =
      ec ? Status(Error::Unavailable("cannot create " + workdir + ": " + ec.message())) : Ok();
  // The agents read their standing instructions from here: Claude Code from CLAUDE.md, Codex and
  // most others from AGENTS.md.
  const std::string& instructions = request.instructions;
  for (const char* name : {"CLAUDE.md", "AGENTS.md"}) {
    if (written.ok() && !instructions.empty()) {
      written = exec::WriteFileAtomically(workdir + "/" + name, instructions, 0600);
    }
  }
  if (!written.ok()) {
    pool_->Retire(index);
    Answer(id, PoolAnswer::Refused(written.error().message()));
    return;
  }
  args.insert(args.end(), {"--workdir", workdir});
  spdlog::info("{}: a worker is created on request, in {}", slot, workdir);
  created_args_[slot] = std::move(args);
  pending_creates_[id] = slot;
  pool_dirty_ = true;
}

void Orchestrator::RetireSlot(const RetireRequest& request) {
  const std::string& id = request.id;
  const std::string& slot = request.slot;
  bool force = request.force;
  int index = SlotIndex(slot);
  const Slot* s = pool_->Find(slot);
  if (index < 1 || !pool_->wants(index) || s == nullptr) {
    Answer(id, PoolAnswer::Refused("the pool has no slot " + slot, "not_found"));
    return;
  }
  pid_t pid = s->pid;
  pool_->Retire(index);
  ForgetUnwantedSlotArgs();
  spdlog::info("{}: retired on request{}", slot, force ? " (stopping its worker now)" : "");
  if (force && pid > 0) {
    // The worker stops its agent at once and releases its task without counting the attempt, as
    // `tx worker stop` does; the SIGTERM of the drain follows.
    Result<std::vector<Worker>> live = workers_->List(LiveWorkerStatuses());
    for (const auto& w : live.ok() ? *live : std::vector<Worker>{}) {
      if (w.pid != pid || w.hostname != hostname_) continue;
      Result<Worker> asked = workers_->Request(w.id, WorkerRequest::kStopNow);
      if (!asked.ok()) spdlog::warn("{}: {}", slot, asked.error().message());
    }
  }
  PoolAnswer retired;
  retired.ok = true;
  retired.slot = slot;
  Answer(id, std::move(retired));
}

void Orchestrator::WorkerExited(const std::string& slot, pid_t pid, const nlohmann::json& exit,
                                const std::string& how) {
  log::ScopedLogField field("slot", slot);
  Millis now = Now();
  Result<std::vector<Worker>> live = workers_->List(LiveWorkerStatuses());
  bool registered = false;
  if (live.ok()) {
    for (const auto& w : *live) {
      if (w.pid != pid || w.hostname != hostname_) continue;
      registered = true;
      // Its agent first, so it is not still editing files when another worker takes the task.
      KillAgentAndSay(w, hostname_, config_.container_engines);
      if (stopping_) {
        Result<Worker> r = workers_->Deregister(w.id, "killed at shutdown");
        if (r.ok()) spdlog::warn("{}: worker {} killed at shutdown; claims released", slot, w.id);
      } else {
        Result<Worker> r = workers_->MarkCrashed(w.id, exit);
        if (r.ok()) {
          spdlog::warn(
              "{}: worker {} (pid {}) {}{}", slot, w.id, pid, how,
              w.current_task_id.empty() ? "" : "; task " + w.current_task_id + " requeued");
        } else {
          spdlog::warn("{}: worker {}: {}", slot, w.id, r.error().message());
        }
      }
    }
  } else {
    spdlog::warn("cannot list workers: {}", live.error().message());
  }
  if (!registered) spdlog::info("{}: worker (pid {}) {} before it registered", slot, pid, how);
  pool_->Exited(
      slot, how,
      registered ? PoolSupervisor::Reached::kRegistered : PoolSupervisor::Reached::kNothing, now);
  pool_dirty_ = true;
  if (!stopping_) MaybeReconcile(true);
}

void Orchestrator::MaybeLead() {
  Millis now = Now();
  if (lead_ && !lead_->Held()) {
    lead_.reset();
    leads_ = false;
    spdlog::warn("lost the lead of the reconciler (its connection to the store ended)");
    next_lead_try_ = now;
  }
  if (lead_ || stopping_ || now < next_lead_try_) return;
  next_lead_try_ = now + kLeadRetryMs;
  Result<std::unique_ptr<store::Leadership>> got = store_->TryLead();
  if (!got.ok()) {
    spdlog::warn("cannot ask for the lead of the reconciler: {}", got.error().message());
    return;
  }
  if (!*got) return;
  lead_ = std::move(*got);
  leads_ = true;
  Status s = row_->RecordLeader(id_);
  if (!s.ok()) spdlog::warn("cannot record the lead: {}", s.error().message());
  spdlog::info("leading the reconciler of {}", store_->Describe());
  next_full_reconcile_ = now;  // a new leader reconciles at once: the old one may have died
  next_reconcile_check_ = now;
}

void Orchestrator::HandOverTheLead() {
  if (lead_->Held()) {
    Result<ReconcileReport> report = reconciler_->RunOnce(store_->clock().Now());
    if (report.ok() && report->Total() > 0) {
      spdlog::info("last reconcile before handing over the lead repaired: {}",
                   ToJson(*report).dump());
    }
    Status cleared = row_->ClearLeader(id_);
    if (!cleared.ok()) spdlog::warn("cannot clear the lead: {}", cleared.error().message());
  }
  lead_.reset();
  leads_ = false;
  spdlog::info("stopping: the reconciler's lead is free for another orchestrator");
}

void Orchestrator::KillStaleAgentsOfThisHost(const Moment& now) {
  Result<std::vector<Worker>> live = workers_->List(LiveWorkerStatuses());
  if (!live.ok()) return;
  auto doomed = [&](const Worker& w) { return reconciler_->WouldDeclareDead(w, now); };
  if (int killed = KillAgentsOfStaleWorkers(*live, hostname_, doomed); killed > 0) {
    spdlog::warn("killed the agents of {} stale workers of this host", killed);
  }
  for (const auto& engine : config_.container_engines) {
    for (const auto& w : *live) {
      if (w.hostname != hostname_ || !doomed(w)) continue;
      Result<int> removed = exec::RemoveContainersLabelled(engine.command, {"tx.worker=" + w.id});
      if (removed.ok() && *removed > 0) {
        spdlog::warn("removed {} container(s) of stale worker {}", *removed, w.id);
      }
    }
  }
}

void Orchestrator::MaybeReconcile(bool now_please) {
  const Moment at = store_->clock().Now();
  const Millis now = at.wall;
  // After a failed pass nothing hurries the next one: the store must get its backoff.
  if ((!now_please || reconcile_failures_ > 0) && now < next_reconcile_check_) return;
  if (!lead_) {
    // Not ours to reconcile: look after this host's stale agents, and ask for the lead again.
    KillStaleAgentsOfThisHost(at);
    next_reconcile_check_ = now + kMaxReconcileCheckGapMs;
    return;
  }
  bool run = now_please || now >= next_full_reconcile_;
  if (!run) {
    Result<std::optional<Millis>> due = reconciler_->NextDueAt(at);
    run = due.ok() && *due && **due <= now;
    if (!run) {
      Millis next = next_full_reconcile_;
      if (due.ok() && *due) next = std::min(next, **due);
      next_reconcile_check_ =
          std::clamp(next, now + kMinReconcileGapMs, now + kMaxReconcileCheckGapMs);
      return;
    }
  }
  // Still ours? (A leader whose connection dropped must not go on as if it led.)
  if (!lead_->Held()) {
    MaybeLead();
    return;
  }
  // Workers of this host about to be declared dead by missed heartbeats (started by hand, or a
  // hung one): their agents' groups go first, so that no grandchild of a dead worker's agent is
  // still editing files when the requeued task runs again elsewhere.
  KillStaleAgentsOfThisHost(at);
  Result<ReconcileReport> report = reconciler_->RunOnce(at);
  if (!report.ok()) {
    ++reconcile_failures_;
    Millis backoff = std::min<Millis>(kMaxReconcileBackoffMs,
                                      Millis{1'000} << std::min(reconcile_failures_ - 1, 10));
    spdlog::warn("reconcile: {} (failed {} times in a row; next try in {})",
                 report.error().message(), reconcile_failures_, FormatDuration(backoff));
    next_reconcile_check_ = next_full_reconcile_ = now + backoff;
    return;
  }
  if (reconcile_failures_ > 0) {
    spdlog::info(
        "reconcile: the store answers again after {} failed passes; workers' silence counts "
        "from now",
        reconcile_failures_);
    reconcile_failures_ = 0;
  }
  last_report_ = ToJson(*report);
  if (report->Total() > 0) spdlog::info("reconcile repaired: {}", last_report_.dump());
  next_full_reconcile_ = now + config_.reconcile_interval_ms;
  Millis next = next_full_reconcile_;
  Result<std::optional<Millis>> due = reconciler_->NextDueAt(at);
  if (due.ok() && *due) next = std::min(next, **due);
  next_reconcile_check_ = std::clamp(next, now + kMinReconcileGapMs, now + kMaxReconcileCheckGapMs);
}

void Orchestrator::WatchForAnEmptyPool(Millis now) {
  bool running = std::any_of(pool_->slots().begin(), pool_->slots().end(),
                             [](const Slot& s) { return s.state == SlotState::kRunning; });
  if (running || pool_->desired() == 0) {
    if (empty_announced_) spdlog::info("the pool has a running worker again");
    empty_since_ = 0;
    empty_announced_ = false;
    return;
  }
  if (empty_since_ == 0) empty_since_ = now;
  if (empty_announced_ || now - empty_since_ < kEmptyPoolGraceMs) return;
  std::int64_t ready = 0;
  Status read = store_->Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(ready, txn.CountReadyTasks());
    return Ok();
  });
  if (!read.ok() || ready == 0) return;
  nlohmann::json slots = nlohmann::json::array();
  std::string states;
  for (const auto& s : pool_->slots()) {
    slots.push_back({{"slot", s.name}, {"state", ToString(s.state)}, {"failure", s.failure}});
    states += (states.empty() ? "" : ", ") + s.name + " " + ToString(s.state);
  }
  spdlog::warn("no worker of the pool has run for {} while {} tasks wait ({})",
               FormatDuration(now - empty_since_), ready, states);
  Status s = row_->RecordEvent(
      "pool.no_workers",
      {{"ready", ready}, {"for", FormatDuration(now - empty_since_)}, {"slots", slots}});
  if (!s.ok()) spdlog::warn("cannot record pool.no_workers: {}", s.error().message());
  empty_announced_ = true;
}

void Orchestrator::CheckTheStoreIsThere(Millis now) {
  if (!store_file_ || now - store_file_checked_ < 1'000) return;
  store_file_checked_ = now;
  struct stat st {};
  if (::stat(config_.db_path.c_str(), &st) == 0 &&
      std::pair{st.st_dev, st.st_ino} == *store_file_) {
    return;
  }
  // Its workers would go on writing to a file no command, server or new worker can open.
  spdlog::error(
      "the store {} was deleted or replaced under the running pool: stopping it "
      "(its workers are killed; run tx init and start again)",
      config_.db_path);
  store_gone_ = true;
  BeginShutdown(/*force=*/true);
}

void Orchestrator::Publish() {
  Millis now = Now();
  PoolSnapshot pool;
  pool.desired = pool_->desired();
  pool.max_workers = config_.policy.max_workers;
  pool.live = pool_->live();
  pool.stopping = stopping_;
  for (const auto& s : pool_->slots()) {
    pool.slots.push_back(
        {.slot = s.name,
         .state = ToString(s.state),
         .pid = s.pid,
         .started_at = s.started_at,
         .restarts = s.restarts,
         .next_start_at =
             s.state == SlotState::kBackoff || s.state == SlotState::kFailed ? s.next_start_at : 0,
         .last_exit = s.last_exit,
         .failure = s.failure});
  }
  pool.results = answers_.answers();
  pool.updated_at = now;
  Result<nlohmann::json> request = row_->Publish(id_, pid_, pool);
  last_publish_ = now;
  pool_dirty_ = false;
  if (!request.ok()) {
    spdlog::warn("publish: {}", request.error().message());
    return;
  }
  Act(request->get<PoolRequest>(), now);
  if (!config_.heartbeat_file.empty()) WriteHeartbeatFile();
}

void Orchestrator::Act(const PoolRequest& r, Millis now) {
  if (r.workers) {
    if (stopping_) {
      Answer(r.scale_id, PoolAnswer::Refused("the orchestrator is stopping"));
    } else {
      spdlog::info("scale to {} requested", *r.workers);
      pool_->Scale(*r.workers, now);
      if (!r.scale_id.empty()) pending_scale_ids_.push_back(r.scale_id);
    }
    pool_dirty_ = true;
  }
  for (const auto& c : r.create) CreateSlot(c);
  for (const auto& c : r.retire) RetireSlot(c);
  if (r.stop != PoolStop::kNone) {
    bool force = r.stop == PoolStop::kForce;
    spdlog::info("stop requested{}", force ? " (force)" : "");
    BeginShutdown(force);
  }
}

void Orchestrator::WriteHeartbeatFile() {
  Result<std::vector<Worker>> all = workers_->List({});
  if (!all.ok()) return;
  std::vector<Worker> ours;
  for (const auto& w : *all) {
    if (w.pool == id_ && SlotIndex(w.slot) > 0) ours.push_back(w);
  }
  Result<std::map<std::string, std::string>> titles =
      service::TaskService(*store_, store_->clock()).CurrentTitles(ours);
  if (!titles.ok()) return;
  nlohmann::json doc = HeartbeatDocument(ours, *titles);
  // The restart count is the supervisor's to know, not the worker's.
  for (const auto& slot : pool_->slots()) {
    if (doc["workers"].contains(slot.name)) {
      doc["workers"][slot.name]["metadata"]["restartCount"] = slot.restarts;
    }
  }
  Status s = exec::WriteFileAtomically(config_.heartbeat_file, doc.dump(2) + "\n", 0600);
  if (!s.ok()) spdlog::warn("{}", s.error().message());
}

void Orchestrator::BeginShutdown(bool force) {
  if (!stopping_) {
    stopping_ = true;
    shutdown_deadline_ = Now() + config_.shutdown_timeout_ms;
    Status s = row_->SetStatus(id_, pid_, "stopping");
    if (!s.ok()) spdlog::warn("cannot record stopping: {}", s.error().message());
    // On a shared store another orchestrator takes the lead now, not after this one's drain (up
    // to the shutdown timeout), during which this one reconciles nothing.
    if (lead_ && store_->SharedByHosts()) HandOverTheLead();
    spdlog::info("stopping: draining {} workers (up to {})", pool_->live(),
                 FormatDuration(config_.shutdown_timeout_ms));
    pool_->StopAll();
    // A scale still waiting for its slots will not get them: say so, or the shrinking pool would
    // look like the scale succeeded.
    for (const auto& id : pending_scale_ids_) {
      Answer(id, PoolAnswer::Refused("the orchestrator is stopping"));
    }
    pending_scale_ids_.clear();
    for (const auto& [id, slot] : pending_creates_) {
      Answer(id, PoolAnswer::Refused("the orchestrator is stopping"));
    }
    pending_creates_.clear();
    // Adopted orphans are not signalled: their parent's death already sent them the SIGTERM that
    // drains them, and a second one would tell them to stop their task short.
    pool_dirty_ = true;
  }
  if (force && !forced_) {
    spdlog::info("not waiting: killing the workers now");
    KillRemaining();
  }
}

void Orchestrator::KillRemaining() {
  forced_ = true;
  shutdown_deadline_ = std::min(shutdown_deadline_, Now());
  Result<std::vector<Worker>> live = workers_->List(LiveWorkerStatuses());
  auto kill_agent = [&](pid_t pid) {
    if (!live.ok()) return;
    for (const auto& w : *live) {
      if (w.pid == pid && w.hostname == hostname_)
        KillAgentAndSay(w, hostname_, config_.container_engines);
    }
  };
  // The worker before its agent: a worker that outlived its agent by a moment would record the
  // agent's death as a failed attempt, where a shutdown must release the task uncounted.
  for (auto& [slot, child] : children_) {
    if (child.exited()) continue;
    spdlog::warn("{}: killing worker (pid {})", slot, child.pid());
    child.Signal(SIGKILL);
    kill_agent(child.pid());
  }
  for (auto& [slot, orphan] : orphans_) {
    exec::SignalProcess(orphan.pidfd.get(), orphan.pid, SIGKILL);
    kill_agent(orphan.pid);
  }
}

void Orchestrator::HandleSignals() {
  signalfd_siginfo si{};
  while (::read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("{} received{}", strsignal(sig), stopping_ ? " again: not waiting" : "");
      BeginShutdown(stopping_);
    }
    // logrotate and a closed terminal send it: the pool must outlive both.
    if (sig == SIGHUP) Hangup();
    // Exits are seen through the pidfds; SIGCHLD covers a kernel without them.
    if (sig == SIGCHLD) ReapChildren();
  }
}

void Orchestrator::Hangup() {
  std::string done;  // what was done, for the one line that says it
  auto did = [&](const std::string& what) { done += (done.empty() ? "" : "; ") + what; };
  if (hooks_.log && !hooks_.log->path().empty()) {
    Status reopened = hooks_.log->Reopen();
    if (reopened.ok()) {
      did(hooks_.log->path() + " reopened");
    } else {
      spdlog::error("Hangup received: {}; still writing to the old file",
                    reopened.error().message());
    }
  }
  if (stopping_) {
    did("the config is not read again while stopping");
  } else if (hooks_.read_config) {
    Result<OrchestratorConfig> fresh = hooks_.read_config();
    if (!fresh.ok()) {
      spdlog::error("Hangup received: the config was not reloaded, the running one is kept: {}",
                    fresh.error().message());
    } else {
      std::vector<SinkSpec> old_sinks = config_.notify;
      ConfigReload reload = ReloadConfig(config_, *fresh);
      ApplyReload(reload, old_sinks);
      did("config reloaded (" + (reload.summary.empty() ? "nothing changed" : reload.summary) +
          ")");
      if (!reload.at_restart.empty()) {
        std::string keys;
        for (const auto& k : reload.at_restart) keys += (keys.empty() ? "" : ", ") + k;
        spdlog::warn("the config changes {}, which takes effect at the next start", keys);
      }
    }
  }
  // Each worker reopens its log file and reads its own sections again.
  int told = 0;
  for (auto& [slot, child] : children_) {
    if (child.exited()) continue;
    exec::SignalProcess(child.exit_fd(), child.pid(), SIGHUP);
    ++told;
  }
  for (auto& [slot, orphan] : orphans_) {
    exec::SignalProcess(orphan.pidfd.get(), orphan.pid, SIGHUP);
    ++told;
  }
  did("passed on to " + std::to_string(told) + (told == 1 ? " worker" : " workers"));
  spdlog::info("Hangup received: {}", done);
}

void Orchestrator::ApplyReload(const ConfigReload& reload, const std::vector<SinkSpec>& old_sinks) {
  if (reload.applied.empty()) return;
  Millis now = Now();
  if (hooks_.log) {
    hooks_.log->SetFormat(config_.log_format);
    Result<std::uint64_t> cap = log::MaxBytesOfMb(config_.log_max_mb, "log_max_mb");
    hooks_.log->SetMaxBytes(cap.ok() ? *cap : 0);
  }
  for (const char* key :
       {"max_workers", "max_restarts", "restart_window", "max_backoff", "capacity_timeout"}) {
    if (reload.Changed(key)) {
      pool_->SetPolicy(config_.policy);
      break;
    }
  }
  if (reload.Changed("workers")) pool_->Scale(config_.workers, now);
  if (reload.Changed("reconcile_interval")) {
    next_full_reconcile_ = std::min(next_full_reconcile_, now + config_.reconcile_interval_ms);
    next_reconcile_check_ = std::min(next_reconcile_check_, next_full_reconcile_);
  }
  if (reload.Changed("review_timeout") || reload.Changed("question_timeout")) {
    reconciler_->SetTimeouts(config_.review_timeout_ms, config_.question_timeout_ms);
  }
  if (reload.Changed("notify")) {
    // One sender at a time (the outbox assumes it, service/notify_outbox.h): the old loop stops
    // first (a send in flight finishes), then the new one starts.
    auto leads = [this] { return leads_.load(); };
    notify_.reset();
    if (!config_.notify.empty()) {
      Result<std::unique_ptr<NotifyLoop>> loop =
          NotifyLoop::Start(config_.db_path, config_.notify, leads);
      if (loop.ok()) {
        notify_ = std::move(*loop);
      } else {
        spdlog::error(
            "notifications: the new [[notify]] sinks cannot start ({}); still sending "
            "to the old ones",
            loop.error().message());
        config_.notify = old_sinks;
        if (!old_sinks.empty()) {
          Result<std::unique_ptr<NotifyLoop>> again =
              NotifyLoop::Start(config_.db_path, old_sinks, leads);
          if (again.ok()) {
            notify_ = std::move(*again);
          } else {
            spdlog::error("notifications: the old sinks cannot start again either ({})",
                          again.error().message());
          }
        }
      }
    }
  }
  // What status shows, and backpressure reads.
  Status s = row_->SetConfig(id_, pid_, ConfigJson(config_));
  if (!s.ok()) spdlog::warn("cannot record the config: {}", s.error().message());
  pool_dirty_ = true;
}

void Orchestrator::ReapChildren() {
  std::vector<std::pair<std::string, pid_t>> gone;
  std::vector<exec::ExitOutcome> outcomes;
  for (auto& [slot, child] : children_) {
    pid_t pid = child.pid();
    if (std::optional<exec::ExitOutcome> outcome = child.TryWait()) {
      gone.emplace_back(slot, pid);
      outcomes.push_back(*outcome);
    }
  }
  for (std::size_t i = 0; i < gone.size(); ++i) {
    children_.erase(gone[i].first);
    WorkerExited(gone[i].first, gone[i].second, ExitJson(outcomes[i]), outcomes[i].Describe());
  }
}

void Orchestrator::Poll(Millis timeout_ms) {
  enum class Kind { kSignal, kWatch, kExit, kOutput, kOrphan };
  struct Source {
    Kind kind;
    std::string slot;
  };
  std::vector<pollfd> fds;
  std::vector<Source> sources;
  auto add = [&](int fd, Kind kind, const std::string& slot) {
    if (fd < 0) return;
    fds.push_back({fd, POLLIN, 0});
    sources.push_back({kind, slot});
  };
  add(signal_fd_.get(), Kind::kSignal, "");
  if (watch_) add(watch_->fd(), Kind::kWatch, "");
  for (auto& [slot, child] : children_) {
    if (child.exited()) continue;
    add(child.exit_fd(), Kind::kExit, slot);
    add(child.output_fd(), Kind::kOutput, slot);
  }
  for (auto& [slot, orphan] : orphans_) add(orphan.pidfd.get(), Kind::kOrphan, slot);

  int n =
      ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<Millis>(timeout_ms, 0, 60'000)));
  if (n <= 0) return;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    const Source& src = sources[i];
    switch (src.kind) {
      case Kind::kSignal:
        HandleSignals();
        break;
      case Kind::kWatch:
        if (watch_->Drain()) {
          Result<bool> has = row_->HasRequest(id_);
          if (has.ok() && *has) Publish();
        }
        break;
      case Kind::kOutput:
        if (auto it = children_.find(src.slot); it != children_.end()) it->second.PumpOutput();
        break;
      case Kind::kExit:
        ReapChildren();
        break;
      case Kind::kOrphan:
        if (auto it = orphans_.find(src.slot); it != orphans_.end()) {
          pid_t pid = it->second.pid;
          orphans_.erase(it);
          WorkerExited(src.slot, pid,
                       {{"exit_code", -1},
                        {"signal", 0},
                        {"class", "unknown"},
                        {"description", "exited (adopted: its status is not ours to read)"}},
                       "exited (adopted worker)");
        }
        break;
    }
  }
}

void Orchestrator::Loop() {
  for (;;) {
    Millis now = Now();
    Apply(pool_->Step(now));
    if (stopping_ && children_.empty() && orphans_.empty()) break;
    if (stopping_ && !forced_ && now >= shutdown_deadline_) {
      spdlog::warn("shutdown timeout: killing what is left");
      KillRemaining();
    }
    if (stopping_ && forced_ && now >= shutdown_deadline_ + kKillGraceMs) {
      spdlog::error("workers did not exit after SIGKILL; giving up on them");
      break;
    }
    if (!stopping_) {
      MaybeLead();
      MaybeReconcile(false);
      WatchForAnEmptyPool(now);
      CheckTheStoreIsThere(now);
    }
    if (pool_dirty_ || now - last_publish_ >= config_.publish_interval_ms) Publish();

    now = Now();
    Millis wake = last_publish_ + config_.publish_interval_ms;
    if (!stopping_) wake = std::min({wake, next_reconcile_check_, lead_ ? wake : next_lead_try_});
    if (!stopping_ && empty_since_ > 0 && !empty_announced_) {
      wake = std::min(wake, std::max(now + 1'000, empty_since_ + kEmptyPoolGraceMs));
    }
    if (std::optional<Millis> d = pool_->NextDeadline()) wake = std::min(wake, *d);
    if (stopping_) {
      wake = std::min(wake, forced_ ? shutdown_deadline_ + kKillGraceMs : shutdown_deadline_);
    }
    Poll(std::max<Millis>(0, wake - now));
  }
}

Result<int> Orchestrator::Run(const std::function<void(const std::string&)>& on_running) {
  // Without sinks there is nothing to send, and no thread or connection is spent on it.
  if (!config_.notify.empty()) {
    TX_ASSIGN_OR_RETURN(notify_, NotifyLoop::Start(config_.db_path, config_.notify,
                                                   [this] { return leads_.load(); }));
  }
  TX_RETURN_IF_ERROR(Start());
  // Start the first workers before saying we run, so a broken worker command shows at once.
  Apply(pool_->Step(Now()));
  Publish();
  if (on_running) {
    on_running("orchestrator running (pid " + std::to_string(pid_) + ", " +
               std::to_string(pool_->desired()) + " workers); worker logs in " + config_.store_dir +
               "/logs/workers");
  }
  Loop();
  notify_.reset();  // what it sends now would go out after the lead is handed over
  // Nothing of ours runs now; a leader leaves the store as clean as it can, then lets another
  // orchestrator lead.
  if (lead_ && lead_->Held()) {
    Result<ReconcileReport> report = reconciler_->RunOnce(store_->clock().Now());
    if (report.ok() && report->Total() > 0) {
      spdlog::info("final reconcile repaired: {}", ToJson(*report).dump());
    }
    Status cleared = row_->ClearLeader(id_);
    if (!cleared.ok()) spdlog::warn("cannot clear the lead: {}", cleared.error().message());
  }
  lead_.reset();
  leads_ = false;
  Publish();
  Status s = row_->SetStatus(id_, pid_, "stopped");
  if (!s.ok()) spdlog::warn("cannot record stopped: {}", s.error().message());
  spdlog::info("orchestrator stopped");
  return store_gone_ ? 1 : 0;
}

}  // namespace tx::orchestrator
