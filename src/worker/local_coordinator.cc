#include "worker/local_coordinator.h"

namespace tx::worker {

Result<std::unique_ptr<LocalCoordinator>> LocalCoordinator::Open(
    const std::string& db_path, const service::ServiceOptions& options, bool watch) {
  TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::Open({db_path, false}));
  std::unique_ptr<store::ChangeWatch> w;
  if (watch) {
    TX_ASSIGN_OR_RETURN(w, store->Watch());
  }
  return std::make_unique<LocalCoordinator>(std::move(store), std::move(w), options);
}

LocalCoordinator::LocalCoordinator(std::unique_ptr<store::Store> store,
                                   std::unique_ptr<store::ChangeWatch> watch,
                                   const service::ServiceOptions& options)
    : store_(std::move(store)),
      watch_(std::move(watch)),
      workers_(*store_, store_->clock(), options),
      claims_(*store_, store_->clock(), options),
      tasks_(*store_, store_->clock(), options),
      agents_(*store_, store_->clock(), options) {}

Result<Coordinator::AgentState> LocalCoordinator::GetAgentState(const Budgets& budgets) {
  AgentState out;
  TX_RETURN_IF_ERROR(agents_.ResumeExpired());
  TX_ASSIGN_OR_RETURN(out.limits, agents_.Limits());
  if (budgets.any()) {
    TX_ASSIGN_OR_RETURN(out.budget, agents_.CheckBudgets(budgets));
  }
  return out;
}

Result<double> LocalCoordinator::TaskCost(std::string_view task_id) {
  return agents_.TaskCost(task_id);
}

Result<git::TaskMerge> LocalCoordinator::AutoMerge(std::string_view task_id, std::int64_t,
                                                   const git::Settings& git, int cancel_fd) {
  return git::MergeApprovedTask(tasks_, task_id, git, "auto-merge",
                                {.auto_merge = true, .cancel_fd = cancel_fd});
}

}  // namespace tx::worker
