#include "worker/spawn_plan.h"

#include <algorithm>
#include <filesystem>

#include "core/agent.h"
#include "core/argv.h"
#include "core/validation.h"
#include "core/worker.h"
#include "store/location.h"
#include "worker/agent_gateway.h"
#include "worker/sandbox.h"

extern char** environ;

namespace tx::worker {

Result<AttemptPlan> ProfileFor(const WorkerConfig& config, const Task& task) {
  AttemptPlan plan;
  if (!task.command.empty()) {
    plan.is_command = true;
    plan.profile.argv = task.command;
    return plan;
  }
  TX_ASSIGN_OR_RETURN(plan.profile,
                      ResolveAgent(config, task.agent.empty() ? config.agent : task.agent));
  return plan;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::string AgentPrompt(const Task& task, int attempt, const git::Worktree* worktree) {
  if (worktree == nullptr) return BuildPrompt(task, attempt);
  Task shown = task;
  shown.workdir = worktree->path;
  return BuildPrompt(shown, attempt) +
         "\n## Git\nThis directory is a git worktree of its own, on branch " + worktree->branch +
         " (made from " + worktree->base +
         "). Commit your work on this branch; do not switch branches or push. Only what is "
         "committed is reviewed and merged.\n";
}

std::vector<std::string> WorkerTxEnv(const WorkerConfig& config, const Task& task,
                                     const Claim& claim) {
  std::vector<std::string> env = {"TX_TASK_ID=" + task.id,
                                  "TX_WORKER_ID=" + claim.worker_id,
                                  "TX_CLAIM_TOKEN=" + std::to_string(claim.token),
                                  "TX_ATTEMPT=" + std::to_string(claim.attempt),
                                  "TX_MAX_SUBTASKS=" + std::to_string(config.max_subtasks),
                                  std::string(kAgentSocketEnv) + "=",
                                  std::string(kAgentKeyEnv) + "="};
  if (config.server_url.empty()) {
    env.push_back("TX_DB=" + config.db_path);
  } else {
    env.push_back("TX_SERVER=" + config.server_url);
    env.push_back("TX_API_TOKEN=" + config.server_token);
    if (!config.server_credential.empty()) {
      env.push_back(std::string(kWorkerCredentialEnv) + "=" + config.server_credential);
    }
  }
  if (!config.allowed_commands.empty()) {
    env.push_back("TX_ALLOWED_COMMANDS=" + config.allowed_commands);
  }
  return env;
}

Result<AttemptPlan> PlanSpawn(const WorkerConfig& config, const Task& task, const Claim& claim,
                              const std::vector<std::string>& base_env,
                              const git::Worktree* worktree, const RunChoice& choice,
                              const AgentAccess& access) {
  const std::string& agent_socket = access.socket;
  TX_ASSIGN_OR_RETURN(AttemptPlan plan, ProfileFor(config, task));
  std::string workdir = task.workdir.empty() ? config.workdir : task.workdir;
  if (worktree != nullptr) workdir = worktree->path;
  AgentContext context{AgentPrompt(task, claim.attempt, worktree), task.id, task.title, workdir,
                       claim.attempt};
  std::vector<std::string> argv_template = plan.profile.argv;
  if (choice.resume && !plan.is_command) {
    std::vector<std::string> resume = agent::ResumeTemplate(plan.profile);
    if (!resume.empty()) {
      argv_template = std::move(resume);
      context.prompt = choice.resume->prompt;
      context.session_id = choice.resume->session_id;
      plan.resumed = true;
      plan.session_id = choice.resume->session_id;
      plan.session_tokens = choice.resume->session_tokens;
    }
  }
  plan.account = choice.account;

  exec::SpawnSpec& spec = plan.spec;
  spec.argv = ExpandTemplate(argv_template, context);
  // Codex's workspace-write sandbox lets it write its working directory alone: its `tx` reaches
  // the worker's socket, whose directory is added (before any `resume`).
  if (!plan.is_command && plan.profile.family == agent::Family::kCodex && !agent_socket.empty()) {
    auto exec = std::find(spec.argv.begin(), spec.argv.end(), "exec");
    if (exec != spec.argv.end()) {
      std::string dir = std::filesystem::path(agent_socket).parent_path().string();
      spec.argv.insert(exec + 1, {"--add-dir", dir});
    }
  }
  // The account's variables replace the worker's of the same names.
  std::vector<std::string> account_env;
  for (const auto& a : plan.profile.accounts) {
    if (a.name == choice.account) account_env = a.env;
  }
  auto overridden = [&](const std::string& kv) {
    std::string name = kv.substr(0, kv.find('=') + 1);
    for (const auto& own : account_env) {
      if (own.rfind(name, 0) == 0) return true;
    }
    return false;
  };
  // The worker's variables the agent gets: those [worker] pass_env names, never its own TX_*.
  std::vector<std::string> passed;
  for (const auto& kv : base_env) {
    std::string_view name = std::string_view(kv).substr(0, kv.find('='));
    if (name.starts_with("TX_")) continue;
    bool allowed = false;
    for (const auto& pattern : config.pass_env) allowed = allowed || MatchesGlob(pattern, name);
    if (allowed) passed.push_back(kv);
  }
  std::string path;
  for (const auto& kv : passed) {
    if (overridden(kv)) continue;
    // AgentGitEnv adds to the count it found.
    if (worktree != nullptr && kv.rfind("GIT_CONFIG_COUNT=", 0) == 0) continue;
    if (kv.rfind("PATH=", 0) == 0) {
      path = kv.substr(5);
      continue;
    }
    spec.env.push_back(kv);
  }
  // The agent must find tx whatever pass_env says: a PATH, led by tx's directory.
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  std::string tx_dir = std::filesystem::path(config.tx_binary).parent_path().string();
  if (!tx_dir.empty()) path = tx_dir + ":" + path;
  for (const auto& kv : account_env) {
    if (kv.rfind("PATH=", 0) == 0) {
      path = kv.substr(5);
    } else {
      spec.env.push_back(kv);
    }
  }
  spec.env.push_back("PATH=" + path);
  // The agent reaches the store only through its worker (agent_gateway.h): no TX_DB, no server
  // token, no password.
  spec.env.push_back("TX_TASK_ID=" + task.id);
  spec.env.push_back("TX_WORKER_ID=" + claim.worker_id);
  spec.env.push_back("TX_CLAIM_TOKEN=" + std::to_string(claim.token));
  spec.env.push_back("TX_ATTEMPT=" + std::to_string(claim.attempt));
  if (!agent_socket.empty()) {
    spec.env.push_back(std::string(kAgentSocketEnv) + "=" + agent_socket);
    spec.env.push_back(std::string(kAgentKeyEnv) + "=" + access.key);
  }
  if (!config.allowed_commands.empty()) {
    spec.env.push_back("TX_ALLOWED_COMMANDS=" + config.allowed_commands);
  }
  spec.env.push_back("TX_MAX_SUBTASKS=" + std::to_string(config.max_subtasks));
  if (worktree != nullptr) {
    for (auto& kv : git::AgentGitEnv(*worktree, passed)) spec.env.push_back(std::move(kv));
  }
  // tx's MCP server, registered for this run (docs/mcp.md), is told which of the agent's
  // variables are its task's.
  if (!plan.is_command && plan.profile.mcp) {
    std::vector<std::string> names;
    for (const auto& kv : spec.env) {
      if (kv.rfind("TX_", 0) == 0) names.push_back(kv.substr(0, kv.find('=')));
    }
    spec.argv =
        agent::WithMcpServer(plan.profile.family, std::move(spec.argv), config.tx_binary, names);
  }
  if (worktree != nullptr && worktree->needs_setup) {
    spec.argv = git::WithSetup(*worktree, GitSettingsFor(config, task.repo).setup, spec.argv);
  }
  spec.cwd = workdir;
  plan.log_path = store::AttemptLogPath(config.logs_dir, task.id, claim.attempt);
  bool structured = !plan.is_command && (plan.profile.family == agent::Family::kClaude ||
                                         plan.profile.family == agent::Family::kCodex);
  if (structured) plan.raw_log_path = store::AttemptRawLogPath(config.logs_dir, task.id, claim.attempt);
  spec.log_path = structured ? plan.raw_log_path : plan.log_path;
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

  TX_ASSIGN_OR_RETURN(plan.sandbox, SandboxFor(config, task));
  const SandboxSettings& sandbox = plan.sandbox;
  if (sandbox.kind == SandboxKind::kNone) return plan;
  SandboxPaths paths;
  paths.workdir = workdir.empty() ? std::filesystem::current_path().string() : workdir;
  // The worker's socket serves its later attempts too: read-only, so that no agent removes or
  // replaces it (a connect needs no write to the mount).
  if (!agent_socket.empty()) {
    paths.read_only.push_back(std::filesystem::path(agent_socket).parent_path().string());
  }
  // A worktree's commits are written to its repository's git directory: its objects, reflogs,
  // tx/ branches and the worktree's own directory, not its config or hooks (which the worker's
  // git would run), nor the worktree's .git file (which says where that directory is).
  if (worktree != nullptr) {
    std::string git = worktree->repo + "/.git";
    paths.read_only = {git, worktree->path + "/.git"};
    for (const char* sub : {"/objects", "/logs", "/refs/heads/tx"}) {
      paths.writable.push_back(git + sub);
    }
    paths.writable.push_back(worktree->git_dir);
  }
  if (!config.db_path.empty() && !store::IsPostgresUrl(config.db_path)) {
    paths.hidden.push_back(std::filesystem::path(config.db_path).parent_path().string());
  }
  if (!config.local_dir.empty()) paths.hidden.push_back(config.local_dir);
  for (const auto& kv : spec.env) {
    if (kv.starts_with("HOME=")) paths.home = kv.substr(5);
  }
  if (sandbox.kind == SandboxKind::kBwrap) {
    paths.programs.push_back(tx_dir);
    if (!spec.argv.empty() && spec.argv[0].find('/') != std::string::npos) {
      paths.programs.push_back(std::filesystem::path(spec.argv[0]).parent_path().string());
    }
    spec.argv = BwrapArgv(sandbox, paths, spec.argv);
    return plan;
  }
  // A container: the engine enforces the limits, not the rlimits and cgroup of its client.
  ContainerRun run;
  run.name = ContainerName(task.id, claim.attempt);
  run.labels = {{"tx.task", task.id},
                {"tx.attempt", std::to_string(claim.attempt)},
                {"tx.worker", claim.worker_id},
                {"tx.store", config.local_dir}};
  TX_ASSIGN_OR_RETURN(run.image, ImageFor(sandbox, task.requires_caps));
  plan.image = run.image;
  for (const auto& kv : spec.env) run.env_names.push_back(kv.substr(0, kv.find('=')));
  run.limits = spec.limits;
  spec.limits = {};
  WorkerRlimits(run.open_files, run.processes);
  // The agent's tx inside is the static relay, where its PATH finds tx on the host.
  run.relay = tx_dir + "/tx-agent";
  run.relay_at = tx_dir + "/tx";
  spec.argv = ContainerArgv(sandbox, paths, run, spec.argv);
  return plan;
}

}  // namespace tx::worker
