#pragma once
// LocalCoordinator: the Coordinator of a worker that shares the store (a SQLite file on this
// machine, or a PostgreSQL server it reaches): each call is one call of the services on a store
// connection of its own.

#include <memory>

#include "service/agent_service.h"
#include "service/task_service.h"
#include "store/store.h"
#include "worker/coordinator.h"

namespace tx::worker {

class LocalCoordinator : public Coordinator {
 public:
  // Opens a connection to `db_path` and, with `watch`, a ChangeWatch on it.
  static Result<std::unique_ptr<LocalCoordinator>> Open(const std::string& db_path,
                                                        const service::ServiceOptions& options,
                                                        bool watch);

  LocalCoordinator(std::unique_ptr<store::Store> store, std::unique_ptr<store::ChangeWatch> watch,
                   const service::ServiceOptions& options);

  Millis NowMs() override { return store_->clock().NowMs(); }
  Moment Now() override { return store_->clock().Now(); }
  Result<Worker> Register(const service::Registration& r, std::vector<Worker>* replaced) override {
    return workers_.Register(r, replaced);
  }
  Result<Worker> Heartbeat(std::string_view id, const service::HeartbeatUpdate& u) override {
    return workers_.Heartbeat(id, u);
  }
  Result<Worker> GetWorker(std::string_view id) override { return workers_.Get(id); }
  Result<Worker> Deregister(std::string_view id, const std::string& reason) override {
    return workers_.Deregister(id, reason);
  }
  Result<std::optional<service::ClaimResult>> ClaimNext(std::string_view worker_id, Millis lease_ms,
                                                        Millis,
                                                        const service::AgentGate* gate) override {
    return claims_.ClaimNext(worker_id, lease_ms, gate);
  }
  bool WaitsForClaims() const override { return false; }
  int watch_fd() override { return watch_ ? watch_->fd() : -1; }
  bool DrainWatch() override { return watch_ && watch_->Drain(); }
  Result<std::optional<Millis>> NextEligibleAt(std::string_view worker_id,
                                               const service::AgentGate* gate) override {
    return claims_.NextEligibleAt(worker_id, gate);
  }
  void Interrupt() override {}
  Result<Claim> Inspect(std::int64_t token) override { return claims_.Inspect(token); }
  Result<Claim> Renew(std::string_view task_id, std::int64_t token) override {
    return claims_.Renew(task_id, token);
  }
  Result<Task> Release(std::string_view task_id, std::int64_t token, EndReason reason) override {
    return claims_.Release(task_id, token, reason);
  }
  Result<Task> Report(std::string_view task_id, std::int64_t token, service::Outcome outcome,
                      const std::string& text, std::optional<int> exit_code,
                      const nlohmann::json* branch) override {
    return claims_.Report(task_id, token, outcome, text, exit_code, branch);
  }
  bool ReportsAndClaims() const override { return true; }
  Result<service::ClaimService::ReportResult> ReportAndClaimNext(
      std::string_view task_id, std::int64_t token, service::Outcome outcome,
      const std::string& text, std::optional<int> exit_code, Millis lease_ms,
      const service::AgentGate* gate) override {
    return claims_.ReportAndClaimNext(task_id, token, outcome, text, exit_code, lease_ms, gate);
  }
  Result<Task> Fail(std::string_view task_id, std::int64_t token, EndReason reason,
                    const std::string& error, std::optional<int> exit_code) override {
    return claims_.Fail(task_id, token, reason, error, exit_code);
  }
  Result<Claim> GiveUp(std::string_view task_id, std::int64_t token, EndReason reason) override {
    return claims_.GiveUp(task_id, token, reason);
  }
  Result<Task> Ask(std::string_view task_id, std::int64_t token,
                   const std::string& question) override {
    return claims_.Ask(task_id, token, question);
  }
  Result<git::TaskMerge> AutoMerge(std::string_view task_id, std::int64_t token,
                                   const git::Settings& git, int cancel_fd) override;
  Status RecordUsage(const AttemptUsage& usage) override { return agents_.RecordUsage(usage); }
  Result<std::vector<AttemptUsage>> TaskUsage(std::string_view task_id) override {
    return agents_.TaskUsage(task_id);
  }
  Result<Task> EndLimited(std::string_view task_id, std::int64_t token,
                          const service::LimitReport& limit) override {
    return agents_.EndLimited(task_id, token, limit);
  }
  Result<Task> EndUnavailable(std::string_view task_id, std::int64_t token, EndReason reason,
                              const std::string& profile, const std::string& why) override {
    return agents_.EndUnavailable(task_id, token, reason, profile, why);
  }
  Result<Task> EndOverBudget(std::string_view task_id, std::int64_t token,
                             const std::string& why) override {
    return agents_.EndOverBudget(task_id, token, why);
  }
  Result<AgentState> GetAgentState(const Budgets& budgets) override;
  Result<double> TaskCost(std::string_view task_id) override;
  Status ShipLog(std::string_view, int, std::int64_t, std::int64_t, std::string_view,
                 bool) override {
    return Ok();
  }
  bool ShipsLogs() const override { return false; }

 private:
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::ChangeWatch> watch_;
  service::WorkerService workers_;
  service::ClaimService claims_;
  service::TaskService tasks_;
  service::AgentService agents_;
};

}  // namespace tx::worker
