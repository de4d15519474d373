#pragma once
// OrchestratorService: the orchestrators' rows in the store — one per pool (OrchestratorState::id,
// "<host>:<.tx directory>"): who holds it, its state (stopped → starting → running → stopping →
// stopped), what an operator asked of it, and the pool it publishes for `tx orchestrator
// status`; and the store's reconciler record (which orchestrator leads, the last pass). Every
// method is one store transaction.
//
// Holding: a row is held by one process at a time. Acquire takes it unless it names a holder that
// is still alive; whether a holder is alive is the caller's judgement (same host: is its pid a
// running tx orchestrator; another host: has it refreshed seen_at lately), passed in as a
// predicate, so this layer does no OS calls. On a store that hosts do not share (SQLite) one
// orchestrator runs at all (design.md §5), so Acquire refuses while any other row is held by a
// live process; the pid-file lock (orchestrator/singleton.h) is the first guard, on this host.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/orchestrator.h"
#include "core/pool_wire.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

// Which orchestrator an operator's command means, among the store's rows:
//   - `wanted` when given (not_found when the store has no such row);
//   - else this directory's own pool, `local`, while its orchestrator runs;
//   - else the only one running;
//   - with several running and none of them local: conflict naming them, unless `any` (status),
//     which takes the leader's (or the first);
//   - with none running: `local`'s row if there is one, else the one seen last; "" when the store
//     has none. (The caller then says nothing runs, or shows the stopped one.)
// `alive` judges each row's holder (ServiceOptions::orchestrator_alive).
Result<std::string> ChooseOrchestrator(const std::vector<OrchestratorState>& rows,
                                       const std::string& wanted, const std::string& local,
                                       const std::string& leader,
                                       const std::function<bool(const OrchestratorState&)>& alive,
                                       bool any);

// Whether anything still works on the store (tx migrate copies only a quiet one, tx restore
// replaces only a quiet one): conflict naming a running orchestrator (not stopped, and
// options.orchestrator_alive), or the workers in a live state whose process still runs
// (options.worker_alive; a name that a hand claim registered, tx claim --worker NAME, is no
// process and does not count).
Status CheckNothingRuns(store::Store& store, const ServiceOptions& options, const Moment& now);

class OrchestratorService {
 public:
  OrchestratorService(store::Store& store, const Clock& clock);

  using HolderAlive = std::function<bool(const OrchestratorState&)>;

  // Takes the row `id` for process `pid` on `hostname` (status starting, started_at and seen_at
  // now, request and pool cleared; event orchestrator.starting). conflict, naming the holder's pid
  // and host, when the row is held (status not stopped) by another process that `alive` says still
  // runs — or, with `exclusive`, when any other orchestrator's row is. A stale holder is taken over
  // (event orchestrator.stale_reclaimed).
  Result<OrchestratorState> Acquire(const std::string& id, const std::string& dir, std::int64_t pid,
                                    const std::string& hostname, const nlohmann::json& config,
                                    const HolderAlive& alive, bool exclusive);

  // Records `status` (running, stopping, stopped) if `pid` still holds row `id`, with an
  // orchestrator.<status> event; conflict if another process holds it. Stopping also makes
  // WorkerService::Register refuse new workers of its pool.
  Status SetStatus(const std::string& id, std::int64_t pid, const std::string& status);

  // Publishes the pool (for status), refreshes seen_at, and takes the pending request (clearing
  // it). Returns the request taken (an empty object when there was none). conflict if `pid` no
  // longer holds the row.
  Result<nlohmann::json> Publish(const std::string& id, std::int64_t pid,
                                 const nlohmann::json& pool);

  // Records the configuration row `id` runs with after it was read again (SIGHUP): what status
  // shows and backpressure reads (max_queue_depth). conflict if `pid` no longer holds the row.
  Status SetConfig(const std::string& id, std::int64_t pid, const nlohmann::json& config);

  // Records that orchestrator `id` leads the reconciler from now on (event orchestrator.leader,
  // naming the one it took over from), unless the record already says so.
  Status RecordLeader(const std::string& id);
  // Clears the record's leader if it is still `id` (a leader that stops).
  Status ClearLeader(const std::string& id);
  Result<ReconcilerRecord> Reconciler();

  // Appends an event about the pool (slot.failed, pool.no_capacity, …) on behalf of the holder.
  Status RecordEvent(const std::string& type, const nlohmann::json& data,
                     const std::string& worker_id = "");

  // The pending request without taking it (a read): cheap enough for every wake-up.
  Result<bool> HasRequest(const std::string& id);

  // Row `id`; a stopped row with that id when there is none.
  Result<OrchestratorState> Get(const std::string& id);
  // Every row, by id.
  Result<std::vector<OrchestratorState>> List();

  // An operator's requests (tx orchestrator scale|stop, the HTTP API's pool routes): recorded on
  // row `id` (as a PoolRequest, core/pool_wire.h) for its running orchestrator, which is woken and
  // answers in its published pool (PoolSnapshot::results, by request id). conflict when it does not
  // run (status stopped), and for a change of the pool while it stops. invalid_argument for n < 0.
  Result<OrchestratorState> RequestScale(const std::string& id, int n,
                                         const std::string& request_id);
  Result<OrchestratorState> RequestStop(const std::string& id, bool force);
  // One more supervised worker, started as `request` says (its id is the request's). Requests
  // queue up: none overwrites another.
  Result<OrchestratorState> RequestCreate(const std::string& id, const CreateRequest& request);
  // Takes `slot` out of the pool: its worker stops (gracefully, or now with `force`) and is not
  // replaced.
  Result<OrchestratorState> RequestRetire(const std::string& id, const std::string& request_id,
                                          const std::string& slot, bool force);

 private:
  store::Store& store_;
  const Clock& clock_;
};

}  // namespace tx::service
