#pragma once
// The bodies the HTTP API accepts, decoded from JSON in one place each. Pure: no store, no I/O,
// so the fuzz target and the unit tests drive them directly.
//
// Task bodies are strict: an unknown field, a wrong type or a bad value is an invalid argument
// naming it, so a typo such as "priorty" is refused instead of silently ignored. (Bodies of the
// worker protocol, where old workers meet new servers, ignore fields they do not know.)

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/new_task.h"
#include "core/error.h"
#include "core/task.h"
#include "service/claim_service.h"
#include "service/task_service.h"

namespace tx::api {

// Parses a request body: malformed JSON, arrays and objects nested deeper than 128 levels, or
// anything but an object, is an invalid argument.
Result<nlohmann::json> ParseObject(std::string_view body);
// The same for a body that may be any JSON value (an array of tasks).
Result<nlohmann::json> ParseBody(std::string_view body);
// The most tasks one POST /api/tasks array adds.
inline constexpr std::size_t kMaxTasksPerPost = 10'000;

// PATCH /api/tasks/:id. Either field changes ("title", "priority", "after", "metadata" merged
// RFC 7386 style) or one status change, not both:
//   "status": "done" | "failed" | "review" (aliases: completed, in_review, ...) with "token"
//             (the claim's fencing token) or "force": true (the operator's override), and
//             "result" / "error" text;
//   "status": "cancelled" with an optional "note";
//   "status": "ready" | "todo" to retry a failed or cancelled task, with an optional "note" and
//             "fresh": true (start the agent's conversation over rather than resume it).
//   "status": "approved" with an optional "note" approves a task in review; "ready" on a task in
//             review requests changes (the note goes into its next prompt);
//   "status": "ready" with "answer" (and nothing else) answers the question of a task that is
//             `waiting` (TaskService::Answer).
// Other statuses (running, blocked, waiting) are reached only through claims, dependencies and
// an agent's question, and are refused naming why.
struct TaskChange {
  enum class Kind { kFields, kOutcome, kCancel, kRetry, kApprove, kAnswer };
  Kind kind = Kind::kFields;
  service::TaskPatch fields;
  service::Outcome outcome = service::Outcome::kDone;
  std::optional<std::int64_t> token;
  bool force = false;
  bool fresh = false;  // kRetry: do not resume the agent's session
  std::string text;    // result, error, note or answer
};
Result<TaskChange> DecodeTaskChange(const nlohmann::json& body);

// POST /api/tasks/cancel and /api/tasks/retry (issue 24): {"ids": ["task-…", …] (1 to
// kMaxBulkIds, each once: a repeated id is acted on once), "note": string, and for a retry
// "fresh": bool}, as PATCH /api/tasks/ID with that status and note does for each.
inline constexpr std::size_t kMaxBulkIds = 1000;
struct BulkChange {
  std::vector<std::string> ids;
  std::string note;
  bool fresh = false;
};
Result<BulkChange> DecodeBulkChange(const nlohmann::json& body, bool retry);

// POST /api/orchestrator/scale: {"workers": N}, 0 <= N <= 10000.
Result<int> DecodeScale(const nlohmann::json& body);

// POST /api/orchestrator/stop: {"force": bool} (optional; graceful by default).
Result<bool> DecodeStop(const nlohmann::json& body);

// POST /api/workers: {"name", "agent" (a profile or an argv template), "instructions",
// "allowed_commands": "task.show,task.done" | [..], "capabilities": [..] | "a,b",
// "queues": [..] | "a,b", "limits": {"memory_mb", "cpu_percent", "open_files", "processes",
// "cpu_seconds"} (positive integers), "workdir"}, all optional. `args` are the worker flags they
// stand for; the route checks them as `tx worker start` would.
struct NewWorker {
  std::vector<std::string> args;
  std::string instructions;
  std::string workdir;
};
Result<NewWorker> DecodeNewWorker(const nlohmann::json& body);

}  // namespace tx::api
