#pragma once
// PlanSpawn: the SpawnSpec for one attempt of a task, as a value (compared in tests).

#include <string>
#include <vector>

#include "core/claim.h"
#include "core/task.h"
#include "exec/spawn_spec.h"
#include "worker/config.h"
#include "worker/worktree.h"

namespace tx::worker {

// The task's `command` when it has one, else its agent profile (or the worker's default agent),
// with the placeholders expanded. The environment is `base_env` (the worker's own) without any
// TX_* variable, plus TX_TASK_ID, TX_WORKER_ID, TX_CLAIM_TOKEN, TX_ATTEMPT, TX_DB,
// TX_ALLOWED_COMMANDS (when the worker has an allow-list) and PATH led by the directory of the
// tx binary, so an agent can run `tx task done`. Output goes to
// <logs_dir>/<task>/<attempt>.log. invalid_argument: an unknown agent profile or a bad template.
//
// With a worktree (a task that names a repository): the agent runs there, with AgentGitEnv's
// variables, and after the setup commands of the repository ([git] setup) when the worktree
// still needs them (WithSetup).
Result<exec::SpawnSpec> PlanSpawn(const WorkerConfig& config, const Task& task, const Claim& claim,
                                  const std::vector<std::string>& base_env,
                                  const Worktree* worktree = nullptr);

// The prompt of an attempt (BuildPrompt), with the worktree as the working directory and a note
// on its branch when there is one. Also what WriteInstructions puts in CLAUDE.md and AGENTS.md.
std::string AgentPrompt(const Task& task, int attempt, const Worktree* worktree);

// The log of one attempt.
std::string AttemptLogPath(const std::string& logs_dir, const std::string& task_id, int attempt);

// The environment of this process, "NAME=value" each.
std::vector<std::string> CurrentEnvironment();

}  // namespace tx::worker
