#pragma once
// WorkerConfig: everything a worker process runs with, from defaults (design.md §6), then
// `.tx/config.toml` ([worker], [worker.limits], [agents.NAME]), then command-line flags.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/prices.h"
#include "agent/profile.h"
#include "core/agent.h"
#include "core/claim.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/task.h"
#include "core/worker.h"
#include "exec/container.h"
#include "exec/spawn_spec.h"
#include "git/settings.h"
#include "service/agent_service.h"
#include "service/task_service.h"
#include "worker/sandbox.h"

namespace tx::worker {

// The largest [worker] max_subtasks accepted.
inline constexpr int kMaxSubtasksSetting = 1000;

// [worker] pass_env when the config sets none: which of the worker's variables an agent gets
// (patterns of names, '*' any run of characters; PlanSpawn). What agent CLIs need to run, find
// their logins and reach their APIs; nothing else of the worker's reaches an agent, and never,
// whatever the list, a TX_* variable.
inline constexpr std::array<std::string_view, 31> kDefaultPassEnv = {
    // the shell's basics, locale and terminal
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM",
    "NO_COLOR", "TZ", "TMPDIR", "XDG_*",
    // the agent CLIs' own (their API keys, config directories and settings)
    "ANTHROPIC_*", "CLAUDE_*", "OPENAI_*", "CODEX_*",
    // git's, ssh's and gpg's (an agent commits, perhaps signed, and may fetch over ssh)
    "GIT_*", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GNUPGHOME",
    // proxies and CA certificates, to reach the APIs from behind them
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"};

// [git.repos."PATH"]: what one repository sets over [git].
struct GitRepoSettings {
  std::optional<std::string> base;
  std::optional<std::vector<std::string>> setup;
  std::optional<int> spare_worktrees;
  std::optional<std::string> check;
  std::optional<bool> rebase;
  bool operator==(const GitRepoSettings&) const = default;
};

// Isolation asked for by a queue ([git.queues.NAME]) on behalf of its tasks: a worktree of a
// repository, a sandbox, or both.
struct QueueGit {
  std::string repo;  // absolute; "" = [git] repo (only with a sandbox and nothing else)
  std::string base;  // "" = [git] base
  bool review = false;
  bool auto_merge = false;  // implies review
  // The least sandbox its tasks run in, whatever their worker's (SandboxFor).
  SandboxKind sandbox = SandboxKind::kNone;
  bool operator==(const QueueGit&) const = default;
};

struct WorkerConfig {
  std::string db_path;  // absolute; handed to agents as TX_DB (empty for a remote worker)
  // A remote worker reaches the fleet over HTTP alone: the server's URL and its token, handed to
  // agents as TX_SERVER and TX_API_TOKEN.
  std::string server_url;
  std::string server_token;
  std::string server_credential;  // what the registration over HTTP returned (set at start)
  std::string name;               // defaults to the slot, else the worker id
  std::string slot;
  // This machine's directory for the store (store::LocalDir): with the host, the worker's pool
  // (PoolId), which its slot belongs to.
  std::string local_dir;
  std::vector<std::string> capabilities;
  std::vector<std::string> queues = {"default"};

  Millis heartbeat_idle_ms = kDefaultHeartbeatIntervalMs;  // promised: stale after two of these
  Millis heartbeat_running_ms = kDefaultHeartbeatIntervalMs / 2;  // while an agent runs
  Millis lease_ms = kDefaultLeaseMs;
  Millis stall_timeout_ms = 0;  // 0 = off: some agents print nothing until they finish
  Millis task_timeout_cap_ms = 2 * 60 * 60'000;
  Millis shutdown_timeout_ms = kDefaultShutdownTimeoutMs;  // a graceful stop's wait for the agent
  Millis kill_grace_ms = 10'000;  // SIGTERM → SIGKILL when stopping an agent
  Millis poll_ms = 30'000;        // fallback poll when idle (with jitter)

  std::string agent = "claude";  // the default profile name, or an argv template
  std::map<std::string, agent::AgentProfile> profiles = agent::BuiltInProfiles();
  agent::PriceTable prices = agent::PriceTable::Defaults();  // [prices."MODEL"]
  Budgets budgets;                                           // [budgets]
  // [api] allowed_hosts: Host names a loopback HTTP server answers besides the loopback ones
  // (api/auth.h HostAllowedOnLoopback). Read by the server only.
  std::vector<std::string> api_allowed_hosts;
  std::string config_file;  // the config.toml read, read again for [budgets] (budgets_source.h)
  std::string allowed_commands;  // TX_ALLOWED_COMMANDS for agents; empty = no restriction
  // [worker] pass_env: which of the worker's variables its agents get (kDefaultPassEnv's form).
  std::vector<std::string> pass_env{kDefaultPassEnv.begin(), kDefaultPassEnv.end()};
  // [worker] max_subtasks: how many subtasks an agent may add under its task (docs/mcp.md),
  // handed to agents as TX_MAX_SUBTASKS; 0 = none.
  int max_subtasks = service::kDefaultMaxSubtasks;
  std::string workdir;  // where agents run when their task names no workdir; empty = inherited
  exec::ResourceLimits limits;
  SandboxSettings sandbox;  // [worker] sandbox, [sandbox] (sandbox.h)
  std::string logs_dir;     // <store dir>/logs
  std::uint64_t log_cap_bytes = 8ull << 20;
  std::string tx_binary;  // this executable: its directory leads the agents' PATH
  git::Settings git;      // [git]
  // [git.repos."PATH"]: per repository (its path as tasks give it), each key over [git]'s.
  std::map<std::string, GitRepoSettings> git_repos;
  // Isolation asked for on a task's behalf when it names no repository: its queue's
  // ([git.queues.NAME]), else every queue's ([git] repo; "" = none). ApplyGitDefaults.
  std::string git_repo;
  std::map<std::string, QueueGit> git_queues;
};

// The git settings for tasks in `repo`: [git], with [git.repos."repo"] laid over it.
git::Settings GitSettingsFor(const WorkerConfig& config, const std::string& repo);

// GitSettingsFor `repo` of the config file at `config_path` (a missing file: the defaults), read
// anew: what `tx task diff|merge` and the API's diff and merge use. The whole file is checked, as
// a worker reads it: an error anywhere in it is returned.
Result<git::Settings> LoadGitSettings(const std::string& config_path, const std::string& repo);

// Git isolation asked for on behalf of a task added without a repository (docs/git.md): its
// queue's [git.queues.NAME] (repo, base, and review or auto-merge on top of the task's own),
// else [git] repo. A task that names its repository is left as it is.
void ApplyGitDefaults(const WorkerConfig& config, Task& task);

// What `tx task add` and POST /api/tasks do with a new task's git fields: `auto_merge` (asked
// for by flag or field) sets review and metadata.auto_merge, then ApplyGitDefaults.
// invalid_argument: a base branch, or auto-merge, with no repository.
Status PrepareGitTask(const WorkerConfig& config, bool auto_merge, Task& task);

// The sandbox an attempt of `task` runs in: the worker's settings ([worker] sandbox, [sandbox])
// with the strictest kind of the worker's, its queue's ([git.queues.NAME] sandbox) and the task's
// own (metadata.sandbox; a task may ask for more than its queue and worker, never for less).
// invalid_argument: a metadata.sandbox that is not a kind's name.
Result<SandboxSettings> SandboxFor(const WorkerConfig& config, const Task& task);

// What `tx worker start` and `tx orchestrator start` check first: that this machine can run the
// worker's sandbox and those the queues it serves ask for (CheckSandbox, once a kind).
Status CheckSandboxes(const WorkerConfig& config);

// The container engines (each its command with [sandbox] engine_args) the agents of workers with
// `config` may run in: the worker's, its queues' ([git.queues.NAME] sandbox) and, since a task may
// ask for a container, podman's and docker's where [sandbox.images] names an image and the engine
// is on PATH (those not `configured`). What removes a dead worker's containers by label.
std::vector<exec::ContainerEngine> ContainerEngines(const WorkerConfig& config);

// What `tx task add` and POST /api/tasks check of a new task's agent: a profile it names must be
// one the config knows (an argv template must be valid), and metadata.budget_usd, when set, a
// number of dollars above 0 and at most 1,000,000, and metadata.sandbox, when set, the name of a
// kind no less strict than its queue's. invalid_argument naming what is wrong.
Status PrepareAgentTask(const WorkerConfig& config, Task& task);

// What a configuration read again on SIGHUP changes in a running worker's (docs/operations.md,
// "Logs and signals"). ReloadWorkerConfig copies from `fresh` into `running` what the worker's
// next attempts read and names each that changed in `applied`: stall_timeout, task_timeout_cap,
// kill_grace, poll_interval, allowed_commands, pass_env, max_subtasks, log_cap_mb, limits
// ([worker.limits]), agents ([agents.*]), prices and git ([git], [git.repos.*], [git.queues.*]).
// Those that differ but were registered or checked at start are named in `at_restart` and left
// as they are: capabilities, queues, agent, workdir, heartbeat_interval(_running), lease,
// shutdown_timeout, sandbox ([worker] sandbox and [sandbox]). [budgets] are followed as the file
// changes already (budgets_source.h).
struct WorkerConfigReload {
  std::vector<std::string> applied;
  std::vector<std::string> at_restart;
};
WorkerConfigReload ReloadWorkerConfig(WorkerConfig& running, const WorkerConfig& fresh);

// Applies a TOML document to `config`. Unknown keys and wrong types are refused with
// invalid_argument naming the key (a typo must not silently keep a default); a syntax error names
// the line and column. `origin` names the file in messages.
Status ApplyConfigToml(const std::string& toml_text, const std::string& origin,
                       WorkerConfig& config);

// Reads `path` and applies it; a missing file changes nothing.
Status ApplyConfigFile(const std::string& path, WorkerConfig& config);

// The profile `agent` stands for: a profile by name, else a command line split into words
// (placeholders allowed) run as an unnamed generic profile (name ""). invalid_argument: an
// unknown profile name (listing the known ones), an unknown placeholder or an empty template.
Result<agent::AgentProfile> ResolveAgent(const WorkerConfig& config, const std::string& agent);

// Whether `agent` (a task's --agent) names a profile rather than an argv template: a single
// word. A task may only name a profile the config knows (ResolveAgent).
bool IsProfileName(const std::string& agent);

}  // namespace tx::worker
