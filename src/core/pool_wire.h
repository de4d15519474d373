#pragma once
// The pool's control channel as types: what an operator asks of a running orchestrator
// (PoolRequest), what it answers (PoolAnswer) and the pool it publishes (PoolSnapshot). Both ends
// use them — the orchestrator's loop (orchestrator/runtime.cc) and its clients
// (orchestrator/control.cc, the status of service/pool_status.cc, the API's pool routes) — and
// each maps to JSON here, once, through nlohmann's to_json/from_json. The JSON travels in the
// orchestrator's row (OrchestratorState::request and ::pool, service/orchestrator_service.h).
//
// Reading is lenient, as for every body an older or newer peer may write: a missing field keeps
// its default, a field of the wrong type is ignored, unknown fields are dropped; nothing throws.
// Writing is exact: the JSON is what the orchestrator has always published, key for key.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

// One more supervised worker (POST /api/workers, orchestrator::AddWorker).
// JSON: {"id", "args", "instructions", "workdir"}, every key written.
struct CreateRequest {
  std::string id;                 // the request's, for its answer
  std::vector<std::string> args;  // worker flags, e.g. {"--agent", "codex"}
  std::string instructions;       // written as CLAUDE.md and AGENTS.md in its working directory
  std::string workdir;            // empty: <store dir>/workers/<slot>
  bool operator==(const CreateRequest&) const = default;
};

// A slot taken out of the pool. JSON: {"id", "slot", "force"}, every key written.
struct RetireRequest {
  std::string id;
  std::string slot;
  bool force = false;  // its worker stops its agent now instead of finishing its task
  bool operator==(const RetireRequest&) const = default;
};

enum class PoolStop { kNone, kGraceful, kForce };

// What is pending on an orchestrator's row: the requests made since it last published, merged as
// the row queues them (Merge). JSON: {"workers", "scale_id"} (a scale: both or neither),
// "create": [CreateRequest], "retire": [RetireRequest], "stop": "graceful"|"force"; an absent
// request writes no key, so no request is {}. Any stop string but "force" reads as graceful.
struct PoolRequest {
  std::optional<int> workers;  // scale to this many
  std::string scale_id;        // the scale's request id, for its answer
  std::vector<CreateRequest> create;
  std::vector<RetireRequest> retire;
  PoolStop stop = PoolStop::kNone;

  bool empty() const {
    return !workers && create.empty() && retire.empty() && stop == PoolStop::kNone;
  }
  bool operator==(const PoolRequest&) const = default;
};

// The answer to one request (by its id, in PoolSnapshot::results). JSON: {"ok"} and, where not
// empty, "message" and "code" (a refusal), "slot" and "pid" (a worker created or a slot retired),
// "workers" (a scale).
struct PoolAnswer {
  bool ok = false;
  std::string message;              // a refusal: why; "no capacity: …" when the pool has no room
  std::string code;                 // a refusal that is not a conflict: "not_found"
  std::string slot;                 // the slot created or retired
  std::optional<std::int64_t> pid;  // the created slot's worker process
  std::optional<int> workers;       // the scaled pool's size

  static PoolAnswer Refused(std::string message, std::string code = "");
  // What the answer means to its waiter: Ok() when ok; backpressure for "no capacity…",
  // not_found for code "not_found", conflict otherwise; each with the message.
  Status AsStatus() const;
  bool operator==(const PoolAnswer&) const = default;
};

// One slot of the pool as published. JSON: every key written.
struct SlotSnapshot {
  std::string slot;   // "slot-3"
  std::string state;  // pending, starting, running, backoff, draining, orphan, failed
  std::int64_t pid = 0;
  Millis started_at = 0;
  int restarts = 0;
  Millis next_start_at = 0;  // backoff and failed: when it starts again; 0 otherwise
  std::string last_exit;
  std::string failure;
  bool operator==(const SlotSnapshot&) const = default;
};

// The pool an orchestrator publishes on its row, for status and for its requests' waiters.
// JSON: {"desired", "max_workers", "live", "stopping", "slots", "results": {id: PoolAnswer},
// "updated_at"}, every key written; a row that was never published ({}) reads as the defaults.
struct PoolSnapshot {
  int desired = 0;
  int max_workers = 0;
  int live = 0;
  bool stopping = false;
  std::vector<SlotSnapshot> slots;  // by index
  std::map<std::string, PoolAnswer> results;
  Millis updated_at = 0;

  const SlotSnapshot* FindSlot(const std::string& name) const;
  const PoolAnswer* FindAnswer(const std::string& id) const;
  bool operator==(const PoolSnapshot&) const = default;
};

void to_json(nlohmann::json& j, const CreateRequest& r);
void from_json(const nlohmann::json& j, CreateRequest& r);
void to_json(nlohmann::json& j, const RetireRequest& r);
void from_json(const nlohmann::json& j, RetireRequest& r);
void to_json(nlohmann::json& j, const PoolRequest& r);
void from_json(const nlohmann::json& j, PoolRequest& r);
void to_json(nlohmann::json& j, const PoolAnswer& a);
void from_json(const nlohmann::json& j, PoolAnswer& a);
void to_json(nlohmann::json& j, const SlotSnapshot& s);
void from_json(const nlohmann::json& j, SlotSnapshot& s);
void to_json(nlohmann::json& j, const PoolSnapshot& p);
void from_json(const nlohmann::json& j, PoolSnapshot& p);

}  // namespace tx
