#pragma once
// PlanSpawn: the SpawnSpec for one run of a task's agent, as a value (compared in tests), with
// what the worker needs to follow it: the profile it runs, the account, the session it resumes
// and where its logs go.

#include <optional>
#include <string>
#include <vector>

#include "agent/profile.h"
#include "agent/resume.h"
#include "core/claim.h"
#include "core/task.h"
#include "exec/spawn_spec.h"
#include "git/worktree.h"
#include "worker/agent_gateway.h"
#include "worker/config.h"

namespace tx::worker {

// How one run of an attempt is made: under which account, resuming which session (none: fresh).
struct RunChoice {
  std::string account;  // "" = the profile's only (unnamed) account
  std::optional<agent::ResumePlan> resume;
};

struct AttemptPlan {
  exec::SpawnSpec spec;
  // The profile it runs: the task's (or the worker's default), an argv template run as an
  // unnamed generic profile (name ""), or, for a task's own command, none (is_command).
  agent::AgentProfile profile;
  bool is_command = false;
  std::string account;
  bool resumed = false;
  std::string session_id;      // the session resumed
  TokenCounts session_tokens;  // what its earlier attempts recorded (ResumePlan)
  // What `tx task log` shows: the readable log. A structured agent's raw output goes to
  // raw_log_path (spec.log_path) beside it, and the worker writes the readable one; otherwise
  // both are spec.log_path and raw_log_path is "".
  std::string log_path;
  std::string raw_log_path;
  SandboxSettings sandbox;  // what it runs in (SandboxFor)
  // The image a container sandbox runs it in (ImageFor); "" without a container.
  std::string image;
};

// The profile a task runs under: none for a task with a command (is_command), else its agent
// (or the worker's default agent) as ResolveAgent resolves it. invalid_argument: an unknown
// profile or a bad template.
Result<AttemptPlan> ProfileFor(const WorkerConfig& config, const Task& task);

// The task's `command` when it has one, else its profile's argv — the resume form with the
// resume prompt when `choice` resumes, else the fresh one with the task's prompt — with the
// placeholders expanded. invalid_argument: an unknown agent profile or a bad template.
//
// The environment is built, not inherited (docs/security.md): of `base_env` (the worker's own)
// only the variables whose names match a pattern of config.pass_env (kDefaultPassEnv unless the
// config sets it), never a TX_* one; then the account's variables, which replace the worker's of
// the same names; then the task's: TX_TASK_ID, TX_WORKER_ID, TX_CLAIM_TOKEN, TX_ATTEMPT,
// TX_AGENT_SOCKET and TX_AGENT_KEY (`access`: the worker's AgentGateway and the attempt's key,
// through which alone the agent's tx reaches the store; never TX_DB, a server's URL or token),
// TX_ALLOWED_COMMANDS (when the worker has an allow-list; the gateway applies it) and
// TX_MAX_SUBTASKS. PATH is always set, led by the directory of the tx binary so that an agent can
// run `tx task done`: the worker's PATH when pass_env lets it through, else the default
// "/usr/local/bin:/usr/bin:/bin" (an account's own PATH replaces it whole).
//
// With a worktree (a task that names a repository): the agent runs there, with AgentGitEnv's
// variables (counting on from the GIT_CONFIG_COUNT that passed), and after the setup commands of
// the repository ([git] setup) when the worktree still needs them (WithSetup).
Result<AttemptPlan> PlanSpawn(const WorkerConfig& config, const Task& task, const Claim& claim,
                              const std::vector<std::string>& base_env,
                              const git::Worktree* worktree = nullptr, const RunChoice& choice = {},
                              const AgentAccess& access = {});

// What the worker's own tx runs an agent's gated commands with (AgentGateway::Options::env):
// the task's TX_* variables with the worker's way to the store (TX_DB, or TX_SERVER with its
// token and credential), and TX_AGENT_SOCKET and TX_AGENT_KEY emptied so that it does not relay
// again.
std::vector<std::string> WorkerTxEnv(const WorkerConfig& config, const Task& task,
                                     const Claim& claim);

// The prompt of an attempt (BuildPrompt), with the worktree as the working directory and a note
// on its branch when there is one. Also what WriteInstructions puts in CLAUDE.md and AGENTS.md.
std::string AgentPrompt(const Task& task, int attempt, const git::Worktree* worktree);

// The environment of this process, "NAME=value" each.
std::vector<std::string> CurrentEnvironment();

}  // namespace tx::worker
