#pragma once
// The bodies of the remote-worker protocol (POST /api/worker/...), decoded in one place each.
// Pure: no store, no I/O, so the fuzz target drives them directly. Unlike the task bodies these
// ignore fields they do not know — an older worker meets a newer server here — but a known field
// of the wrong type or value is an invalid argument naming it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/claim.h"
#include "core/error.h"
#include "core/usage.h"
#include "core/worker.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/worker_service.h"

namespace tx::api {

// The longest a claim may wait at the server for a task (a long poll).
inline constexpr Millis kMaxClaimWaitMs = 60'000;

// A registration over HTTP returns a credential ("credential" in its reply, 256 random bits);
// every later call that acts for that worker carries it in this header, and the store keeps its
// SHA-256 under this key of the worker's metadata (which the worker itself may not set).
inline constexpr const char* kCredentialHeader = kWorkerCredentialHeader;
inline constexpr char kCredentialKey[] = "credential_sha256";

// register: {"name", "slot", "hostname", "pid", "capabilities", "queues",
// "heartbeat_interval_ms", "busy_heartbeat_interval_ms", "metadata"}.
Result<service::Registration> DecodeRegistration(const nlohmann::json& body);

// heartbeat: {"worker_id" (required), "status" (idle|busy|paused|stopping), "metadata" (merged),
// "clear_request"}.
struct HeartbeatBody {
  std::string worker_id;
  service::HeartbeatUpdate update;
};
Result<HeartbeatBody> DecodeHeartbeat(const nlohmann::json& body);

// deregister: {"worker_id" (required), "reason"}.
struct DeregisterBody {
  std::string worker_id;
  std::string reason = "graceful-shutdown";
};
Result<DeregisterBody> DecodeDeregister(const nlohmann::json& body);

// claim: {"worker_id" (required), "lease_ms" (0 = the default), "wait_ms" (0..60000), "gate":
// {"agents": [...], "queues": [...]} (the agent tasks to pass over, service/agent_gate.h)}.
struct ClaimBody {
  std::string worker_id;
  Millis lease_ms = 0;
  Millis wait_ms = 0;
  service::AgentGate gate;
};
Result<ClaimBody> DecodeClaim(const nlohmann::json& body);

// Every call on a held claim: {"task_id", "token"} (both required), and by call:
//   renew:   nothing more;
//   release: "reason" released | shutdown (default released);
//   report:  "outcome" done | review | fail (required), "text", "exit_code";
//   fail:    "reason" failed | timed_out | stalled (default failed), "error", "exit_code";
//   give-up: "reason" lease_lost (the default);
//   ask:     "question" (required): the agent's question for a person (ClaimService::Ask).
struct FencedBody {
  std::string task_id;
  std::int64_t token = 0;
  EndReason reason = EndReason::kNone;
  service::Outcome outcome = service::Outcome::kDone;
  std::string text;  // report's text, fail's error, ask's question
  std::optional<int> exit_code;
  std::optional<nlohmann::json> branch;  // report: the branch's summary, for a task going to review
};
enum class FencedCall { kRenew, kRelease, kReport, kFail, kGiveUp, kAsk };
Result<FencedBody> DecodeFenced(FencedCall call, const nlohmann::json& body);

// auto-merge: {"task_id", "token" (required), and "merge" (an object: it merged) or "why" (a
// string: the merge was refused)}.
struct AutoMergeBody {
  std::string task_id;
  std::int64_t token = 0;
  std::optional<nlohmann::json> merge;
  std::string why;
};
Result<AutoMergeBody> DecodeAutoMerge(const nlohmann::json& body);

// The agents (docs/agents.md), each fenced by the attempt's claim token where it ends one:
//   usage:        {"usage": the attempt's row as ToJson(AttemptUsage) writes it}
//   limited:      {"task_id", "token", "agent", "account", "accounts": [...], "reset_at"
//                  (epoch ms, 0 = none given), "reason"}
//   unavailable:  {"task_id", "token", "reason": spawn_failed | agent_unavailable, "agent",
//                  "why"}
//   over-budget:  {"task_id", "token", "why"}
//   agent-state:  {"budgets": {"daily_usd", "queues": {NAME: usd}}}
Result<AttemptUsage> DecodeUsage(const nlohmann::json& body);
struct LimitedBody {
  std::string task_id;
  std::int64_t token = 0;
  service::LimitReport limit;
};
Result<LimitedBody> DecodeLimited(const nlohmann::json& body);
struct UnavailableBody {
  std::string task_id;
  std::int64_t token = 0;
  EndReason reason = EndReason::kSpawnFailed;
  std::string agent;
  std::string why;
};
Result<UnavailableBody> DecodeUnavailable(const nlohmann::json& body);
struct OverBudgetBody {
  std::string task_id;
  std::int64_t token = 0;
  std::string why;
};
Result<OverBudgetBody> DecodeOverBudget(const nlohmann::json& body);

// note: {"task_id", "token", "text"}: an agent's note on its task (tx task note over HTTP).
struct NoteBody {
  std::string task_id;
  std::int64_t token = 0;
  std::string text;
};
Result<NoteBody> DecodeNote(const nlohmann::json& body);

// subtask: {"task_id" (the parent), "token" (its claim's), "task" (the subtask, as GET
// /api/tasks/ID shows a task: title, description, priority, queue, requires, ...),
// "max_subtasks" (the limit the agent was given; the server's own holds when it is lower)}: an
// agent's tx task add over HTTP.
struct SubtaskBody {
  std::string parent_id;
  std::int64_t token = 0;
  Task task;
  std::optional<int> max_subtasks;
};
Result<SubtaskBody> DecodeSubtask(const nlohmann::json& body);
Result<Budgets> DecodeAgentState(const nlohmann::json& body);

// batch: {"worker_id" (required), "finished": [report bodies: {"task_id", "token", "outcome",
// "text", "exit_code"}] (at most 100), "claim" (0..100 tasks to claim), "lease_ms"}.
struct BatchBody {
  std::string worker_id;
  std::vector<service::ClaimService::Finished> finished;
  int claim = 0;
  Millis lease_ms = 0;
};
Result<BatchBody> DecodeBatch(const nlohmann::json& body);

}  // namespace tx::api
