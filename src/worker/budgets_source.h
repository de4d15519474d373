#pragma once
// The fleet's daily budgets as config.toml says them now: read again whenever the file changes,
// so that an operator's raised (or new) budget takes effect without restarting a worker or the
// server. A file that no longer parses keeps the budgets read last. Thread-safe.

#include <filesystem>
#include <string>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "service/agent_service.h"

namespace tx::worker {

class BudgetsSource {
 public:
  // `path`: the config file (it may not exist yet); `initial`: what was read at start.
  BudgetsSource(std::string path, Budgets initial);

  // One stat of the file; a parse only when it changed.
  Budgets Current();

 private:
  std::string path_;
  Mutex mu_;
  Budgets budgets_ TX_GUARDED_BY(mu_);
  std::filesystem::file_time_type seen_ TX_GUARDED_BY(mu_) = {};
};

}  // namespace tx::worker
