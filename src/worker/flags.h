#pragma once
// The flags of a worker, turned into its configuration in one place: `tx worker start` runs
// with it, and `tx orchestrator start` (and POST /api/workers) check the flags a worker will be
// started with, so a typo is refused before any worker starts instead of crash-looping a pool.

#include <string>
#include <vector>

#include "core/error.h"
#include "worker/config.h"

namespace tx::worker {

struct WorkerFlags {
  std::string name, slot, capabilities, queues, agent, config, allowed, workdir, sandbox;
  std::string heartbeat, lease, stall, task_timeout_cap, shutdown, kill_grace, poll;
  std::string memory_mb, cpu_percent, open_files, processes, cpu_seconds;
};

// config.toml beside the store `db_path` (or --config), then the flags over it. Refuses, naming
// it, a missing config file, a bad duration or count, a non-positive interval and an unknown
// agent. `tx_binary` is the tx its agents find first on their PATH.
Result<WorkerConfig> BuildWorkerConfig(const std::string& db_path, const std::string& tx_binary,
                                       const WorkerFlags& flags);

// Sets the flags that `args` names (pairs such as {"--agent", "codex"}), as the orchestrator
// appends a slot's own settings to its workers' command line. Unknown flags are refused.
Status ApplyWorkerArgs(const std::vector<std::string>& args, WorkerFlags& flags);

}  // namespace tx::worker
