#pragma once
// OrchestratorConfig: what `tx orchestrator start` runs with — defaults (design.md §6), then the
// [orchestrator] section of `.tx/config.toml`, then command-line flags. The workers it starts
// read their own [worker] section; the orchestrator passes them its worker flags (agent,
// capabilities, queues, heartbeat, lease, limits …) and per-slot overrides from
// [orchestrator.slots.<slot>].

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/notify.h"
#include "core/task.h"
#include "core/worker.h"
#include "exec/container.h"
#include "log/process_log.h"
#include "orchestrator/pool_supervisor.h"

namespace tx::orchestrator {

struct OrchestratorConfig {
  std::string db_path;      // absolute
  std::string store_dir;    // holds orchestrator.pid, orchestrator.log, logs/workers/
  std::string tx_binary;    // this executable, started as `tx worker start --slot …`
  std::string config_path;  // passed to the workers as --config when given explicitly

  int workers = 2;
  PoolPolicy policy;
  Millis reconcile_interval_ms = 60'000;
  Millis shutdown_timeout_ms = kDefaultShutdownTimeoutMs;
  Millis review_timeout_ms = kDefaultReviewTimeoutMs;  // marked overdue past it; 0 = never
  Millis question_timeout_ms = 0;      // a task waiting for an answer longer is failed; 0 = never
  Millis publish_interval_ms = 2'000;  // how often the pool is written to the store at least
  std::int64_t max_queue_depth = 0;    // 0 = no backpressure
  std::string heartbeat_file;          // mirror of the pool's heartbeat document; empty = none
  std::string http;                    // where the HTTP API is served ("http://…"); for status
  std::vector<SinkSpec> notify;        // [[notify]]: where notifications go (docs/notifications.md)
  // The orchestrator's log and its workers' (docs/operations.md, "Logs and signals"): text or
  // JSON lines, and the size past which orchestrator.log and each logs/workers/slot-K.log are
  // rotated (MB, decimals allowed; 0 = never).
  log::LogFormat log_format = log::LogFormat::kText;
  double log_max_mb = log::kDefaultMaxMb;
  // The container engines the workers may run agents with (worker::ContainerEngines), each its
  // command with its global options: what removes, by label, the containers of an agent whose
  // worker died (exec/container.h).
  std::vector<exec::ContainerEngine> container_engines;

  // Flags for every worker, e.g. {"--agent", "claude", "--heartbeat-interval", "10s"}.
  std::vector<std::string> worker_args;
  // Per slot, flags appended after worker_args (so they win), from [orchestrator.slots.<slot>].
  std::map<std::string, std::vector<std::string>> slot_args;

  std::string pid_path() const { return store_dir + "/orchestrator.pid"; }
  std::string log_path() const { return store_dir + "/orchestrator.log"; }
  std::string worker_log_path(const std::string& slot) const {
    return store_dir + "/logs/workers/" + slot + ".log";
  }
};

// The flags of a worker whose own settings (`own`, a slot's or a created worker's) replace the
// pool's (`pool`) flag by flag: the worker's command line refuses a flag given twice. Both are
// flag-value pairs.
std::vector<std::string> MergeWorkerArgs(const std::vector<std::string>& pool,
                                         const std::vector<std::string>& own);

// Applies the [orchestrator] section of a TOML document (other sections are the worker's and are
// not checked here). Keys: workers, max_workers, reconcile_interval, shutdown_timeout,
// review_timeout ("0s": off), question_timeout (off unless set; "0s": off),
// max_restarts, restart_window, max_backoff, capacity_timeout, max_queue_depth, heartbeat_file,
// log_format ("text" or "json"), log_max_mb (a number, decimals allowed; 0 = no rotation), and
// slots.<slot>.{agent, capabilities, queues}. Unknown keys and wrong types are refused with
// invalid_argument naming the key; a syntax error names line and column.
Status ApplyOrchestratorToml(const std::string& toml_text, const std::string& origin,
                             OrchestratorConfig& config);
// Reads `path` and applies it; a missing file changes nothing.
Status ApplyOrchestratorFile(const std::string& path, OrchestratorConfig& config);

// What a configuration read again on SIGHUP changes in a running orchestrator's
// (docs/operations.md, "Logs and signals"). ReloadConfig copies from `fresh` into `running` every
// setting that may change at runtime and names each that changed, in the file's words, in `applied`
// (workers, max_workers, max_restarts, restart_window, max_backoff, capacity_timeout,
// reconcile_interval, review_timeout, question_timeout, max_queue_depth, heartbeat_file, slots,
// log_format, log_max_mb, notify); those that differ but take effect only at the next start
// (shutdown_timeout, which the running workers were started with) are named in `at_restart` and
// left as they are. Nothing else of `running` changes (its paths, flags for the workers, HTTP
// address, container engines). `summary` says it in one line: "workers 2 → 3, notify (1 sink)".
struct ConfigReload {
  std::vector<std::string> applied;
  std::vector<std::string> at_restart;
  std::string summary;
  bool Changed(const std::string& key) const;
};
ConfigReload ReloadConfig(OrchestratorConfig& running, const OrchestratorConfig& fresh);

// The flags the orchestrator starts each worker's log with: --log-file (its slot's file),
// --log-max-mb and --log-format.
std::vector<std::string> WorkerLogArgs(const OrchestratorConfig& config, const std::string& slot);

// The store-visible part of the configuration (the orchestrator row's config): what status
// shows, and what TaskService reads for backpressure (max_queue_depth).
nlohmann::json ConfigJson(const OrchestratorConfig& config);

}  // namespace tx::orchestrator
