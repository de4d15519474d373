#include "worker/spawn_plan.h"

#include <filesystem>

#include "core/agent.h"
#include "core/validation.h"

extern char** environ;

namespace tx::worker {

std::string AttemptLogPath(const std::string& logs_dir, const std::string& task_id, int attempt) {
  return logs_dir + "/" + task_id + "/" + std::to_string(attempt) + ".log";
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::string AgentPrompt(const Task& task, int attempt, const Worktree* worktree) {
  if (worktree == nullptr) return BuildPrompt(task, attempt);
  Task shown = task;
  shown.workdir = worktree->path;
  return BuildPrompt(shown, attempt) +
         "\n## Git\nThis directory is a git worktree of its own, on branch " + worktree->branch +
         " (made from " + worktree->base +
         "). Commit your work on this branch; do not switch branches or push. Only what is "
         "committed is reviewed and merged.\n";
}

Result<exec::SpawnSpec> PlanSpawn(const WorkerConfig& config, const Task& task, const Claim& claim,
                                  const std::vector<std::string>& base_env,
                                  const Worktree* worktree) {
  std::vector<std::string> argv_template = task.command;
  if (argv_template.empty()) {
    const std::string& agent = task.agent.empty() ? config.agent : task.agent;
    TX_ASSIGN_OR_RETURN(argv_template, ResolveAgent(config, agent));
  }
  std::string workdir = task.workdir.empty() ? config.workdir : task.workdir;
  if (worktree != nullptr) workdir = worktree->path;
  AgentContext context{AgentPrompt(task, claim.attempt, worktree), task.id, task.title, workdir,
                       claim.attempt};

  exec::SpawnSpec spec;
  spec.argv = ExpandTemplate(argv_template, context);
  if (worktree != nullptr && worktree->needs_setup) {
    spec.argv = WithSetup(*worktree, GitSettingsFor(config, task.repo).setup, spec.argv);
  }
  std::string path;
  for (const auto& kv : base_env) {
    if (kv.rfind("TX_", 0) == 0) continue;  // never leak the worker's own TX_* settings
    // AgentGitEnv adds to the count it found.
    if (worktree != nullptr && kv.rfind("GIT_CONFIG_COUNT=", 0) == 0) continue;
    if (kv.rfind("PATH=", 0) == 0) {
      path = kv.substr(5);
      continue;
    }
    spec.env.push_back(kv);
  }
  std::string tx_dir = std::filesystem::path(config.tx_binary).parent_path().string();
  if (!tx_dir.empty()) path = path.empty() ? tx_dir : tx_dir + ":" + path;
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  spec.env.push_back("PATH=" + path);
  spec.env.push_back("TX_TASK_ID=" + task.id);
  spec.env.push_back("TX_WORKER_ID=" + claim.worker_id);
  spec.env.push_back("TX_CLAIM_TOKEN=" + std::to_string(claim.token));
  spec.env.push_back("TX_ATTEMPT=" + std::to_string(claim.attempt));
  if (config.server_url.empty()) {
    spec.env.push_back("TX_DB=" + config.db_path);
  } else {
    // A remote worker's agents reach the fleet as it does: over HTTP (tx reads these).
    spec.env.push_back("TX_SERVER=" + config.server_url);
    spec.env.push_back("TX_API_TOKEN=" + config.server_token);
  }
  if (!config.allowed_commands.empty()) {
    spec.env.push_back("TX_ALLOWED_COMMANDS=" + config.allowed_commands);
  }
  if (worktree != nullptr) {
    for (auto& kv : AgentGitEnv(*worktree, base_env)) spec.env.push_back(std::move(kv));
  }
  spec.cwd = workdir;
  spec.log_path = AttemptLogPath(config.logs_dir, task.id, claim.attempt);
  spec.log_cap_bytes = config.log_cap_bytes;
  spec.limits = config.limits;
  // The task's own limits win over the worker's.
  TX_ASSIGN_OR_RETURN(TaskLimits mine, ParseTaskLimits(task.metadata));
  if (mine.memory_mb) spec.limits.memory_bytes = *mine.memory_mb << 20;
  if (mine.address_space_mb) spec.limits.address_space_bytes = *mine.address_space_mb << 20;
  if (mine.cpu_percent) spec.limits.cpu_percent = mine.cpu_percent;
  if (mine.cpu_seconds) spec.limits.cpu_seconds = mine.cpu_seconds;
  if (mine.open_files) spec.limits.open_files = mine.open_files;
  if (mine.processes) spec.limits.processes = mine.processes;
  return spec;
}

}  // namespace tx::worker
