#pragma once
// OrchestratorService: the orchestrator's singleton row in the store — who holds it, its state
// (stopped → starting → running → stopping → stopped), what an operator asked of it, and the pool
// it publishes for `tx orchestrator status`. Every method is one store transaction.
//
// Holding: one orchestrator per store (design.md §5). Acquire takes the row unless it names a
// holder that is still alive; whether a holder is alive is the caller's judgement (same host: is
// its pid a running tx orchestrator; another host: has it refreshed seen_at lately), passed in as
// a predicate, so this layer does no OS calls. On SQLite a pid-file lock (orchestrator/singleton.h)
// is taken first and the row is the second line of defence; on PostgreSQL an advisory lock will be.

#include <functional>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/orchestrator.h"
#include "store/store.h"

namespace tx::service {

class OrchestratorService {
 public:
  OrchestratorService(store::Store& store, const Clock& clock);

  using HolderAlive = std::function<bool(const OrchestratorState&)>;

  // Takes the row for process `pid` on `hostname` with `config` (status starting, started_at and
  // seen_at now, request and pool cleared; event orchestrator.starting). conflict, naming the
  // holder's pid and host, when the row is held (status not stopped) by another process that
  // `alive` says still runs. A stale holder is taken over (event orchestrator.stale_reclaimed).
  Result<OrchestratorState> Acquire(std::int64_t pid, const std::string& hostname,
                                    const nlohmann::json& config, const HolderAlive& alive);

  // Records `status` (running, stopping, stopped) if `pid` still holds the row, with an
  // orchestrator.<status> event; conflict if another process holds it. Stopping also makes
  // WorkerService::Register refuse new workers.
  Status SetStatus(std::int64_t pid, const std::string& status);

  // Publishes the pool (for status), refreshes seen_at, and takes the pending request (clearing
  // it). Returns the request taken (an empty object when there was none). conflict if `pid` no
  // longer holds the row.
  Result<nlohmann::json> Publish(std::int64_t pid, const nlohmann::json& pool);

  // Appends an event about the pool (slot.failed, pool.no_capacity, …) on behalf of the holder.
  Status RecordEvent(const std::string& type, const nlohmann::json& data,
                     const std::string& worker_id = "");

  // The pending request without taking it (a read): cheap enough for every wake-up.
  Result<bool> HasRequest();

  Result<OrchestratorState> Get();

  // An operator's requests (tx orchestrator scale|stop, the HTTP API's pool routes): recorded on
  // the row for the running orchestrator, which is woken and answers in its published pool under
  // "results"/<request id>. conflict when no orchestrator runs (status stopped), and for a change
  // of the pool while it stops. invalid_argument for n < 0.
  Result<OrchestratorState> RequestScale(int n, const std::string& request_id);
  Result<OrchestratorState> RequestStop(bool force);
  // One more supervised worker, started with `spec` ({"args": [worker flags], "instructions",
  // "workdir"}). Requests queue up: none overwrites another.
  Result<OrchestratorState> RequestCreate(const std::string& request_id,
                                          const nlohmann::json& spec);
  // Takes `slot` out of the pool: its worker stops (gracefully, or now with `force`) and is not
  // replaced.
  Result<OrchestratorState> RequestRetire(const std::string& request_id, const std::string& slot,
                                          bool force);

 private:
  store::Store& store_;
  const Clock& clock_;
};

}  // namespace tx::service
