#include "worker/budgets_source.h"

#include "worker/config.h"

namespace tx::worker {

BudgetsSource::BudgetsSource(std::string path, Budgets initial)
    : path_(std::move(path)), budgets_(std::move(initial)) {
  std::error_code ec;
  seen_ = std::filesystem::last_write_time(path_, ec);
}

Budgets BudgetsSource::Current() {
  MutexLock lock(mu_);
  std::error_code ec;
  auto at = std::filesystem::last_write_time(path_, ec);
  if (ec) at = {};  // gone: the budgets read last stand until it is back
  if (!ec && at != seen_) {
    WorkerConfig fresh;
    if (ApplyConfigFile(path_, fresh).ok()) budgets_ = fresh.budgets;
    seen_ = at;
  }
  return budgets_;
}

}  // namespace tx::worker
