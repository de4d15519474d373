#include "api/requests.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/argv.h"
#include "core/body_fields.h"
#include "core/duration.h"
#include "core/validation.h"

namespace tx::api {

using nlohmann::json;

Result<json> ParseBody(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error::InvalidArgument("malformed JSON in the request body");
  if (NestsDeeperThan(body, kMaxJsonDepth)) {
    return Error::InvalidArgument("the request body nests deeper than " +
                                  std::to_string(kMaxJsonDepth) + " levels");
  }
  return j;
}

Result<json> ParseObject(std::string_view body) {
  TX_ASSIGN_OR_RETURN(json j, ParseBody(body));
  if (!j.is_object()) return Error::InvalidArgument("the request body must be a JSON object");
  return j;
}

Result<TaskChange> DecodeTaskChange(const json& body) {
  TX_RETURN_IF_ERROR(
      OnlyKnownFields(body, {"title", "priority", "after", "metadata", "status", "token", "force",
                             "result", "error", "note", "fresh", "answer"}));
  TaskChange c;
  auto status = body.find("status");
  if (status == body.end() || status->is_null()) {
    for (std::string_view f : {"token", "force", "result", "error", "note", "fresh", "answer"}) {
      if (body.contains(f)) {
        return Error::InvalidArgument("field '" + std::string(f) + "' goes with 'status'");
      }
    }
    if (std::string title; body.contains("title")) {
      TX_RETURN_IF_ERROR(ReadString(body, "title", title));
      c.fields.title = title;
    }
    if (std::int64_t p = 0; body.contains("priority")) {
      TX_RETURN_IF_ERROR(ReadInteger(body, "priority", p));
      c.fields.priority = p;
    }
    if (std::vector<std::string> after; body.contains("after")) {
      TX_RETURN_IF_ERROR(ReadStrings(body, "after", after));
      c.fields.after = after;
    }
    TX_RETURN_IF_ERROR(ReadObject(body, "metadata", c.fields.metadata_merge));
    if (!c.fields.title && !c.fields.priority && !c.fields.after && !c.fields.metadata_merge) {
      return Error::InvalidArgument(
          "nothing to change: give 'status', 'title', 'priority', 'after' or 'metadata'");
    }
    return c;
  }
  for (std::string_view f : {"title", "priority", "after", "metadata"}) {
    if (body.contains(f)) {
      return Error::InvalidArgument("field '" + std::string(f) +
                                    "' cannot change in the same request as 'status'");
    }
  }
  if (!status->is_string()) return WrongType("status", "a string");
  TX_ASSIGN_OR_RETURN(TaskStatus to, ParseTaskStatus(status->get<std::string>()));
  TX_RETURN_IF_ERROR(ReadBool(body, "force", c.force));
  if (auto t = body.find("token"); t != body.end() && !t->is_null()) {
    std::int64_t token = 0;
    TX_RETURN_IF_ERROR(ReadInteger(body, "token", token));
    c.token = token;
  }
  std::string result, error, note;
  TX_RETURN_IF_ERROR(ReadString(body, "result", result));
  TX_RETURN_IF_ERROR(ReadString(body, "error", error));
  TX_RETURN_IF_ERROR(ReadString(body, "note", note));
  TX_RETURN_IF_ERROR(ReadBool(body, "fresh", c.fresh));
  if (c.fresh && to != TaskStatus::kReady) {
    return Error::InvalidArgument("field 'fresh' goes with status 'ready' (a retry or changes)");
  }
  if (body.contains("answer")) {
    std::string answer;
    TX_RETURN_IF_ERROR(ReadString(body, "answer", answer));
    if (to != TaskStatus::kReady) {
      return Error::InvalidArgument("field 'answer' goes with status 'ready'");
    }
    if (c.force || c.token || c.fresh || !result.empty() || !error.empty() || !note.empty()) {
      return Error::InvalidArgument("status 'ready' with an 'answer' takes nothing else");
    }
    c.kind = TaskChange::Kind::kAnswer;
    c.text = answer;
    return c;
  }
  switch (to) {
    case TaskStatus::kDone:
    case TaskStatus::kReview:
    case TaskStatus::kFailed:
      c.kind = TaskChange::Kind::kOutcome;
      c.outcome = to == TaskStatus::kDone     ? service::Outcome::kDone
                  : to == TaskStatus::kReview ? service::Outcome::kReview
                                              : service::Outcome::kFail;
      if (c.force == c.token.has_value()) {
        return Error::InvalidArgument("status '" + std::string(ToString(to)) +
                                      "' needs the claim's 'token', or 'force': true, not both");
      }
      if (!note.empty()) return Error::InvalidArgument("field 'note' goes with cancel and retry");
      c.text = to == TaskStatus::kFailed ? (error.empty() ? result : error)
                                         : (result.empty() ? error : result);
      return c;
    case TaskStatus::kCancelled:
    case TaskStatus::kReady:
      c.kind = to == TaskStatus::kCancelled ? TaskChange::Kind::kCancel : TaskChange::Kind::kRetry;
      if (c.force || c.token || !result.empty() || !error.empty()) {
        return Error::InvalidArgument("status '" + std::string(ToString(to)) +
                                      "' takes only a 'note'");
      }
      c.text = note;
      return c;
    case TaskStatus::kRunning:
      return Error::InvalidArgument("a task starts running only when a worker claims it");
    case TaskStatus::kWaiting:
      return Error::InvalidArgument(
          "a task waits only when its agent asks a question (tx task ask); answer one with "
          "status 'ready' and 'answer'");
    case TaskStatus::kBlocked:
      return Error::InvalidArgument("a task is blocked only by its 'after' tasks: change 'after'");
    case TaskStatus::kApproved:
      c.kind = TaskChange::Kind::kApprove;
      if (c.force || c.token || !result.empty() || !error.empty()) {
        return Error::InvalidArgument("status 'approved' takes only a 'note'");
      }
      c.text = note;
      return c;
  }
  return Error::Internal("unhandled status");
}

Result<BulkChange> DecodeBulkChange(const json& body, bool retry) {
  TX_RETURN_IF_ERROR(retry ? OnlyKnownFields(body, {"ids", "note", "fresh"})
                           : OnlyKnownFields(body, {"ids", "note"}));
  BulkChange c;
  std::vector<std::string> ids;
  TX_RETURN_IF_ERROR(ReadStrings(body, "ids", ids));
  if (ids.empty()) return Error::InvalidArgument("field 'ids' must list at least one task id");
  if (ids.size() > kMaxBulkIds) {
    return Error::InvalidArgument("field 'ids' lists " + std::to_string(ids.size()) +
                                  " tasks: at most " + std::to_string(kMaxBulkIds) + " at a time");
  }
  std::set<std::string> seen;
  for (auto& id : ids) {
    if (id.empty()) return Error::InvalidArgument("field 'ids' holds an empty id");
    if (seen.insert(id).second) c.ids.push_back(std::move(id));
  }
  TX_RETURN_IF_ERROR(ReadString(body, "note", c.note));
  TX_RETURN_IF_ERROR(ReadBool(body, "fresh", c.fresh));
  return c;
}

Result<int> DecodeScale(const json& body) {
  TX_RETURN_IF_ERROR(OnlyKnownFields(body, {"workers"}));
  if (!body.contains("workers")) return Error::InvalidArgument("field 'workers' is required");
  std::int64_t n = -1;
  TX_RETURN_IF_ERROR(ReadInteger(body, "workers", n));
  if (n < 0 || n > 10'000) {
    return Error::InvalidArgument("field 'workers' must be a number from 0 to 10000");
  }
  return static_cast<int>(n);
}

Result<bool> DecodeStop(const json& body) {
  TX_RETURN_IF_ERROR(OnlyKnownFields(body, {"force"}));
  bool force = false;
  TX_RETURN_IF_ERROR(ReadBool(body, "force", force));
  return force;
}

namespace {

// A list given as an array of strings or as one comma-separated string, joined with commas.
Status ReadList(const json& body, std::string_view field, std::string& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  std::vector<std::string> items;
  if (it->is_string()) {
    items = SplitCommas({it->get<std::string>()});
  } else {
    TX_RETURN_IF_ERROR(ReadStrings(body, field, items));
  }
  for (const auto& item : items) {
    if (item.empty() || item.find_first_of(", \t\n") != std::string::npos) {
      return Error::InvalidArgument("field '" + std::string(field) + "' has a bad item '" + item +
                                    "'");
    }
    out += (out.empty() ? "" : ",") + item;
  }
  return Ok();
}

}  // namespace

Result<NewWorker> DecodeNewWorker(const json& body) {
  TX_RETURN_IF_ERROR(OnlyKnownFields(body, {"name", "agent", "instructions", "allowed_commands",
                                            "capabilities", "queues", "limits", "workdir"}));
  NewWorker w;
  auto flag = [&](const char* name, const std::string& value) {
    if (!value.empty()) w.args.insert(w.args.end(), {name, value});
  };
  std::string name, agent, allowed, capabilities, queues;
  TX_RETURN_IF_ERROR(ReadString(body, "name", name));
  TX_RETURN_IF_ERROR(ReadString(body, "agent", agent));
  TX_RETURN_IF_ERROR(ReadList(body, "allowed_commands", allowed));
  TX_RETURN_IF_ERROR(ReadList(body, "capabilities", capabilities));
  TX_RETURN_IF_ERROR(ReadList(body, "queues", queues));
  TX_RETURN_IF_ERROR(ReadString(body, "instructions", w.instructions));
  TX_RETURN_IF_ERROR(ReadString(body, "workdir", w.workdir));
  if (body.contains("name") && name.empty()) return Error::InvalidArgument("field 'name' is empty");
  if (!name.empty()) TX_RETURN_IF_ERROR(ValidateName("field 'name'", name));
  if (body.contains("agent") && agent.empty()) {
    return Error::InvalidArgument("field 'agent' is empty");
  }
  flag("--name", name);
  flag("--agent", agent);
  flag("--allowed-commands", allowed);
  flag("--capabilities", capabilities);
  flag("--queues", queues);
  std::optional<json> limits;
  TX_RETURN_IF_ERROR(ReadObject(body, "limits", limits));
  if (limits) {
    const std::vector<std::pair<std::string_view, const char*>> known = {
        {"memory_mb", "--memory-mb"},
        {"cpu_percent", "--cpu-percent"},
        {"open_files", "--open-files"},
        {"processes", "--processes"},
        {"cpu_seconds", "--cpu-seconds"}};
    for (const auto& item : limits->items()) {
      // Named, not a structured binding: clang 14 (the fuzz build) cannot capture one.
      const std::string& key = item.key();
      const json& value = item.value();
      auto it =
          std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == key; });
      if (it == known.end()) return Error::InvalidArgument("unknown field 'limits." + key + "'");
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
          value.get<std::int64_t>() > 1'000'000'000) {
        return WrongType("limits." + key, "a positive integer");
      }
      flag(it->second, std::to_string(value.get<std::int64_t>()));
    }
  }
  return w;
}

}  // namespace tx::api
