#pragma once
// Orchestrator: the `tx orchestrator start` process (docs/orchestrator.md). It holds its pool's
// orchestrator row (PoolId: this host and its .tx directory), keeps a pool of `tx worker start
// --slot slot-K` children alive under a PoolSupervisor, and, while it leads, runs the reconciler
// for the whole store.
//
// Leading: a PostgreSQL store may be shared by orchestrators on many hosts; exactly one of them
// reconciles, the one holding Store::TryLead's advisory lock. The others ask for it every second,
// so one of them takes over within a second of the leader's death (its lock goes with its
// connection). On SQLite the one orchestrator always leads. Leading is not what keeps the store
// safe — every repair re-checks its rows in its own transaction — only what keeps the work from
// being done N times.
//
// One thread, one wait: a poll over a signalfd, each worker's pidfd and output pipe, the pidfds
// of orphans it adopted, and the store's ChangeWatch (operator requests). Everything it decides
// is in PoolSupervisor::Step and Reconciler::RunOnce; this loop only acts.
//
// A worker's exit is seen through its pidfd at once. If the worker was still registered (it did
// not deregister, so it crashed or was killed), the orchestrator kills the agent group it left
// (its pid is in the worker's heartbeat), marks it dead with a worker.crashed event carrying the
// classified exit, and its task goes back to `ready` in the same transaction — milliseconds after
// the kill, not a heartbeat interval later. Then it reconciles, and the slot restarts with
// backoff (PoolSupervisor).
//
// The reconciler runs every reconcile interval, right after a worker death, and at the moment a
// worker anywhere (supervised or not, this host or another) would go stale or a lease expire
// (Reconciler::NextDueAt), so unsupervised workers are judged by their heartbeats within their
// promised interval, not the reconcile tick.
//
// Workers are started with a parent-death signal of SIGTERM: if the orchestrator is killed, they
// drain (finish the running task, stop their agent, deregister) by themselves. A restarted
// orchestrator adopts such a worker still running in one of its slots (watched by pidfd) and
// starts the slot only once it has gone; workers of this host whose process is gone are marked
// dead at once.
//
// Shutdown (SIGTERM, SIGINT, `tx orchestrator stop`): status `stopping` (the store refuses new
// registrations), SIGTERM to every worker, wait up to the shutdown timeout for them to finish and
// deregister, then SIGKILL what is left and its agent groups and release their claims (not
// counted against the task); status `stopped`. A second signal, or stop --force, skips the wait.
//
// SIGHUP (logrotate, an operator; docs/operations.md, "Logs and signals") stops nothing: the
// orchestrator reopens its log file, reads its configuration again and applies what may change
// at runtime (ReloadConfig in config.h), then passes the signal on to each of its workers, which
// reopen their own log files and re-read theirs. A configuration that no longer reads is not
// applied: the running one is kept, with one error line.

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/pool_wire.h"
#include "exec/child.h"
#include "exec/unique_fd.h"
#include "log/process_log.h"
#include "orchestrator/config.h"
#include "orchestrator/notify_loop.h"
#include "orchestrator/pool_supervisor.h"
#include "orchestrator/request_ledger.h"
#include "service/orchestrator_service.h"
#include "service/reconciler.h"
#include "service/worker_service.h"
#include "store/store.h"

namespace tx::orchestrator {

// The signals Orchestrator::Run reads from its signalfd, and blocks. A thread started before Run
// (the HTTP server's) must block them too, or the kernel may deliver one to it instead.
sigset_t OrchestratorSignals();
void BlockOrchestratorSignals();

// What a SIGHUP needs from the orchestrator's caller (cli/).
struct OrchestratorHooks {
  // The configuration as its file says it now, with the command line's flags over it, checked as
  // at start; null: it is not read again.
  std::function<Result<OrchestratorConfig>()> read_config;
  // The process's log (reopened, and given the format and cap read again); null: none.
  std::shared_ptr<log::ProcessLog> log;
};

class Orchestrator {
 public:
  explicit Orchestrator(OrchestratorConfig config, OrchestratorHooks hooks = {});
  ~Orchestrator();
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  // Runs until stopped; returns the exit code (0 after a clean stop). Call it from the main
  // thread, with every other thread blocking OrchestratorSignals(): it blocks SIGTERM, SIGINT,
  // SIGHUP and SIGCHLD and reads them from a signalfd. `on_running` is called once, when the pool
  // has been started (the daemon's handshake). An error when the store cannot be opened or its row
  // is held.
  Result<int> Run(const std::function<void(const std::string&)>& on_running);

 private:
  struct Orphan {
    pid_t pid = 0;
    exec::UniqueFd pidfd;
  };

  Status Start();
  void AdoptOrCleanUpLeftovers();
  void Loop();
  void Poll(Millis timeout_ms);
  void HandleSignals();
  // SIGHUP: the log reopened, the configuration read again and applied, the workers told.
  void Hangup();
  // Acts on what a configuration read again changed (config_ holds it already).
  void ApplyReload(const ConfigReload& reload, const std::vector<SinkSpec>& old_sinks);
  // Reaps every worker that has exited and handles its exit.
  void ReapChildren();
  void Apply(const std::vector<Action>& actions);
  void SpawnWorker(const std::string& slot);
  // A worker process of `slot` has gone: clean up after it in the store, tell the supervisor.
  void WorkerExited(const std::string& slot, pid_t pid, const nlohmann::json& exit,
                    const std::string& how);
  void BeginShutdown(bool force);
  void KillRemaining();
  // Takes the reconciler's lead when nobody holds it (at most once a second), and notices when
  // it was lost.
  void MaybeLead();
  // A leader that stops on a shared store: one last pass, then the lock let go (another
  // orchestrator takes the lead within a second).
  void HandOverTheLead();
  // Kills the agent groups of this host's workers that have gone stale, so that none of a dead
  // worker's agents still edits files when its task runs again elsewhere. Every orchestrator
  // does this for its host; only the leader declares the workers dead.
  void KillStaleAgentsOfThisHost(const Moment& now);
  void MaybeReconcile(bool now_please);
  // Says so (an event pool.no_workers and a warning) once the pool has had no running worker
  // for a while although it wants some and tasks wait; and again when one runs.
  void WatchForAnEmptyPool(Millis now);
  // Whether the SQLite store's file is still the one opened at start; stops the pool when not.
  void CheckTheStoreIsThere(Millis now);
  void Publish();
  // Answers the requests that waited on the pool (scale, create) once it has settled.
  void ResolveRequests(const std::vector<Action>& actions);
  // Records the answer to request `id` for its waiter (orchestrator/control.h).
  void Answer(const std::string& id, PoolAnswer answer);
  // Acts on what the operator asked since the last publish.
  void Act(const PoolRequest& request, Millis now);
  void CreateSlot(const CreateRequest& request);
  void RetireSlot(const RetireRequest& request);
  // Forgets the created workers' settings of slots no longer wanted, so that a slot wanted again
  // later runs with the pool's own settings.
  void ForgetUnwantedSlotArgs();
  void WriteHeartbeatFile();
  Millis Now() const;

  OrchestratorConfig config_;
  OrchestratorHooks hooks_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::ChangeWatch> watch_;
  std::unique_ptr<service::WorkerService> workers_;
  std::unique_ptr<service::OrchestratorService> row_;
  std::unique_ptr<service::Reconciler> reconciler_;
  std::unique_ptr<store::Leadership> lead_;  // null while another orchestrator leads
  std::atomic<bool> leads_{false};           // lead_ is held: read by the notifications' thread
  std::unique_ptr<NotifyLoop> notify_;
  Millis next_lead_try_ = 0;
  std::unique_ptr<PoolSupervisor> pool_;
  std::map<std::string, exec::Child> children_;  // by slot
  std::map<std::string, Orphan> orphans_;        // by slot
  exec::UniqueFd signal_fd_;
  std::string hostname_;
  std::string id_;  // PoolId(hostname_, store dir): this orchestrator's row
  std::int64_t pid_ = 0;

  bool stopping_ = false;
  bool forced_ = false;
  // The SQLite store's file as it was at start (device, inode); checked about once a second,
  // since a store deleted or replaced under a running pool is reached by no one else.
  std::optional<std::pair<dev_t, ino_t>> store_file_;
  Millis store_file_checked_ = 0;
  bool store_gone_ = false;
  Millis shutdown_deadline_ = 0;
  Millis next_full_reconcile_ = 0;
  Millis next_reconcile_check_ = 0;
  int reconcile_failures_ = 0;  // passes failed in a row: they back off
  Millis empty_since_ = 0;      // since when no slot has a running worker (0: one has)
  bool empty_announced_ = false;
  Millis last_publish_ = 0;
  bool pool_dirty_ = true;
  std::vector<std::string> pending_scale_ids_;
  std::map<std::string, std::string> pending_creates_;  // request id → its slot
  // Settings of workers created through the API, by slot; they win over config_.slot_args.
  std::map<std::string, std::vector<std::string>> created_args_;
  // Answers to requests, published in the pool for their waiters.
  RequestLedger answers_;
  nlohmann::json last_report_ = nlohmann::json::object();
};

}  // namespace tx::orchestrator
