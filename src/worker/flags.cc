#include "worker/flags.h"

#include <filesystem>
#include <map>
#include <optional>
#include <type_traits>

#include "core/duration.h"
#include "core/validation.h"
#include "store/location.h"

namespace tx::worker {

namespace fs = std::filesystem;

Result<WorkerConfig> BuildWorkerConfig(const std::string& db_path, const std::string& tx_binary,
                                       const WorkerFlags& a) {
  WorkerConfig c;
  c.db_path = store::AbsoluteLocation(db_path);
  fs::path dir = store::LocalDir(c.db_path);  // .tx: its config.toml and logs/ live there
  c.local_dir = dir.string();
  c.logs_dir = (dir / "logs").string();
  c.tx_binary = tx_binary;
  c.config_file = a.config.empty() ? (dir / "config.toml").string() : a.config;
  TX_RETURN_IF_ERROR(ApplyConfigFile(c.config_file, c));
  if (!a.config.empty() && !fs::exists(a.config)) {
    return Error::InvalidArgument("no config file at " + a.config);
  }
  if (!a.name.empty()) {
    TX_RETURN_IF_ERROR(ValidateName("worker name", a.name));
    c.name = a.name;
  }
  if (!a.slot.empty()) c.slot = a.slot;
  if (!a.capabilities.empty()) c.capabilities = SplitCommas({a.capabilities});
  if (!a.queues.empty()) c.queues = SplitCommas({a.queues});
  if (!a.agent.empty()) c.agent = a.agent;
  if (!a.allowed.empty()) c.allowed_commands = a.allowed;
  if (!a.sandbox.empty()) {
    TX_ASSIGN_OR_RETURN(c.sandbox.kind, ParseSandboxKind(a.sandbox));
  }
  if (!a.workdir.empty()) c.workdir = fs::absolute(a.workdir).string();
  auto duration = [](const std::string& text, Millis& out) -> Status {
    if (text.empty()) return Ok();
    TX_ASSIGN_OR_RETURN(out, ParseDuration(text));
    return Ok();
  };
  if (!a.heartbeat.empty()) {
    TX_RETURN_IF_ERROR(duration(a.heartbeat, c.heartbeat_idle_ms));
    c.heartbeat_running_ms = std::max<Millis>(1, c.heartbeat_idle_ms / 2);
  }
  TX_RETURN_IF_ERROR(duration(a.lease, c.lease_ms));
  TX_RETURN_IF_ERROR(duration(a.stall, c.stall_timeout_ms));
  TX_RETURN_IF_ERROR(duration(a.task_timeout_cap, c.task_timeout_cap_ms));
  TX_RETURN_IF_ERROR(duration(a.shutdown, c.shutdown_timeout_ms));
  TX_RETURN_IF_ERROR(duration(a.kill_grace, c.kill_grace_ms));
  TX_RETURN_IF_ERROR(duration(a.poll, c.poll_ms));
  auto count = [](std::string_view field, const std::string& text, auto& out) -> Status {
    if (text.empty()) return Ok();
    TX_ASSIGN_OR_RETURN(int n, ParseCount(field, text));
    out = static_cast<std::remove_reference_t<decltype(*out)>>(n);
    return Ok();
  };
  std::optional<std::uint64_t> memory_mb;
  TX_RETURN_IF_ERROR(count("--memory-mb", a.memory_mb, memory_mb));
  if (memory_mb) c.limits.memory_bytes = *memory_mb << 20;
  TX_RETURN_IF_ERROR(count("--cpu-percent", a.cpu_percent, c.limits.cpu_percent));
  TX_RETURN_IF_ERROR(count("--open-files", a.open_files, c.limits.open_files));
  TX_RETURN_IF_ERROR(count("--processes", a.processes, c.limits.processes));
  TX_RETURN_IF_ERROR(count("--cpu-seconds", a.cpu_seconds, c.limits.cpu_seconds));
  if (!c.workdir.empty() && !fs::is_directory(c.workdir)) {
    return Error::InvalidArgument("the worker's workdir is not a directory: " + c.workdir);
  }
  if (c.heartbeat_idle_ms < kMinHeartbeatIntervalMs ||
      c.heartbeat_idle_ms > kMaxHeartbeatIntervalMs) {
    return Error::InvalidArgument("the heartbeat interval must be between " +
                                  FormatDuration(kMinHeartbeatIntervalMs) + " and " +
                                  FormatDuration(kMaxHeartbeatIntervalMs) + ", not " +
                                  FormatDuration(c.heartbeat_idle_ms));
  }
  // Longer than the heartbeat interval, a worker that has just ended a task (promising its
  // heartbeat interval from then) could go stale before the next beat the busy rate planned.
  if (c.heartbeat_running_ms < kMinHeartbeatIntervalMs / 2 ||
      c.heartbeat_running_ms > c.heartbeat_idle_ms) {
    return Error::InvalidArgument(
        "the heartbeat interval while running must be between " +
        FormatDuration(kMinHeartbeatIntervalMs / 2) + " and the heartbeat interval (" +
        FormatDuration(c.heartbeat_idle_ms) + "), not " + FormatDuration(c.heartbeat_running_ms));
  }
  // A running worker renews its lease every half interval: a lease shorter than the interval
  // would expire between renewals.
  if (c.lease_ms < std::max(kMinLeaseMs, c.heartbeat_idle_ms)) {
    return Error::InvalidArgument("the lease (" + FormatDuration(c.lease_ms) +
                                  ") must be at least the heartbeat interval (" +
                                  FormatDuration(c.heartbeat_idle_ms) + ")");
  }
  if (c.poll_ms < kMinPollIntervalMs) {
    return Error::InvalidArgument("the poll interval must be at least " +
                                  FormatDuration(kMinPollIntervalMs) + ", not " +
                                  FormatDuration(c.poll_ms));
  }
  // Refuse a bad default agent now rather than at the first task.
  TX_RETURN_IF_ERROR(ResolveAgent(c, c.agent));
  return c;
}

Status ApplyWorkerArgs(const std::vector<std::string>& args, WorkerFlags& flags) {
  const std::map<std::string, std::string WorkerFlags::*> fields = {
      {"--name", &WorkerFlags::name},
      {"--slot", &WorkerFlags::slot},
      {"--capabilities", &WorkerFlags::capabilities},
      {"--queues", &WorkerFlags::queues},
      {"--agent", &WorkerFlags::agent},
      {"--config", &WorkerFlags::config},
      {"--allowed-commands", &WorkerFlags::allowed},
      {"--workdir", &WorkerFlags::workdir},
      {"--sandbox", &WorkerFlags::sandbox},
      {"--heartbeat-interval", &WorkerFlags::heartbeat},
      {"--lease", &WorkerFlags::lease},
      {"--stall-timeout", &WorkerFlags::stall},
      {"--task-timeout-cap", &WorkerFlags::task_timeout_cap},
      {"--shutdown-timeout", &WorkerFlags::shutdown},
      {"--kill-grace", &WorkerFlags::kill_grace},
      {"--poll-interval", &WorkerFlags::poll},
      {"--memory-mb", &WorkerFlags::memory_mb},
      {"--cpu-percent", &WorkerFlags::cpu_percent},
      {"--open-files", &WorkerFlags::open_files},
      {"--processes", &WorkerFlags::processes},
      {"--cpu-seconds", &WorkerFlags::cpu_seconds},
  };
  for (std::size_t i = 0; i < args.size(); i += 2) {
    auto it = fields.find(args[i]);
    if (it == fields.end() || i + 1 >= args.size()) {
      return Error::InvalidArgument("not a worker flag with a value: " + args[i]);
    }
    flags.*(it->second) = args[i + 1];
  }
  return Ok();
}

}  // namespace tx::worker
