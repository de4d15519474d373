#pragma once
// The bodies of the remote-worker protocol (POST /api/worker/..., docs/api.md): one struct each,
// mapped to JSON here, once, for both ends. The worker that sends a body writes it with its
// Encode (HttpCoordinator, worker/http_coordinator.cc); the server reads it with its Decode
// (api/worker_routes.cc). Pure: no store, no I/O, so the fuzz target drives the decoders
// directly.
//
// Writing is exact: each Encode writes the keys listed beside its body, as the worker has always
// sent them (a key said to be written "when set" is left out otherwise). Reading ignores the
// fields it does not know — an older worker meets a newer server here, unlike the task bodies —
// but a known field of the wrong type or value is an invalid argument naming it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/budgets.h"
#include "core/claim.h"
#include "core/error.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"
#include "service/agent_service.h"
#include "service/claim_service.h"
#include "service/worker_service.h"

namespace tx::service {

// The longest a claim may wait at the server for a task (a long poll).
inline constexpr Millis kMaxClaimWaitMs = 60'000;

// A registration over HTTP returns a credential ("credential" in its reply, 256 random bits);
// every later call that acts for that worker carries it in this header, and the store keeps its
// SHA-256 under this key of the worker's metadata (which the worker itself may not set).
inline constexpr const char* kCredentialHeader = kWorkerCredentialHeader;
inline constexpr char kCredentialKey[] = "credential_sha256";

// register: {"name", "slot", "pool", "hostname", "pid", "capabilities", "queues",
// "heartbeat_interval_ms", "busy_heartbeat_interval_ms", "metadata"}, every key written
// (Registration::replace_fresh is the server's to set, never on the wire). Decoding refuses
// empty queues and metadata holding kCredentialKey.
nlohmann::json EncodeRegistration(const Registration& r);
Result<Registration> DecodeRegistration(const nlohmann::json& body);

// heartbeat: {"worker_id" (required), "metadata" (merged), "clear_request"}, and "status"
// (idle|busy|paused|stopping) when set.
struct HeartbeatBody {
  std::string worker_id;
  HeartbeatUpdate update;
};
nlohmann::json EncodeHeartbeat(const HeartbeatBody& b);
Result<HeartbeatBody> DecodeHeartbeat(const nlohmann::json& body);

// deregister: {"worker_id" (required), "reason"}.
struct DeregisterBody {
  std::string worker_id;
  std::string reason = "graceful-shutdown";
};
nlohmann::json EncodeDeregister(const DeregisterBody& b);
Result<DeregisterBody> DecodeDeregister(const nlohmann::json& body);

// claim: {"worker_id" (required), "lease_ms" (0 = the default), "wait_ms" (0..60000)}, and
// "gate": {"agents": [...], "queues": [...]} (the agent tasks to pass over, service/agent_gate.h)
// when the gate is not empty.
struct ClaimBody {
  std::string worker_id;
  Millis lease_ms = 0;
  Millis wait_ms = 0;
  AgentGate gate;
};
nlohmann::json EncodeClaim(const ClaimBody& b);
Result<ClaimBody> DecodeClaim(const nlohmann::json& body);

// Every call on a held claim: {"task_id", "token"} (both required), and by call:
//   renew:   nothing more;
//   release: "reason" released | shutdown (default released);
//   report:  "outcome" done | review | fail (required), "text", "exit_code" (null when there is
//            none), and "branch" when given;
//   fail:    "reason" failed | timed_out | stalled (default failed), "error" (the text),
//            "exit_code" (null when there is none);
//   give-up: "reason" lease_lost (the default);
//   ask:     "question" (required, the text): the agent's question for a person
//            (ClaimService::Ask).
// Encode writes every key its call lists.
struct FencedBody {
  std::string task_id;
  std::int64_t token = 0;
  EndReason reason = EndReason::kNone;
  Outcome outcome = Outcome::kDone;
  std::string text;  // report's text, fail's error, ask's question
  std::optional<int> exit_code;
  std::optional<nlohmann::json> branch;  // report: the branch's summary, for a task going to review
};
enum class FencedCall { kRenew, kRelease, kReport, kFail, kGiveUp, kAsk };
nlohmann::json EncodeFenced(FencedCall call, const FencedBody& b);
Result<FencedBody> DecodeFenced(FencedCall call, const nlohmann::json& body);

// auto-merge: {"task_id", "token" (required), and "merge" (an object: it merged) or "why" (a
// string: the merge was refused)}; Encode writes "merge" when there is one, else "why".
struct AutoMergeBody {
  std::string task_id;
  std::int64_t token = 0;
  std::optional<nlohmann::json> merge;
  std::string why;
};
nlohmann::json EncodeAutoMerge(const AutoMergeBody& b);
Result<AutoMergeBody> DecodeAutoMerge(const nlohmann::json& body);

// The agents (docs/agents.md), each fenced by the attempt's claim token where it ends one:
//   usage:        {"usage": the attempt's row as ToJson(AttemptUsage) writes it}
//   limited:      {"task_id", "token", "agent", "account", "accounts": [...], "reset_at"
//                  (epoch ms, 0 = none given), "reason"}
//   unavailable:  {"task_id", "token", "reason": spawn_failed | agent_unavailable, "agent",
//                  "why"}
//   over-budget:  {"task_id", "token", "why"}
//   agent-state:  {"budgets": {"daily_usd", "queues": {NAME: usd}}} when there are any, else {}
// every key written.
nlohmann::json EncodeUsage(const AttemptUsage& usage);
Result<AttemptUsage> DecodeUsage(const nlohmann::json& body);
struct LimitedBody {
  std::string task_id;
  std::int64_t token = 0;
  LimitReport limit;
};
nlohmann::json EncodeLimited(const LimitedBody& b);
Result<LimitedBody> DecodeLimited(const nlohmann::json& body);
struct UnavailableBody {
  std::string task_id;
  std::int64_t token = 0;
  EndReason reason = EndReason::kSpawnFailed;
  std::string agent;
  std::string why;
};
nlohmann::json EncodeUnavailable(const UnavailableBody& b);
Result<UnavailableBody> DecodeUnavailable(const nlohmann::json& body);
struct OverBudgetBody {
  std::string task_id;
  std::int64_t token = 0;
  std::string why;
};
nlohmann::json EncodeOverBudget(const OverBudgetBody& b);
Result<OverBudgetBody> DecodeOverBudget(const nlohmann::json& body);
nlohmann::json EncodeAgentState(const Budgets& budgets);
Result<Budgets> DecodeAgentState(const nlohmann::json& body);

// note: {"task_id", "token", "text"}: an agent's note on its task (tx task note over HTTP).
struct NoteBody {
  std::string task_id;
  std::int64_t token = 0;
  std::string text;
};
nlohmann::json EncodeNote(const NoteBody& b);
Result<NoteBody> DecodeNote(const nlohmann::json& body);

// subtask: {"task_id" (the parent), "token" (its claim's), "task" (the subtask, as GET
// /api/tasks/ID shows a task: title, description, priority, queue, requires, ...)}, and
// "max_subtasks" (the limit the agent was given; the server's own holds when it is lower) when
// set: an agent's tx task add over HTTP.
struct SubtaskBody {
  std::string parent_id;
  std::int64_t token = 0;
  Task task;
  std::optional<int> max_subtasks;
};
nlohmann::json EncodeSubtask(const SubtaskBody& b);
Result<SubtaskBody> DecodeSubtask(const nlohmann::json& body);

// batch: {"worker_id" (required), "finished": [report bodies: {"task_id", "token", "outcome",
// "text", "exit_code"}] (at most 100), "claim" (0..100 tasks to claim), "lease_ms"}, every key
// written.
struct BatchBody {
  std::string worker_id;
  std::vector<ClaimService::Finished> finished;
  int claim = 0;
  Millis lease_ms = 0;
};
nlohmann::json EncodeBatch(const BatchBody& b);
Result<BatchBody> DecodeBatch(const nlohmann::json& body);

// Replies. The claim's and the agent state's are types here; the others the route still writes
// and HttpCoordinator reads key by key: most are one domain type under its key ({"worker"},
// {"claim"}, {"task"}, as core/json.h writes it), and register's is {"worker", "credential",
// "replaced"}. The server adds "server_time" to every reply (HttpCoordinator takes it for the
// fleet's clock).

// claim's reply, and each of batch's "claims": {"claim", "task"}. Reading it, a reply without
// "claim" (a 204 reads as null) is no claim: nullopt.
nlohmann::json EncodeClaimReply(const ClaimResult& c);
Result<std::optional<ClaimResult>> DecodeClaimReply(const nlohmann::json& reply);

// agent-state's reply: {"limits": [as ToJson(AgentLimit)]}, and "budget" (as ToJson(BudgetState))
// when there are budgets to count against.
struct AgentStateReply {
  std::vector<AgentLimit> limits;
  std::optional<BudgetState> budget;
};
nlohmann::json EncodeAgentStateReply(const AgentStateReply& r);
Result<AgentStateReply> DecodeAgentStateReply(const nlohmann::json& reply);

}  // namespace tx::service
