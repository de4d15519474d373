#include "orchestrator/control.h"

#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <thread>

#include "orchestrator/pool_supervisor.h"
#include "service/orchestrator_service.h"
#include "service/worker_service.h"

namespace tx::orchestrator {
namespace {

// Beyond the capacity timeout: how long an answer may take to come back.
constexpr Millis kAnswerMarginMs = 30'000;

std::string NewRequestId(const char* kind, Millis now) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::string(kind) + "-" + std::to_string(rng() % 1'000'000'000) + "-" +
         std::to_string(now);
}

// Orchestrator `id`'s row if it runs, or conflict; a stopping one too when `stopping_ok`.
Result<OrchestratorState> Running(store::Store& store, const service::ServiceOptions& options,
                                  const std::string& id, bool stopping_ok = false) {
  service::OrchestratorService row(store, store.clock());
  TX_ASSIGN_OR_RETURN(OrchestratorState o, row.Get(id));
  if (!options.orchestrator_alive(o, store.clock().NowMs())) {
    return Error::Conflict(o.status == "stopped"
                               ? std::string("no orchestrator is running on this store")
                               : "no orchestrator is running (pid " + std::to_string(o.pid) +
                                     " on " + o.hostname + " is gone; the next start reconciles)");
  }
  if (o.status == "stopping" && !stopping_ok) {
    return Error::Conflict("the orchestrator is stopping");
  }
  return o;
}

// Polls row `id` until `done` holds, and returns it; unavailable when the orchestrator dies or
// `timeout_ms` passes first.
Result<OrchestratorState> AwaitRow(store::Store& store, const service::ServiceOptions& options,
                                   const std::string& id, Millis timeout_ms,
                                   const std::function<bool(const OrchestratorState&)>& done) {
  service::OrchestratorService row(store, store.clock());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    TX_ASSIGN_OR_RETURN(OrchestratorState o, row.Get(id));
    if (done(o)) return o;
    if (!options.orchestrator_alive(o, store.clock().NowMs())) {
      // It may have recorded what we wait for and exited since the read: look once more.
      TX_ASSIGN_OR_RETURN(o, row.Get(id));
      if (done(o)) return o;
      return Error::Unavailable("the orchestrator (pid " + std::to_string(o.pid) + " on " +
                                o.hostname + ") is not running; the next start reconciles");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error::Unavailable("timed out waiting for the orchestrator (pid " +
                                std::to_string(o.pid) + ", " + o.status + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The answer to request `id`, once the orchestrator has given it; a refusal as its error
// (PoolAnswer::AsStatus).
Result<PoolAnswer> AwaitAnswer(store::Store& store, const service::ServiceOptions& options,
                               const std::string& orchestrator, const std::string& id,
                               Millis timeout_ms) {
  std::optional<PoolAnswer> answer;
  TX_RETURN_IF_ERROR(
      AwaitRow(store, options, orchestrator, timeout_ms, [&](const OrchestratorState& now) {
        PoolSnapshot pool = now.pool.get<PoolSnapshot>();
        if (const PoolAnswer* a = pool.FindAnswer(id)) answer = *a;
        return answer.has_value();
      }));
  TX_RETURN_IF_ERROR(answer->AsStatus());
  return std::move(*answer);
}

Millis AnswerTimeout(const OrchestratorState& o) {
  return o.config.value("capacity_timeout_ms", kDefaultCapacityTimeoutMs) + kAnswerMarginMs;
}

}  // namespace

Result<std::string> TargetOrchestrator(store::Store& store, const service::ServiceOptions& given,
                                       const std::string& wanted, const std::string& local) {
  service::ServiceOptions options = service::WithDefaults(given);
  service::OrchestratorService rows(store, store.clock());
  TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> all, rows.List());
  TX_ASSIGN_OR_RETURN(ReconcilerRecord record, rows.Reconciler());
  Millis now = store.clock().NowMs();
  auto alive = [&](const OrchestratorState& o) { return options.orchestrator_alive(o, now); };
  TX_ASSIGN_OR_RETURN(std::string id,
                      service::ChooseOrchestrator(all, wanted, local, record.leader, alive, false));
  if (id.empty()) return Error::Conflict("no orchestrator is running on this store");
  return id;
}

Result<PoolAnswer> ScalePool(store::Store& store, const service::ServiceOptions& given,
                             const std::string& orchestrator, int n) {
  service::ServiceOptions options = service::WithDefaults(given);
  TX_ASSIGN_OR_RETURN(OrchestratorState o, Running(store, options, orchestrator));
  std::string id = NewRequestId("scale", store.clock().NowMs());
  TX_RETURN_IF_ERROR(
      service::OrchestratorService(store, store.clock()).RequestScale(orchestrator, n, id));
  return AwaitAnswer(store, options, orchestrator, id, AnswerTimeout(o));
}

Result<Worker> AddWorker(store::Store& store, const service::ServiceOptions& given,
                         const std::string& orchestrator, const WorkerSpec& spec) {
  service::ServiceOptions options = service::WithDefaults(given);
  TX_ASSIGN_OR_RETURN(OrchestratorState o, Running(store, options, orchestrator));
  std::string id = NewRequestId("create", store.clock().NowMs());
  TX_RETURN_IF_ERROR(
      service::OrchestratorService(store, store.clock())
          .RequestCreate(orchestrator, {id, spec.args, spec.instructions, spec.workdir}));
  TX_ASSIGN_OR_RETURN(PoolAnswer answer,
                      AwaitAnswer(store, options, orchestrator, id, AnswerTimeout(o)));
  const std::string& slot = answer.slot;
  std::int64_t pid = answer.pid.value_or(0);
  service::WorkerService workers(store, store.clock(), options);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAnswerMarginMs);
  for (;;) {
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, workers.List(LiveWorkerStatuses()));
    for (auto& w : live) {
      if (w.slot == slot && w.pid == pid && w.hostname == o.hostname) return std::move(w);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error::Unavailable(slot + " started (pid " + std::to_string(pid) +
                                ") but its worker did not register; see its log in "
                                "logs/workers/" +
                                slot + ".log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<OrchestratorState> StopOrchestrator(store::Store& store,
                                           const service::ServiceOptions& given,
                                           const std::string& orchestrator, bool force, bool wait) {
  service::ServiceOptions options = service::WithDefaults(given);
  TX_ASSIGN_OR_RETURN(OrchestratorState o, Running(store, options, orchestrator, true));
  TX_RETURN_IF_ERROR(
      service::OrchestratorService(store, store.clock()).RequestStop(orchestrator, force));
  if (wait) {
    Millis timeout =
        o.config.value("shutdown_timeout_ms", kDefaultShutdownTimeoutMs) + kAnswerMarginMs;
    TX_RETURN_IF_ERROR(AwaitRow(
        store, options, orchestrator, timeout,
        [&](const OrchestratorState& now) { return now.status == "stopped" || now.pid != o.pid; }));
  }
  return o;
}

Status RetireSlot(store::Store& store, const service::ServiceOptions& given,
                  const std::string& orchestrator, const std::string& slot, bool force) {
  service::ServiceOptions options = service::WithDefaults(given);
  TX_RETURN_IF_ERROR(Running(store, options, orchestrator));
  std::string id = NewRequestId("retire", store.clock().NowMs());
  TX_RETURN_IF_ERROR(service::OrchestratorService(store, store.clock())
                         .RequestRetire(orchestrator, id, slot, force));
  TX_RETURN_IF_ERROR(AwaitAnswer(store, options, orchestrator, id, kAnswerMarginMs));
  return Ok();
}

}  // namespace tx::orchestrator
