#pragma once
// A new task as the HTTP API's POST /api/tasks and `tx task add --batch` take it: one JSON object,
// decoded in one place. Pure: no store, no I/O, no HTTP library (tx, which links none, reads a
// batch with it).

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/task.h"
#include "worker/config.h"

namespace tx::api {

// POST /api/tasks and each line of `tx task add --batch`: {"title" (required), "description",
// "instructions", "deliverables", "steps": [..], "priority": int, "queue", "requires": [..],
// "after": [..], "owner", "workdir", "command": "ARGV" | [..], "agent", "timeout": "30m" | ms,
// "max_attempts": int, "review": bool, "auto_merge": bool (review, and metadata.auto_merge),
// "repo", "base", "metadata": {..}, "budget_usd": number (metadata.budget_usd), "sandbox": string
// (metadata.sandbox)}. Values are checked further by worker::PrepareGitTask (the config's git
// isolation; a base or auto-merge with no repository), worker::PrepareAgentTask (a known agent
// profile, a sensible budget, a sandbox no less than its queue's) and TaskService::Add.
Result<Task> DecodeNewTask(const nlohmann::json& body);

// DecodeNewTask, then prepared as every way of adding one prepares it: the config's git isolation
// (worker::PrepareGitTask) and its agent profiles and sandboxes (worker::PrepareAgentTask).
Result<Task> DecodeAndPrepareNewTask(const nlohmann::json& body,
                                     const worker::WorkerConfig& config);

}  // namespace tx::api
