#pragma once
// WorkerService: registration, heartbeats, deregistration and death. Every method is one store
// transaction. A worker gets a fresh id at each registration; its slot is what persists, and a
// new registration for a slot retires the slot's previous live incarnation.

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/worker.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

struct Registration {
  std::string name;  // defaults to the slot, else to the new id
  std::string slot;
  // The PoolId of the orchestrator that supervises it, or would: a worker started by hand from
  // an orchestrator's directory belongs to its pool. A slot is unique within a pool.
  std::string pool;
  std::string hostname;
  std::int64_t pid = 0;
  std::vector<std::string> capabilities;
  std::vector<std::string> queues = {"default"};
  Millis heartbeat_interval_ms = 0;  // 0 = the default
  // The interval it promises while busy: 0 = heartbeat_interval_ms (core/worker.h).
  Millis busy_heartbeat_interval_ms = 0;
  nlohmann::json metadata = nlohmann::json::object();
  // Whether it may replace a live worker of its slot that still heartbeats (a worker's restart on
  // its own machine may; a registration over HTTP may not: conflict, until that one is stale).
  bool replace_fresh = true;
};

// A hand-run claimer (tx claim): a worker name registered on first use, with a heartbeat interval
// long enough to outlive the command.
struct ManualWorker {
  std::string name;
  Millis heartbeat_interval_ms = 0;
  std::string hostname;
  std::int64_t pid = 0;
};

struct HeartbeatUpdate {
  std::optional<WorkerStatus> status;                  // idle, busy, paused or stopping
  nlohmann::json metadata = nlohmann::json::object();  // merged into the worker's metadata
  bool clear_request = false;                          // the worker has acted on its request
};

class WorkerService {
 public:
  WorkerService(store::Store& store, const Clock& clock, ServiceOptions options = {});

  // Registers a worker `idle` with a fresh id; registration counts as its first heartbeat.
  // A previous live worker in the same slot is marked dead ("replaced") and its claims recovered;
  // `replaced`, when given, receives those workers (whose agents the new incarnation kills, by
  // the TX_WORKER_ID they carry).
  Result<Worker> Register(Registration r, std::vector<Worker>* replaced = nullptr);

  // Records a heartbeat. conflict: the worker is dead or stopped (it must register again).
  Result<Worker> Heartbeat(std::string_view id, const HeartbeatUpdate& update);

  // Many heartbeats in one transaction (tx serve gathers the beats of its remote workers that
  // arrive together): each recorded as Heartbeat would, with its own result, in `beats`' order;
  // one worker refused (unknown, dead, stopped) does not hold up the others. An error of the
  // store itself is every beat's result.
  struct Beat {
    std::string worker_id;
    HeartbeatUpdate update;
  };
  std::vector<Result<Worker>> HeartbeatMany(const std::vector<Beat>& beats);

  // Asks a live worker to pause, resume or stop (tx worker pause|resume|stop) and wakes it; the
  // worker acts, records its new status and clears the request. `id_or_name` as for Get.
  // conflict: the worker is stopped or dead; pausing a paused worker; resuming one that is
  // neither paused nor about to be.
  Result<Worker> Request(std::string_view id_or_name, WorkerRequest request);

  // Marks the worker stopped with `reason`; any claim it still holds is released without
  // counting the attempt (a graceful exit).
  Result<Worker> Deregister(std::string_view id, const std::string& reason);

  // Marks a live worker dead; its claims end `worker_died` and their tasks are requeued.
  Result<Worker> MarkDead(std::string_view id, const std::string& reason);

  // The supervisor saw the worker's process exit while it was still registered: as MarkDead
  // (reason "process exited: <how>"), plus a worker.crashed event whose data is `exit` (the exit
  // code, its class — killed, terminated, exited — and a description) with the tasks requeued.
  // conflict when the worker is no longer live (it deregistered before exiting).
  Result<Worker> MarkCrashed(std::string_view id, const nlohmann::json& exit);

  Result<std::vector<Worker>> List(const std::vector<WorkerStatus>& statuses = {});
  // By id, or by name or slot (the newest registration with it).
  Result<Worker> Get(std::string_view id_or_name);
  // A worker (`id_or_name` as for Get) and its attempts, newest first: at most `limit`, with
  // tokens below `before_token` (0: from the newest), each with its task's title and cost. One
  // read. not_found for an unknown worker.
  struct History {
    Worker worker;
    std::vector<store::WorkerAttempt> attempts;
  };
  Result<History> Attempts(std::string_view id_or_name, std::int64_t before_token, int limit);

  // The worker a hand-run command acts as: the newest live worker with this name, or a new one
  // registered with `heartbeat_interval_ms` so it is not declared dead between commands.
  Result<Worker> EnsureByName(const ManualWorker& who);

 private:
  Status CheckNotStopping(store::Txn& txn, const std::string& pool, Millis now);

  store::Store& store_;
  const Clock& clock_;
  ServiceOptions options_;
};

}  // namespace tx::service
