#include "service/worker_wire.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/body_fields.h"
#include "core/json.h"

namespace tx::service {

using nlohmann::json;

// Here, beside the decoder of "outcome", rather than in claim_service.cc: the names are the
// wire's, and the fuzz target builds this file without the services.
std::string_view ToString(Outcome o) {
  switch (o) {
    case Outcome::kDone:
      return "done";
    case Outcome::kReview:
      return "review";
    case Outcome::kFail:
      return "fail";
  }
  return "unknown";
}

namespace {

Status RequiredString(const json& body, std::string_view field, std::string& out) {
  TX_RETURN_IF_ERROR(ReadString(body, field, out));
  if (out.empty()) return Error::InvalidArgument("field '" + std::string(field) + "' is required");
  return Ok();
}

Status ReadMillis(const json& body, std::string_view field, Millis lo, Millis hi, Millis& out) {
  std::int64_t v = out;
  TX_RETURN_IF_ERROR(ReadInteger(body, field, v));
  if (v < lo || v > hi) {
    return Error::InvalidArgument("field '" + std::string(field) + "' must be from " +
                                  std::to_string(lo) + " to " + std::to_string(hi) + " ms");
  }
  out = v;
  return Ok();
}

// A reason among `allowed`, or `fallback` when absent.
Status ReadReason(const json& body, const std::vector<EndReason>& allowed, EndReason fallback,
                  EndReason& out) {
  out = fallback;
  std::string name;
  TX_RETURN_IF_ERROR(ReadString(body, "reason", name));
  if (name.empty()) return Ok();
  Result<EndReason> r = ParseEndReason(name);
  if (!r.ok() || std::find(allowed.begin(), allowed.end(), *r) == allowed.end()) {
    std::string names;
    for (EndReason a : allowed) names += (names.empty() ? "" : ", ") + std::string(ToString(a));
    return Error::InvalidArgument("field 'reason' must be one of " + names + ", not '" + name +
                                  "'");
  }
  out = *r;
  return Ok();
}

}  // namespace

namespace {
// The credential's hash is the server's to write.
Status NoCredentialIn(const std::optional<json>& metadata) {
  if (metadata && metadata->contains(kCredentialKey)) {
    return Error::InvalidArgument(std::string("field 'metadata.") + kCredentialKey +
                                  "' is the server's to set");
  }
  return Ok();
}
}  // namespace

json EncodeRegistration(const Registration& r) {
  return {{"name", r.name},
          {"slot", r.slot},
          {"pool", r.pool},
          {"hostname", r.hostname},
          {"pid", r.pid},
          {"capabilities", r.capabilities},
          {"queues", r.queues},
          {"heartbeat_interval_ms", r.heartbeat_interval_ms},
          {"busy_heartbeat_interval_ms", r.busy_heartbeat_interval_ms},
          {"metadata", r.metadata}};
}

Result<Registration> DecodeRegistration(const json& body) {
  Registration r;
  TX_RETURN_IF_ERROR(ReadString(body, "name", r.name));
  TX_RETURN_IF_ERROR(ReadString(body, "slot", r.slot));
  TX_RETURN_IF_ERROR(ReadString(body, "pool", r.pool));
  TX_RETURN_IF_ERROR(ReadString(body, "hostname", r.hostname));
  TX_RETURN_IF_ERROR(ReadInteger(body, "pid", r.pid));
  TX_RETURN_IF_ERROR(ReadStrings(body, "capabilities", r.capabilities));
  TX_RETURN_IF_ERROR(ReadStrings(body, "queues", r.queues));
  if (r.queues.empty()) return Error::InvalidArgument("field 'queues' is empty");
  TX_RETURN_IF_ERROR(
      ReadMillis(body, "heartbeat_interval_ms", 0, 24 * 3'600'000, r.heartbeat_interval_ms));
  TX_RETURN_IF_ERROR(ReadMillis(body, "busy_heartbeat_interval_ms", 0, 24 * 3'600'000,
                                r.busy_heartbeat_interval_ms));
  std::optional<json> metadata;
  TX_RETURN_IF_ERROR(ReadObject(body, "metadata", metadata));
  TX_RETURN_IF_ERROR(NoCredentialIn(metadata));
  if (metadata) r.metadata = std::move(*metadata);
  return r;
}

json EncodeHeartbeat(const HeartbeatBody& b) {
  json body = {{"worker_id", b.worker_id},
               {"metadata", b.update.metadata},
               {"clear_request", b.update.clear_request}};
  if (b.update.status) body["status"] = ToString(*b.update.status);
  return body;
}

Result<HeartbeatBody> DecodeHeartbeat(const json& body) {
  HeartbeatBody h;
  TX_RETURN_IF_ERROR(RequiredString(body, "worker_id", h.worker_id));
  std::string status;
  TX_RETURN_IF_ERROR(ReadString(body, "status", status));
  if (!status.empty()) {
    Result<WorkerStatus> s = ParseWorkerStatus(status);
    bool allowed = s.ok() && (*s == WorkerStatus::kIdle || *s == WorkerStatus::kBusy ||
                              *s == WorkerStatus::kPaused || *s == WorkerStatus::kStopping);
    if (!allowed) {
      return Error::InvalidArgument("field 'status' must be idle, busy, paused or stopping, not '" +
                                    status + "'");
    }
    h.update.status = *s;
  }
  std::optional<json> metadata;
  TX_RETURN_IF_ERROR(ReadObject(body, "metadata", metadata));
  TX_RETURN_IF_ERROR(NoCredentialIn(metadata));
  if (metadata) h.update.metadata = std::move(*metadata);
  TX_RETURN_IF_ERROR(ReadBool(body, "clear_request", h.update.clear_request));
  return h;
}

json EncodeDeregister(const DeregisterBody& b) {
  return {{"worker_id", b.worker_id}, {"reason", b.reason}};
}

Result<DeregisterBody> DecodeDeregister(const json& body) {
  DeregisterBody d;
  TX_RETURN_IF_ERROR(RequiredString(body, "worker_id", d.worker_id));
  TX_RETURN_IF_ERROR(ReadString(body, "reason", d.reason));
  return d;
}

json EncodeClaim(const ClaimBody& b) {
  json body = {{"worker_id", b.worker_id}, {"lease_ms", b.lease_ms}, {"wait_ms", b.wait_ms}};
  if (!b.gate.blocked_agents.empty() || !b.gate.blocked_agent_queues.empty()) {
    body["gate"] = {{"agents", b.gate.blocked_agents}, {"queues", b.gate.blocked_agent_queues}};
  }
  return body;
}

Result<ClaimBody> DecodeClaim(const json& body) {
  ClaimBody c;
  TX_RETURN_IF_ERROR(RequiredString(body, "worker_id", c.worker_id));
  TX_RETURN_IF_ERROR(ReadMillis(body, "lease_ms", 0, 7 * 24 * 3'600'000, c.lease_ms));
  TX_RETURN_IF_ERROR(ReadMillis(body, "wait_ms", 0, kMaxClaimWaitMs, c.wait_ms));
  if (auto gate = body.find("gate"); gate != body.end() && !gate->is_null()) {
    if (!gate->is_object()) return WrongType("gate", "an object");
    for (const char* key : {"agents", "queues"}) {
      auto list = gate->find(key);
      if (list == gate->end()) continue;
      if (!list->is_array() || list->size() > 256) return WrongType("gate", "lists of names");
      std::vector<std::string>& out =
          std::string_view(key) == "agents" ? c.gate.blocked_agents : c.gate.blocked_agent_queues;
      for (const auto& n : *list) {
        if (!n.is_string() || n.get<std::string>().size() > 4096) {
          return WrongType("gate", "lists of names");
        }
        out.push_back(n.get<std::string>());
      }
    }
  }
  return c;
}

namespace {

Status ReadToken(const json& body, std::string& task_id, std::int64_t& token) {
  TX_RETURN_IF_ERROR(RequiredString(body, "task_id", task_id));
  if (!body.contains("token")) return Error::InvalidArgument("field 'token' is required");
  return ReadInteger(body, "token", token);
}

}  // namespace

json EncodeUsage(const AttemptUsage& usage) { return {{"usage", ToJson(usage)}}; }

Result<AttemptUsage> DecodeUsage(const json& body) {
  auto it = body.find("usage");
  if (it == body.end()) return Error::InvalidArgument("field 'usage' is required");
  return UsageFromJson(*it);
}

json EncodeLimited(const LimitedBody& b) {
  return {{"task_id", b.task_id},         {"token", b.token},
          {"agent", b.limit.profile},     {"account", b.limit.account},
          {"accounts", b.limit.accounts}, {"reset_at", b.limit.reset_at},
          {"reason", b.limit.reason}};
}

Result<LimitedBody> DecodeLimited(const json& body) {
  LimitedBody b;
  TX_RETURN_IF_ERROR(ReadToken(body, b.task_id, b.token));
  TX_RETURN_IF_ERROR(RequiredString(body, "agent", b.limit.profile));
  TX_RETURN_IF_ERROR(ReadString(body, "account", b.limit.account));
  TX_RETURN_IF_ERROR(ReadString(body, "reason", b.limit.reason));
  TX_RETURN_IF_ERROR(ReadInteger(body, "reset_at", b.limit.reset_at));
  if (auto it = body.find("accounts"); it != body.end()) {
    if (!it->is_array()) return WrongType("accounts", "an array of names");
    for (const auto& a : *it) {
      if (!a.is_string()) return WrongType("accounts", "an array of names");
      b.limit.accounts.push_back(a.get<std::string>());
    }
  }
  return b;
}

json EncodeUnavailable(const UnavailableBody& b) {
  return {{"task_id", b.task_id},
          {"token", b.token},
          {"reason", ToString(b.reason)},
          {"agent", b.agent},
          {"why", b.why}};
}

Result<UnavailableBody> DecodeUnavailable(const json& body) {
  UnavailableBody b;
  TX_RETURN_IF_ERROR(ReadToken(body, b.task_id, b.token));
  TX_RETURN_IF_ERROR(ReadReason(body, {EndReason::kSpawnFailed, EndReason::kAgentUnavailable},
                                EndReason::kSpawnFailed, b.reason));
  TX_RETURN_IF_ERROR(RequiredString(body, "agent", b.agent));
  TX_RETURN_IF_ERROR(ReadString(body, "why", b.why));
  return b;
}

json EncodeOverBudget(const OverBudgetBody& b) {
  return {{"task_id", b.task_id}, {"token", b.token}, {"why", b.why}};
}

Result<OverBudgetBody> DecodeOverBudget(const json& body) {
  OverBudgetBody b;
  TX_RETURN_IF_ERROR(ReadToken(body, b.task_id, b.token));
  TX_RETURN_IF_ERROR(ReadString(body, "why", b.why));
  return b;
}

json EncodeNote(const NoteBody& b) {
  return {{"task_id", b.task_id}, {"token", b.token}, {"text", b.text}};
}

Result<NoteBody> DecodeNote(const json& body) {
  NoteBody b;
  TX_RETURN_IF_ERROR(ReadToken(body, b.task_id, b.token));
  TX_RETURN_IF_ERROR(RequiredString(body, "text", b.text));
  return b;
}

json EncodeSubtask(const SubtaskBody& b) {
  json body = {{"task_id", b.parent_id}, {"token", b.token}, {"task", ToJson(b.task, {})}};
  if (b.max_subtasks) body["max_subtasks"] = *b.max_subtasks;
  return body;
}

Result<SubtaskBody> DecodeSubtask(const json& body) {
  SubtaskBody b;
  TX_RETURN_IF_ERROR(ReadToken(body, b.parent_id, b.token));
  auto task = body.find("task");
  if (task == body.end() || !task->is_object()) {
    return Error::InvalidArgument("field 'task' must be an object");
  }
  TX_ASSIGN_OR_RETURN(b.task, TaskFromJson(*task));
  if (body.contains("max_subtasks")) {
    std::int64_t n = 0;
    TX_RETURN_IF_ERROR(ReadInteger(body, "max_subtasks", n));
    if (n < 0) return Error::InvalidArgument("field 'max_subtasks' must be 0 or more");
    b.max_subtasks = static_cast<int>(std::min<std::int64_t>(n, 1 << 20));
  }
  return b;
}

json EncodeAgentState(const Budgets& budgets) {
  json body = json::object();
  if (budgets.any()) body["budgets"] = ToJson(budgets);
  return body;
}

Result<Budgets> DecodeAgentState(const json& body) {
  auto it = body.find("budgets");
  if (it == body.end() || it->is_null()) return Budgets{};
  return BudgetsFromJson(*it);
}

json EncodeFenced(FencedCall call, const FencedBody& b) {
  json body = {{"task_id", b.task_id}, {"token", b.token}};
  // An absent exit code is written as null, never left out.
  auto exit_code = [&] { return b.exit_code ? json(*b.exit_code) : json(); };
  switch (call) {
    case FencedCall::kRenew:
      break;
    case FencedCall::kRelease:
    case FencedCall::kGiveUp:
      body["reason"] = ToString(b.reason);
      break;
    case FencedCall::kReport:
      body["outcome"] = ToString(b.outcome);
      body["text"] = b.text;
      body["exit_code"] = exit_code();
      if (b.branch) body["branch"] = *b.branch;
      break;
    case FencedCall::kFail:
      body["reason"] = ToString(b.reason);
      body["error"] = b.text;
      body["exit_code"] = exit_code();
      break;
    case FencedCall::kAsk:
      body["question"] = b.text;
      break;
  }
  return body;
}

Result<FencedBody> DecodeFenced(FencedCall call, const json& body) {
  FencedBody f;
  TX_RETURN_IF_ERROR(RequiredString(body, "task_id", f.task_id));
  if (!body.contains("token")) return Error::InvalidArgument("field 'token' is required");
  TX_RETURN_IF_ERROR(ReadInteger(body, "token", f.token));
  if (auto it = body.find("exit_code"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < -1'000 ||
        it->get<std::int64_t>() > 1'000) {
      return WrongType("exit_code", "an integer exit status");
    }
    f.exit_code = it->get<int>();
  }
  switch (call) {
    case FencedCall::kRenew:
      break;
    case FencedCall::kRelease:
      TX_RETURN_IF_ERROR(ReadReason(body, {EndReason::kReleased, EndReason::kShutdown},
                                    EndReason::kReleased, f.reason));
      break;
    case FencedCall::kReport: {
      std::string outcome;
      TX_RETURN_IF_ERROR(RequiredString(body, "outcome", outcome));
      if (outcome == "done") {
        f.outcome = Outcome::kDone;
      } else if (outcome == "review") {
        f.outcome = Outcome::kReview;
      } else if (outcome == "fail" || outcome == "failed") {
        f.outcome = Outcome::kFail;
      } else {
        return Error::InvalidArgument("field 'outcome' must be done, review or fail, not '" +
                                      outcome + "'");
      }
      TX_RETURN_IF_ERROR(ReadString(body, "text", f.text));
      TX_RETURN_IF_ERROR(ReadObject(body, "branch", f.branch));
      break;
    }
    case FencedCall::kFail:
      TX_RETURN_IF_ERROR(ReadReason(body,
                                    {EndReason::kFailed, EndReason::kTimedOut, EndReason::kStalled},
                                    EndReason::kFailed, f.reason));
      TX_RETURN_IF_ERROR(ReadString(body, "error", f.text));
      break;
    case FencedCall::kGiveUp:
      TX_RETURN_IF_ERROR(
          ReadReason(body, {EndReason::kLeaseLost}, EndReason::kLeaseLost, f.reason));
      break;
    case FencedCall::kAsk:
      TX_RETURN_IF_ERROR(RequiredString(body, "question", f.text));
      break;
  }
  return f;
}

json EncodeAutoMerge(const AutoMergeBody& b) {
  json body = {{"task_id", b.task_id}, {"token", b.token}};
  if (b.merge) {
    body["merge"] = *b.merge;
  } else {
    body["why"] = b.why;
  }
  return body;
}

Result<AutoMergeBody> DecodeAutoMerge(const json& body) {
  AutoMergeBody b;
  TX_RETURN_IF_ERROR(RequiredString(body, "task_id", b.task_id));
  if (!body.contains("token")) return Error::InvalidArgument("field 'token' is required");
  TX_RETURN_IF_ERROR(ReadInteger(body, "token", b.token));
  TX_RETURN_IF_ERROR(ReadObject(body, "merge", b.merge));
  TX_RETURN_IF_ERROR(ReadString(body, "why", b.why));
  if (b.merge.has_value() == !b.why.empty()) {
    return Error::InvalidArgument("give either 'merge' (an object) or 'why' (a string)");
  }
  return b;
}

json EncodeBatch(const BatchBody& b) {
  json finished = json::array();
  for (const auto& f : b.finished) {
    FencedBody report;
    report.task_id = f.task_id;
    report.token = f.token;
    report.outcome = f.outcome;
    report.text = f.text;
    report.exit_code = f.exit_code;
    finished.push_back(EncodeFenced(FencedCall::kReport, report));
  }
  return {{"worker_id", b.worker_id},
          {"finished", std::move(finished)},
          {"claim", b.claim},
          {"lease_ms", b.lease_ms}};
}

Result<BatchBody> DecodeBatch(const json& body) {
  BatchBody b;
  TX_RETURN_IF_ERROR(RequiredString(body, "worker_id", b.worker_id));
  TX_RETURN_IF_ERROR(ReadMillis(body, "lease_ms", 0, 7 * 24 * 3'600'000, b.lease_ms));
  std::int64_t claim = 0;
  TX_RETURN_IF_ERROR(ReadInteger(body, "claim", claim));
  if (claim < 0 || claim > ClaimService::kMaxBatch) {
    return Error::InvalidArgument("field 'claim' must be from 0 to " +
                                  std::to_string(ClaimService::kMaxBatch));
  }
  b.claim = static_cast<int>(claim);
  if (auto it = body.find("finished"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType("finished", "an array of reports");
    if (it->size() > static_cast<std::size_t>(ClaimService::kMaxBatch)) {
      return Error::InvalidArgument("field 'finished' holds more than " +
                                    std::to_string(ClaimService::kMaxBatch) + " reports");
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& one = (*it)[i];
      if (!one.is_object()) return WrongType("finished", "an array of report objects");
      Result<FencedBody> f = DecodeFenced(FencedCall::kReport, one);
      if (!f.ok()) {
        return Error::InvalidArgument("finished[" + std::to_string(i) +
                                      "]: " + f.error().message());
      }
      b.finished.push_back(
          {std::move(f->task_id), f->token, f->outcome, std::move(f->text), f->exit_code});
    }
  }
  return b;
}

json EncodeClaimReply(const ClaimResult& c) {
  return {{"claim", ToJson(c.claim)}, {"task", ToJson(c.task, {})}};
}

Result<std::optional<ClaimResult>> DecodeClaimReply(const json& reply) {
  if (!reply.is_object() || !reply.contains("claim")) return std::optional<ClaimResult>();
  ClaimResult out;
  TX_ASSIGN_OR_RETURN(out.claim, ClaimFromJson(reply["claim"]));
  TX_ASSIGN_OR_RETURN(out.task, TaskFromJson(reply.value("task", json())));
  return std::optional<ClaimResult>(std::move(out));
}

json EncodeAgentStateReply(const AgentStateReply& r) {
  json out = {{"limits", json::array()}};
  for (const auto& l : r.limits) out["limits"].push_back(ToJson(l));
  if (r.budget) out["budget"] = ToJson(*r.budget);
  return out;
}

Result<AgentStateReply> DecodeAgentStateReply(const json& reply) {
  AgentStateReply out;
  for (const auto& l : reply.value("limits", json::array())) {
    TX_ASSIGN_OR_RETURN(AgentLimit limit, LimitFromJson(l));
    out.limits.push_back(std::move(limit));
  }
  if (auto b = reply.find("budget"); b != reply.end() && b->is_object()) {
    TX_ASSIGN_OR_RETURN(out.budget, BudgetStateFromJson(*b));
  }
  return out;
}

}  // namespace tx::service
