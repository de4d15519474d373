#pragma once
// The wire form of each domain type, written once and shared by `--json` output and the HTTP API.
// Times are ISO-8601 UTC strings; absent times are null.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/claim.h"
#include "core/error.h"
#include "core/event.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"

namespace tx {

nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts);
// The same object written as JSON text without building it (keys in the order of the fields,
// not sorted): json::parse of it equals ToJson(t, attempts).
std::string ToJsonText(const Task& t, const std::vector<Claim>& attempts);
// The same with the usage ledger (docs/agents.md): each attempt's row as its "usage" (null for
// an attempt without one), and their total as the task's "usage" (null when there is none).
nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts,
                      const std::vector<AttemptUsage>& usage);
nlohmann::json ToJson(const Claim& c);
nlohmann::json ToJson(const Worker& w, const Moment& now);
nlohmann::json ToJson(const Event& e);
// The text of ToJson(e).dump() for the event as parsed, without parsing its data: the stored text
// is written as it is (every writer stores data.dump()), or {} when it is not a JSON object.
std::string ToJsonText(const StoredEvent& e);
nlohmann::json ToJson(const ReconcileReport& r);

// Whether JSON writes `s` as itself between quotes: printable ASCII but '"' and '\\'.
bool PlainJsonString(std::string_view s);
// Appends the JSON text of the string `s`, as nlohmann::json(s).dump() writes it; a plain one
// (most titles, queues, ids) is copied between quotes.
void AppendJsonString(std::string& out, std::string_view s);

// The inverses, for a client that reads what the HTTP API wrote (the remote worker). Fields that
// the JSON derives (a worker's `stale`, a task's `attempts`) are ignored; a missing or mistyped
// field is an invalid argument naming it. A task's `seq` is not on the wire and stays 0.
Result<Task> TaskFromJson(const nlohmann::json& j);
Result<Claim> ClaimFromJson(const nlohmann::json& j);
Result<Worker> WorkerFromJson(const nlohmann::json& j);
// What core/usage.h's ToJson writes.
Result<AttemptUsage> UsageFromJson(const nlohmann::json& j);
Result<AgentLimit> LimitFromJson(const nlohmann::json& j);

// The heartbeat document of the source notes, for tools that read one:
// {"workers": {"slot-1": {"slot", "status" (idle|working|offline), "task", "taskTitle",
// "sessionId", "lastUpdate", "startedAt" (ms since the epoch), "metadata": {"workerPid",
// "workerVersion", "restartCount", "agentPid", "offlineReason"}}}}. One entry per slot (or name,
// for a worker without a slot): the newest registration. `workers` newest first, as
// WorkerService::List returns them; `titles` maps the current task ids to their titles.
nlohmann::json HeartbeatDocument(const std::vector<Worker>& workers,
                                 const std::map<std::string, std::string>& titles);

}  // namespace tx
