#pragma once
// Store: durable state of tasks, claims, workers, events and the orchestrator.
//
// A Store runs each call of Write() or Read() as ONE transaction: the function receives a Txn,
// performs reads and writes through it, and returns a Status. On ok, Write commits; on an error,
// it rolls back and returns that error, so a failed operation leaves no partial write. Services
// keep every read-modify-write inside one Write (design.md §2.3).
//
// Backends: SQLite (BEGIN IMMEDIATE serialises writers; busy waits are absorbed up to the busy
// timeout) and PostgreSQL (READ COMMITTED, every task, claim and worker row a write reads is
// locked until the commit, so read-modify-writes of a row are serial as on SQLite; PickNextReady
// uses FOR UPDATE SKIP LOCKED; Write runs the function again after a deadlock or a dropped
// connection, so it must have no effect outside the Txn).
//
// A Store object is one connection: use it from one thread at a time, and open one per thread.

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/claim.h"
#include "core/error.h"
#include "core/event.h"
#include "core/notify.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"

namespace tx::store {

struct TaskFilter {
  std::optional<TaskStatus> status;
  std::optional<std::string> queue;
  std::optional<std::string> owner;
  std::optional<std::string> agent;  // the task's agent profile
  // Matches a task whose id is `search` or starts with it, or whose title holds it, letters
  // compared without case (ASCII letters on SQLite, whose lower() folds no others). "" = any.
  std::string search;
  Millis created_since = 0;  // created_at >= this (0: no bound)
  Millis created_until = 0;  // created_at < this (0: no bound)
  int limit = 0;             // 0 = no limit
  // Paging by insertion order: oldest first, after `cursor` (the last seq seen); or, with
  // newest_first, newest first, before `cursor` (0: from the newest).
  bool newest_first = false;
  std::int64_t cursor = 0;
};

// What a worker can take: used to pick the best eligible ready task.
struct PickCriteria {
  std::vector<std::string> queues;        // at least one
  std::vector<std::string> capabilities;  // task.requires must be a subset
  std::string worker_name;                // an owner pin matches the name ...
  std::string worker_slot;                // ... or the slot
  Millis now = 0;                         // run_after <= now
  // Agent tasks (those with no command) this pick passes over: those naming a profile in
  // `blocked_agents` ("" stands for a task naming none, which runs the worker's default profile,
  // and "*" for every agent task), and every agent task of a queue in `blocked_agent_queues`.
  // What limits, budgets and missing programs rule out (service/agent_gate.h). Names are
  // validated profile names or argv templates, bound as parameters on both backends.
  std::vector<std::string> blocked_agents;
  std::vector<std::string> blocked_agent_queues;
  bool gated() const { return !blocked_agents.empty() || !blocked_agent_queues.empty(); }
};

// One attempt of a worker, as its history lists it: the claim, its task's title, and what the
// usage ledger says it cost (no row: has_usage false).
struct WorkerAttempt {
  Claim claim;
  std::string task_title;
  bool has_usage = false;
  double cost_usd = 0;
  bool cost_estimated = false;
};

struct StatusCount {
  TaskStatus status;
  std::string queue;
  std::int64_t count;
};

class Txn {
 public:
  virtual ~Txn() = default;

  // Tasks.
  virtual Result<std::optional<Task>> GetTask(std::string_view id) = 0;
  virtual Result<std::vector<Task>> ListTasks(const TaskFilter& filter) = 0;
  // Inserts the task and sets task.seq; false, with nothing written, when a task has its id
  // already (the check costs nothing beside the insert's own).
  virtual Result<bool> InsertNewTask(Task& task) = 0;
  // InsertNewTask, an id already taken a conflict.
  Status InsertTask(Task& task) {
    TX_ASSIGN_OR_RETURN(bool inserted, InsertNewTask(task));
    if (!inserted) return Error::Conflict("task " + task.id + " exists already");
    return Ok();
  }
  virtual Status UpdateTask(const Task& task) = 0;
  // Writes only the state of a task (status, attempt, run_after, result, error and its times):
  // what lifecycle transitions change. The hot path of claiming and completing.
  virtual Status UpdateTaskState(const Task& task) = 0;
  // Rewrites the dependency index of a task (InsertTask already indexes task.after).
  virtual Status ReplaceDependencies(const std::string& task_id,
                                     const std::vector<std::string>& after) = 0;
  // The best ready task for the criteria: priority desc, then FIFO. Locks it on backends that
  // lock rows (skipping rows other transactions hold).
  virtual Result<std::optional<Task>> PickNextReady(const PickCriteria& criteria) = 0;
  // Up to `limit` of the best ready tasks for the criteria, best first, for a batch of claims: a
  // write transaction must take each out of `ready` before it picks again. On PostgreSQL all are
  // locked in one statement; the default picks one.
  virtual Result<std::vector<Task>> PickReady(const PickCriteria& criteria, int limit) {
    std::vector<Task> out;
    if (limit <= 0) return out;
    TX_ASSIGN_OR_RETURN(std::optional<Task> t, PickNextReady(criteria));
    if (t) out.push_back(std::move(*t));
    return out;
  }
  // The earliest run_after later than criteria.now among ready tasks in the criteria's queues
  // (a retry waiting out its backoff): when an idle worker should look again. nullopt if none.
  virtual Result<std::optional<Millis>> NextReadyAt(const PickCriteria& criteria) = 0;
  virtual Result<std::vector<std::string>> ListDependents(std::string_view task_id) = 0;
  // Running tasks with no active claim. May scan every task: call it in a Read (which never
  // blocks writers) and re-check each candidate inside the Write that repairs it.
  virtual Result<std::vector<std::string>> ListRunningTasksWithoutActiveClaim() = 0;
  virtual Result<std::vector<StatusCount>> CountTasks() = 0;
  // Tasks in `ready` (the queue depth that backpressure limits); counts an index, not the table.
  virtual Result<std::int64_t> CountReadyTasks() = 0;

  // Claims. InsertClaim assigns the next fencing token.
  virtual Status InsertClaim(Claim& claim) = 0;
  virtual Status UpdateClaim(const Claim& claim) = 0;
  virtual Result<std::optional<Claim>> GetClaim(std::int64_t token) = 0;
  // A hint before a batch of GetClaim calls (ClaimService::ReportAndClaimBatch): on PostgreSQL
  // the claims, their tasks and their workers are read and locked in one statement, in token
  // order, and the GetClaim calls that follow cost nothing. The default does nothing.
  virtual Status LockClaims(const std::vector<std::int64_t>& tokens) {
    (void)tokens;
    return Ok();
  }
  virtual Result<std::optional<Claim>> GetActiveClaimForTask(std::string_view task_id) = 0;
  virtual Result<std::vector<Claim>> ListClaimsForTask(std::string_view task_id) = 0;
  virtual Result<std::vector<Claim>> ListActiveClaims() = 0;
  // Active claims whose lease has run out at `now`, as IsExpired (core/claim.h) judges.
  virtual Result<std::vector<Claim>> ListActiveClaimsExpiredAt(const Moment& now) = 0;
  virtual Result<int> CountClaimsForTask(std::string_view task_id) = 0;
  // A worker's claims, newest first: at most `limit`, with tokens below `before_token` (0: from
  // the newest). No index serves it: it reads the claims back from the newest until it has
  // `limit` of the worker's, so a worker that stopped long ago costs a scan of the claims since.
  virtual Result<std::vector<WorkerAttempt>> ListAttemptsOfWorker(std::string_view worker_id,
                                                                  std::int64_t before_token,
                                                                  int limit) = 0;

  // Workers.
  virtual Status InsertWorker(const Worker& worker) = 0;
  virtual Status UpdateWorker(const Worker& worker) = 0;
  // UpdateWorker of each (distinct ids): on PostgreSQL one statement for all of them, which is
  // what lets tx serve record a batch of heartbeats at a fraction of a statement per beat.
  virtual Status UpdateWorkers(const std::vector<Worker>& workers) {
    for (const auto& w : workers) TX_RETURN_IF_ERROR(UpdateWorker(w));
    return Ok();
  }
  virtual Result<std::optional<Worker>> GetWorker(std::string_view id) = 0;
  // Workers in the given states (all when empty), newest registration first.
  virtual Result<std::vector<Worker>> ListWorkers(const std::vector<WorkerStatus>& statuses) = 0;
  // The workers with these ids (those that exist), by id: on PostgreSQL all locked in one
  // statement, in id order (so that two such transactions do not deadlock each other; against
  // others, PostgreSQL detects a deadlock and the store runs the transaction again).
  virtual Result<std::vector<Worker>> GetWorkers(const std::vector<std::string>& ids) = 0;
  // The live workers of one slot of one pool (the one a registration replaces): reads, and on
  // PostgreSQL locks, only those rows, not the whole fleet's.
  virtual Result<std::vector<Worker>> ListLiveWorkersInSlot(std::string_view pool,
                                                            std::string_view slot) = 0;

  // After this transaction commits, wake every ChangeWatch (a task made ready does so by
  // itself; a request to a worker calls this).
  virtual void WakeWatchersOnCommit() = 0;

  // Events.
  virtual Status AppendEvent(Event& event) = 0;  // sets event.id
  // The same for data already serialized: a JSON object exactly as event.data.dump() writes it.
  // The claim path builds its events' data this way instead of building, dumping and freeing a
  // json object in the write transaction.
  virtual Status AppendEventData(const std::string& type, Millis at, const std::string& task_id,
                                 const std::string& worker_id, std::string_view data) = 0;
  // Events after `after_id`, in id order. A reader that goes on from the last id it saw misses
  // none: where ids can commit out of order (PostgreSQL), an event is listed only once every
  // lower id has committed or rolled back.
  virtual Result<std::vector<Event>> ListEvents(std::int64_t after_id, int limit) = 0;
  // The same events with their data unparsed.
  virtual Result<std::vector<StoredEvent>> ListStoredEvents(std::int64_t after_id, int limit) = 0;
  // The last id ListEvents would list; 0 when the log is empty.
  virtual Result<std::int64_t> LastEventId() = 0;

  // The usage ledger (core/usage.h): one row per attempt, keyed by its claim's token. PutUsage
  // inserts the row or replaces the one with its token.
  virtual Status PutUsage(const AttemptUsage& usage) = 0;
  virtual Result<std::optional<AttemptUsage>> GetUsage(std::int64_t token) = 0;
  // A task's rows, by token.
  virtual Result<std::vector<AttemptUsage>> ListUsageForTask(std::string_view task_id) = 0;
  // Rows updated in [since, until) (until 0: no bound), oldest update first.
  virtual Result<std::vector<AttemptUsage>> ListUsage(Millis since, Millis until) = 0;
  // The cost of the rows updated at or after `since`, of one queue's tasks ("" = every queue).
  virtual Result<double> SumCostSince(Millis since, std::string_view queue) = 0;
  // The cost of every attempt of a task.
  virtual Result<double> TaskCost(std::string_view task_id) = 0;
  // The rows of these tasks summed by task, in one query: the tasks that have rows, by task id.
  virtual Result<std::vector<std::pair<std::string, UsageTotal>>> SumUsageOfTasks(
      const std::vector<std::string>& task_ids) = 0;
  // The whole ledger summed by agent profile, by profile: what the metrics count.
  virtual Result<std::vector<std::pair<std::string, UsageTotal>>> UsageByAgent() = 0;

  // Agent limits (core/usage.h): one row per profile and account, inserted or replaced.
  virtual Status PutAgentLimit(const AgentLimit& limit) = 0;
  virtual Result<std::vector<AgentLimit>> ListAgentLimits() = 0;  // by profile, account

  // Records `key` once: true when this call recorded it, false when it was there already. For
  // what must be announced once (a daily budget reached on a given day).
  virtual Result<bool> NoteOnce(std::string_view key, Millis at) = 0;

  // The notification outbox (service/notify_outbox.h). The cursor is the last event fanned out
  // to the sinks; there from the start.
  virtual Result<std::int64_t> GetNotifyCursor() = 0;
  virtual Status SetNotifyCursor(std::int64_t event_id) = 0;
  virtual Status InsertDelivery(Delivery& delivery) = 0;  // sets delivery.seq
  // Writes a delivery's state (status, attempts, next_at, last_at, last_error), by id.
  virtual Status UpdateDelivery(const Delivery& delivery) = 0;
  virtual Result<std::optional<Delivery>> GetDelivery(std::string_view id) = 0;
  // Pending deliveries due at `now`, the earliest due first, at most `limit`.
  virtual Result<std::vector<Delivery>> ListDueDeliveries(Millis now, int limit) = 0;
  // The earliest next_at of a pending delivery; nullopt when none is pending.
  virtual Result<std::optional<Millis>> NextDeliveryAt() = 0;
  // Deliveries newest first, of one status or all, at most `limit` (0 = all).
  virtual Result<std::vector<Delivery>> ListDeliveries(std::optional<DeliveryStatus> status,
                                                       int limit) = 0;

  // The orchestrators' rows, one per pool (OrchestratorState::id).
  virtual Result<std::optional<OrchestratorState>> GetOrchestrator(std::string_view id) = 0;
  virtual Result<std::vector<OrchestratorState>> ListOrchestrators() = 0;  // by id
  // Inserts the row, or replaces the one with its id.
  virtual Status PutOrchestrator(const OrchestratorState& state) = 0;
  // The store's reconciler record: one row, there from the start.
  virtual Result<ReconcilerRecord> GetReconcilerRecord() = 0;
  virtual Status PutReconcilerRecord(const ReconcilerRecord& record) = 0;
};

using TxnFn = std::function<Status(Txn&)>;

// A file descriptor that becomes readable after a transaction (any connection, any process)
// commits a task into `ready` — added, retried, unblocked, released, requeued: how an idle
// worker hears of a new task in milliseconds without polling fast. The wake-up comes after the
// commit, so the woken reader sees it. Wake-ups may be spurious (the caller re-checks the store);
// such a commit is never missed while the watch is open. SQLite: a one-byte write to <db>-wake,
// watched with inotify. PostgreSQL: LISTEN/NOTIFY.
class ChangeWatch {
 public:
  virtual ~ChangeWatch() = default;
  // -1 when nothing outside this connection can change the store (":memory:").
  virtual int fd() const = 0;
  // Consumes pending notifications; true if any may concern the store.
  virtual bool Drain() = 0;
};

// The lead of the store's reconciler among the orchestrators that share it (design.md §5: on
// PostgreSQL any number run and exactly one reconciles). Held from Store::TryLead until the object
// is destroyed, or until Held() first says false; it is never taken back by itself.
class Leadership {
 public:
  virtual ~Leadership() = default;
  // Whether it is still held. PostgreSQL: a session advisory lock on a connection of its own,
  // which the server releases when that connection ends, however its holder died; this asks the
  // server over that connection (one round trip). SQLite: always.
  virtual bool Held() = 0;
};

namespace internal {
template <typename R>
inline constexpr bool kIsResult = false;
template <typename T>
inline constexpr bool kIsResult<Result<T>> = true;
}  // namespace internal

// A transaction function that yields a value: Txn& in, Result<T> (the value or an error) out.
template <typename Fn>
concept TxnFnReturning =
    std::invocable<Fn&, Txn&> && internal::kIsResult<std::invoke_result_t<Fn&, Txn&>>;

class Store {
 public:
  virtual ~Store() = default;
  virtual Status Write(const TxnFn& fn) = 0;
  virtual Status Read(const TxnFn& fn) = 0;

  // Write() and Read() for a transaction that yields a value: the function returns a Result<T>
  // instead of setting a variable of the caller's, and so does the call. Ok: the value of the
  // run that committed (Write may run the function again, and each run starts afresh). Failed:
  // the error Write or Read returns, the function's own (its writes rolled back) or the store's
  // (a failed commit, whatever value the function had returned).
  template <TxnFnReturning Fn>
  std::invoke_result_t<Fn&, Txn&> WriteReturning(Fn&& fn) {
    return RunReturning(&Store::Write, fn);
  }
  template <TxnFnReturning Fn>
  std::invoke_result_t<Fn&, Txn&> ReadReturning(Fn&& fn) {
    return RunReturning(&Store::Read, fn);
  }

  // A cheap number that changes whenever another connection commits (for --follow loops).
  virtual Result<std::int64_t> ChangeCounter() = 0;
  virtual Result<std::unique_ptr<ChangeWatch>> Watch() = 0;
  // What the store is, for messages: the file path or the URL without credentials.
  virtual std::string Describe() const = 0;
  // The clock that lease and heartbeat times are taken from. SQLite: this machine's clock.
  // PostgreSQL: the database server's clock, so hosts with skewed clocks still agree. Callers
  // hand it to the services; tests hand them a FakeClock instead.
  virtual const Clock& clock() const = 0;
  // Takes the lead of the reconciler if nobody holds it: null when another process does.
  // SQLite grants it always: there, one orchestrator runs per store (its pid-file lock), and a
  // reconcile by hand is as safe beside it as two are (each repair re-checks inside its write).
  virtual Result<std::unique_ptr<Leadership>> TryLead() = 0;
  // Whether several orchestrators may run on this store at once (PostgreSQL) or one (SQLite).
  virtual bool SharedByHosts() const = 0;

 private:
  // `out` is returned by name, so a value is moved no more often than through a variable of the
  // caller's (outcomes return a Task, heartbeats a Worker). Its first value is returned
  // only if `run` says ok without having run the function, which no store does.
  template <typename Fn>
  std::invoke_result_t<Fn&, Txn&> RunReturning(Status (Store::*run)(const TxnFn&), Fn& fn) {
    std::invoke_result_t<Fn&, Txn&> out = Error::Internal("the transaction ran no function");
    Status s = (this->*run)([&](Txn& txn) -> Status {
      out = fn(txn);
      if (!out.ok()) return out.error();
      return Ok();
    });
    if (!s.ok()) out = s.error();
    return out;
  }
};

struct OpenOptions {
  std::string url;      // a file path, ":memory:", or postgresql://...
  bool create = false;  // create the database if missing (tx init); otherwise it must exist
  std::string synchronous = "NORMAL";  // SQLite: NORMAL or FULL
  Millis busy_timeout_ms = 10'000;
};

// Opens a store and applies pending migrations. A schema newer than this binary knows is refused.
Result<std::unique_ptr<Store>> Open(const OpenOptions& options);

// The schema version this binary writes.
int SchemaVersion();

}  // namespace tx::store
