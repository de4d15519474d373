#include "service/worker_service.h"

#include <map>
#include <set>

#include "core/duration.h"
#include "core/ids.h"
#include "core/validation.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;
using detail::LoadWorker;

WorkerService::WorkerService(store::Store& store, const Clock& clock, ServiceOptions options)
    : store_(store), clock_(clock), options_(WithDefaults(std::move(options))) {}

namespace {
Status ValidateRegistration(const Registration& r) {
  if (!r.name.empty()) TX_RETURN_IF_ERROR(ValidateName("worker name", r.name));
  if (!r.slot.empty()) TX_RETURN_IF_ERROR(ValidateName("slot", r.slot));
  for (const auto& c : r.capabilities) TX_RETURN_IF_ERROR(ValidateName("capability", c));
  for (const auto& q : r.queues) TX_RETURN_IF_ERROR(ValidateName("queue", q));
  // 0: the default.
  if (r.heartbeat_interval_ms != 0 && (r.heartbeat_interval_ms < kMinHeartbeatIntervalMs ||
                                       r.heartbeat_interval_ms > kMaxHeartbeatIntervalMs)) {
    return Error::InvalidArgument("the heartbeat interval must be between " +
                                  FormatDuration(kMinHeartbeatIntervalMs) + " and " +
                                  FormatDuration(kMaxHeartbeatIntervalMs) + ", not " +
                                  FormatDuration(r.heartbeat_interval_ms));
  }
  // A busy worker beats at half its interval by default: 50 ms at the shortest interval.
  if (r.busy_heartbeat_interval_ms != 0 &&
      (r.busy_heartbeat_interval_ms < kMinHeartbeatIntervalMs / 2 ||
       r.busy_heartbeat_interval_ms > kMaxHeartbeatIntervalMs)) {
    return Error::InvalidArgument("the busy heartbeat interval must be between " +
                                  FormatDuration(kMinHeartbeatIntervalMs / 2) + " and " +
                                  FormatDuration(kMaxHeartbeatIntervalMs) + ", not " +
                                  FormatDuration(r.busy_heartbeat_interval_ms));
  }
  return Ok();
}

}  // namespace

// A stopping orchestrator takes no new workers: the one of the worker's pool; for a worker of no
// pool (a remote one), when every running orchestrator is stopping. One that died while stopping
// must not keep refusing registrations.
Status WorkerService::CheckNotStopping(store::Txn& txn, const std::string& pool, Millis now) {
  TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> all, txn.ListOrchestrators());
  bool stopping = false, running = false;
  for (const auto& o : all) {
    if (o.status == "stopped" || !options_.orchestrator_alive(o, now)) continue;
    if (!pool.empty() && o.id != pool) continue;
    (o.status == "stopping" ? stopping : running) = true;
  }
  if (stopping && !running) {
    return Error::Unavailable("the orchestrator is stopping: no new workers are registered");
  }
  return Ok();
}

Result<Worker> WorkerService::Register(Registration r, std::vector<Worker>* replaced) {
  TX_RETURN_IF_ERROR(ValidateRegistration(r));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    if (replaced != nullptr) replaced->clear();  // a retried transaction starts over
    TX_RETURN_IF_ERROR(CheckNotStopping(txn, r.pool, now));
    if (!r.slot.empty()) {
      TX_ASSIGN_OR_RETURN(std::vector<Worker> live, txn.ListLiveWorkersInSlot(r.pool, r.slot));
      for (auto& old : live) {
        if (IsLive(old.status) && !r.replace_fresh && !IsStale(old, now)) {
          return Error::Conflict("slot " + r.slot + " is held by live worker " + old.id +
                                 " (heartbeat " + FormatDuration(SilentFor(old, now)) +
                                 " ago): it is replaced only once silent for two of its "
                                 "heartbeat intervals");
        }
      }
      for (auto& old : live) {
        if (IsLive(old.status)) {
          TX_RETURN_IF_ERROR(detail::MarkDead(txn, old, "replaced by a new registration", now));
          if (replaced != nullptr) replaced->push_back(old);
        }
      }
    }
    TX_ASSIGN_OR_RETURN(Worker w,
                        detail::InsertWorker(txn, r, now, options_.default_heartbeat_interval_ms));
    return w;
  });
}

namespace {

// Checks a heartbeat of `w` and applies it to `w`: conflict, writing nothing, when the worker is
// no longer live; else its heartbeat time, status (with a worker.status event), metadata and
// request as `update` says. The caller writes the row.
Status ApplyHeartbeat(store::Txn& txn, Worker& w, const HeartbeatUpdate& update,
                      const Moment& now) {
  if (!IsLive(w.status)) {
    return Error::Conflict("worker " + w.id + " is " + std::string(ToString(w.status)) +
                           "; register again");
  }
  RecordBeat(w, now);
  if (update.status && *update.status != w.status) {
    TX_RETURN_IF_ERROR(Emit(txn, now, "worker.status", "", w.id,
                            {{"from", ToString(w.status)}, {"to", ToString(*update.status)}}));
    w.status = *update.status;
  }
  if (update.metadata.is_object() && !update.metadata.empty()) {
    w.metadata.merge_patch(update.metadata);
  }
  if (update.clear_request) w.request = WorkerRequest::kNone;
  return Ok();
}

}  // namespace

Result<Worker> WorkerService::Heartbeat(std::string_view id, const HeartbeatUpdate& update) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(Worker w, LoadWorker(txn, id));
    TX_RETURN_IF_ERROR(ApplyHeartbeat(txn, w, update, now));
    TX_RETURN_IF_ERROR(txn.UpdateWorker(w));
    return w;
  });
}

std::vector<Result<Worker>> WorkerService::HeartbeatMany(const std::vector<Beat>& beats) {
  std::vector<Result<Worker>> out;
  const Moment now = clock_.Now();
  Status s = store_.Write([&](store::Txn& txn) -> Status {
    out.clear();  // a transaction run again starts over
    std::vector<std::string> ids;
    for (const auto& b : beats) ids.push_back(b.worker_id);
    TX_ASSIGN_OR_RETURN(std::vector<Worker> found, txn.GetWorkers(ids));
    std::map<std::string, Worker> by_id;
    for (auto& w : found) by_id.emplace(w.id, std::move(w));
    std::set<std::string> beaten;
    for (const auto& b : beats) {
      auto it = by_id.find(b.worker_id);
      if (it == by_id.end()) {
        out.emplace_back(Error::NotFound("worker " + b.worker_id + " not found"));
        continue;
      }
      // A worker beating twice in one batch: the second sees the first's row.
      Worker w = it->second;
      Status applied = ApplyHeartbeat(txn, w, b.update, now);
      if (!applied.ok()) {
        out.emplace_back(applied.error());
        continue;
      }
      it->second = w;
      beaten.insert(w.id);
      out.emplace_back(std::move(w));
    }
    // Each worker's row as its last beat left it, all written together.
    std::vector<Worker> rows;
    for (const auto& id : beaten) rows.push_back(by_id.at(id));
    return txn.UpdateWorkers(rows);
  });
  if (!s.ok()) {
    out.clear();
    for (std::size_t i = 0; i < beats.size(); ++i) out.emplace_back(s.error());
  }
  return out;
}

Result<Worker> WorkerService::Request(std::string_view id_or_name, WorkerRequest request) {
  TX_ASSIGN_OR_RETURN(Worker found, Get(id_or_name));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(Worker w, detail::LoadLiveWorker(txn, found.id));
    bool paused = w.status == WorkerStatus::kPaused || w.request == WorkerRequest::kPause;
    if (request == WorkerRequest::kPause && paused) {
      return Error::Conflict("worker " + w.id + " is already paused");
    }
    if (request == WorkerRequest::kResume && !paused) {
      return Error::Conflict("worker " + w.id + " is not paused (it is " +
                             std::string(ToString(w.status)) + ")");
    }
    // A pending stop is not downgraded by a later pause or resume.
    bool stopping = w.request == WorkerRequest::kStop || w.request == WorkerRequest::kStopNow;
    if (!stopping || request == WorkerRequest::kStopNow) w.request = request;
    TX_RETURN_IF_ERROR(txn.UpdateWorker(w));
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "worker.requested", "", w.id, {{"request", ToString(request)}}));
    txn.WakeWatchersOnCommit();
    return w;
  });
}

Result<Worker> WorkerService::Deregister(std::string_view id, const std::string& reason) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_RETURN_IF_ERROR(detail::LoadLiveWorker(txn, id));
    TX_RETURN_IF_ERROR(
        detail::ReleaseClaimsOf(txn, std::string(id), EndReason::kShutdown, false, now));
    TX_ASSIGN_OR_RETURN(Worker w, LoadWorker(txn, id));
    w.status = WorkerStatus::kStopped;
    w.reason = reason;
    w.current_task_id.clear();
    TX_RETURN_IF_ERROR(txn.UpdateWorker(w));
    TX_RETURN_IF_ERROR(Emit(txn, now, "worker.stopped", "", w.id, {{"reason", reason}}));
    return w;
  });
}

Result<Worker> WorkerService::MarkDead(std::string_view id, const std::string& reason) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(Worker w, detail::LoadLiveWorker(txn, id));
    TX_RETURN_IF_ERROR(detail::MarkDead(txn, w, reason, now));
    return w;
  });
}

Result<Worker> WorkerService::MarkCrashed(std::string_view id, const nlohmann::json& exit) {
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(Worker w, detail::LoadLiveWorker(txn, id));
    std::string task = w.current_task_id;
    std::string how = exit.value("description", std::string("unknown"));
    TX_RETURN_IF_ERROR(detail::MarkDead(txn, w, "process exited: " + how, now));
    nlohmann::json data = exit;
    data["slot"] = w.slot;
    data["pid"] = w.pid;
    if (!task.empty()) data["requeued_task"] = task;
    TX_RETURN_IF_ERROR(Emit(txn, now, "worker.crashed", task, w.id, data));
    return w;
  });
}

Result<std::vector<Worker>> WorkerService::List(const std::vector<WorkerStatus>& statuses) {
  std::vector<Worker> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListWorkers(statuses));
    return Ok();
  }));
  return out;
}

namespace {

// By id, or by name or slot: the newest registration with it.
Result<Worker> FindWorker(store::Txn& txn, std::string_view id_or_name) {
  TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(id_or_name));
  if (w) return std::move(*w);
  TX_ASSIGN_OR_RETURN(std::vector<Worker> all, txn.ListWorkers({}));
  for (auto& cand : all) {  // newest first
    if (cand.name == id_or_name || cand.slot == id_or_name) return std::move(cand);
  }
  return Error::NotFound("worker " + std::string(id_or_name) + " not found");
}

}  // namespace

Result<Worker> WorkerService::Get(std::string_view id_or_name) {
  return store_.ReadReturning([&](store::Txn& txn) { return FindWorker(txn, id_or_name); });
}

Result<WorkerService::History> WorkerService::Attempts(std::string_view id_or_name,
                                                       std::int64_t before_token, int limit) {
  History out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out.worker, FindWorker(txn, id_or_name));
    TX_ASSIGN_OR_RETURN(out.attempts, txn.ListAttemptsOfWorker(out.worker.id, before_token, limit));
    return Ok();
  }));
  return out;
}

Result<Worker> WorkerService::EnsureByName(const ManualWorker& who) {
  TX_RETURN_IF_ERROR(ValidateName("worker name", who.name));
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Worker> {
    TX_ASSIGN_OR_RETURN(Worker w, detail::EnsureWorkerByName(txn, who, now));
    return w;
  });
}

}  // namespace tx::service
