#include "api/new_task.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string_view>

#include "core/argv.h"
#include "core/body_fields.h"
#include "core/duration.h"

namespace tx::api {

using nlohmann::json;

Result<Task> DecodeNewTask(const json& body) {
  // Built once: a batch decodes this for every line.
  static const std::set<std::string_view> kFields = {
      "title", "description", "instructions", "deliverables", "steps",      "priority",
      "queue", "requires",    "after",        "owner",        "workdir",    "command",
      "agent", "timeout",     "max_attempts", "review",       "auto_merge", "repo",
      "base",  "metadata",    "budget_usd",   "sandbox"};
  TX_RETURN_IF_ERROR(OnlyKnownFields(body, kFields));
  Task t;
  if (!body.contains("title")) return Error::InvalidArgument("field 'title' is required");
  TX_RETURN_IF_ERROR(ReadString(body, "title", t.title));
  TX_RETURN_IF_ERROR(ReadString(body, "description", t.description));
  TX_RETURN_IF_ERROR(ReadString(body, "instructions", t.instructions));
  TX_RETURN_IF_ERROR(ReadString(body, "deliverables", t.deliverables));
  TX_RETURN_IF_ERROR(ReadStrings(body, "steps", t.steps));
  TX_RETURN_IF_ERROR(ReadInteger(body, "priority", t.priority));
  TX_RETURN_IF_ERROR(ReadString(body, "queue", t.queue));
  TX_RETURN_IF_ERROR(ReadStrings(body, "requires", t.requires_caps));
  TX_RETURN_IF_ERROR(ReadStrings(body, "after", t.after));
  TX_RETURN_IF_ERROR(ReadString(body, "owner", t.owner));
  TX_RETURN_IF_ERROR(ReadString(body, "workdir", t.workdir));
  if (auto it = body.find("command"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      TX_ASSIGN_OR_RETURN(t.command, SplitArgv(it->get<std::string>()));
      if (t.command.empty()) return Error::InvalidArgument("field 'command' is empty");
    } else {
      TX_RETURN_IF_ERROR(ReadStrings(body, "command", t.command));
    }
  }
  TX_RETURN_IF_ERROR(ReadString(body, "agent", t.agent));
  t.timeout_ms = 0;  // the service's default
  if (auto it = body.find("timeout"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      TX_ASSIGN_OR_RETURN(t.timeout_ms, ParseDuration(it->get<std::string>()));
    } else if (it->is_number_integer()) {
      TX_RETURN_IF_ERROR(ReadInteger(body, "timeout", t.timeout_ms));
    } else {
      return WrongType("timeout", "a duration such as \"30m\", or milliseconds");
    }
    if (t.timeout_ms <= 0) return Error::InvalidArgument("field 'timeout' must be more than 0s");
  }
  std::int64_t attempts = t.max_attempts;
  TX_RETURN_IF_ERROR(ReadInteger(body, "max_attempts", attempts));
  if (attempts < 0 || attempts > 1'000'000) {  // the range proper is TaskService's
    return Error::InvalidArgument("field 'max_attempts' is out of range");
  }
  t.max_attempts = static_cast<int>(attempts);
  TX_RETURN_IF_ERROR(ReadBool(body, "review", t.review));
  TX_RETURN_IF_ERROR(ReadString(body, "repo", t.repo));
  TX_RETURN_IF_ERROR(ReadString(body, "base", t.base_branch));
  bool auto_merge = false;
  TX_RETURN_IF_ERROR(ReadBool(body, "auto_merge", auto_merge));
  if (auto_merge) {
    t.review = true;
    t.metadata["auto_merge"] = true;
  }
  if (!t.repo.empty() && t.repo[0] != '/') {
    return Error::InvalidArgument("field 'repo' must be an absolute path");
  }
  std::optional<json> metadata;
  TX_RETURN_IF_ERROR(ReadObject(body, "metadata", metadata));
  if (metadata) {
    if (auto_merge) (*metadata)["auto_merge"] = true;
    t.metadata = std::move(*metadata);
  }
  if (auto it = body.find("budget_usd"); it != body.end() && !it->is_null()) {
    if (!it->is_number()) return WrongType("budget_usd", "a number of dollars");
    t.metadata["budget_usd"] = it->get<double>();  // checked by worker::PrepareAgentTask
  }
  if (auto it = body.find("sandbox"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return WrongType("sandbox", "a string: none, bwrap, podman or docker");
    t.metadata["sandbox"] = it->get<std::string>();  // checked by worker::PrepareAgentTask
  }
  return t;
}

}  // namespace tx::api
