#include "core/pool_wire.h"

#include <utility>

namespace tx {

using nlohmann::json;

namespace {

// Each sets `out` from j[key] when it is there with the right type, and leaves it alone
// otherwise (json::find on a non-object finds nothing).
void Take(const json& j, const char* key, std::string& out) {
  if (auto it = j.find(key); it != j.end() && it->is_string()) out = it->get<std::string>();
}
void Take(const json& j, const char* key, bool& out) {
  if (auto it = j.find(key); it != j.end() && it->is_boolean()) out = it->get<bool>();
}
template <typename Int>
void TakeInt(const json& j, const char* key, Int& out) {
  if (auto it = j.find(key); it != j.end() && it->is_number_integer()) out = it->get<Int>();
}
template <typename Int>
void TakeInt(const json& j, const char* key, std::optional<Int>& out) {
  if (auto it = j.find(key); it != j.end() && it->is_number_integer()) out = it->get<Int>();
}
// The objects of the array j[key], each read by its from_json; anything else is skipped.
template <typename T>
void TakeObjects(const json& j, const char* key, std::vector<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  for (const auto& one : *it) {
    if (one.is_object()) out.push_back(one.get<T>());
  }
}

}  // namespace

PoolAnswer PoolAnswer::Refused(std::string message, std::string code) {
  PoolAnswer a;
  a.message = std::move(message);
  a.code = std::move(code);
  return a;
}

Status PoolAnswer::AsStatus() const {
  if (ok) return Ok();
  std::string why = message.empty() ? std::string("refused") : message;
  if (why.starts_with("no capacity")) return Error::Backpressure(why);
  if (code == "not_found") return Error::NotFound(why);
  return Error::Conflict(why);
}

const SlotSnapshot* PoolSnapshot::FindSlot(const std::string& name) const {
  for (const auto& s : slots) {
    if (s.slot == name) return &s;
  }
  return nullptr;
}

const PoolAnswer* PoolSnapshot::FindAnswer(const std::string& id) const {
  auto it = results.find(id);
  return it == results.end() ? nullptr : &it->second;
}

void to_json(json& j, const CreateRequest& r) {
  j = {{"id", r.id}, {"args", r.args}, {"instructions", r.instructions}, {"workdir", r.workdir}};
}

void from_json(const json& j, CreateRequest& r) {
  r = {};
  Take(j, "id", r.id);
  if (auto it = j.find("args"); it != j.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_string()) r.args.push_back(a.get<std::string>());
    }
  }
  Take(j, "instructions", r.instructions);
  Take(j, "workdir", r.workdir);
}

void to_json(json& j, const RetireRequest& r) {
  j = {{"id", r.id}, {"slot", r.slot}, {"force", r.force}};
}

void from_json(const json& j, RetireRequest& r) {
  r = {};
  Take(j, "id", r.id);
  Take(j, "slot", r.slot);
  Take(j, "force", r.force);
}

void to_json(json& j, const PoolRequest& r) {
  j = json::object();
  if (r.workers) {
    j["workers"] = *r.workers;
    j["scale_id"] = r.scale_id;
  }
  if (!r.create.empty()) j["create"] = r.create;
  if (!r.retire.empty()) j["retire"] = r.retire;
  if (r.stop != PoolStop::kNone) j["stop"] = r.stop == PoolStop::kForce ? "force" : "graceful";
}

void from_json(const json& j, PoolRequest& r) {
  r = {};
  TakeInt(j, "workers", r.workers);
  Take(j, "scale_id", r.scale_id);
  TakeObjects(j, "create", r.create);
  TakeObjects(j, "retire", r.retire);
  if (auto it = j.find("stop"); it != j.end() && it->is_string()) {
    r.stop = *it == "force" ? PoolStop::kForce : PoolStop::kGraceful;
  }
}

void to_json(json& j, const PoolAnswer& a) {
  j = {{"ok", a.ok}};
  if (!a.message.empty()) j["message"] = a.message;
  if (!a.code.empty()) j["code"] = a.code;
  if (!a.slot.empty()) j["slot"] = a.slot;
  if (a.pid) j["pid"] = *a.pid;
  if (a.workers) j["workers"] = *a.workers;
}

void from_json(const json& j, PoolAnswer& a) {
  a = {};
  Take(j, "ok", a.ok);
  Take(j, "message", a.message);
  Take(j, "code", a.code);
  Take(j, "slot", a.slot);
  TakeInt(j, "pid", a.pid);
  TakeInt(j, "workers", a.workers);
}

void to_json(json& j, const SlotSnapshot& s) {
  j = {{"slot", s.slot},
       {"state", s.state},
       {"pid", s.pid},
       {"started_at", s.started_at},
       {"restarts", s.restarts},
       {"next_start_at", s.next_start_at},
       {"last_exit", s.last_exit},
       {"failure", s.failure}};
}

void from_json(const json& j, SlotSnapshot& s) {
  s = {};
  Take(j, "slot", s.slot);
  Take(j, "state", s.state);
  TakeInt(j, "pid", s.pid);
  TakeInt(j, "started_at", s.started_at);
  TakeInt(j, "restarts", s.restarts);
  TakeInt(j, "next_start_at", s.next_start_at);
  Take(j, "last_exit", s.last_exit);
  Take(j, "failure", s.failure);
}

void to_json(json& j, const PoolSnapshot& p) {
  j = {{"desired", p.desired},
       {"max_workers", p.max_workers},
       {"live", p.live},
       {"stopping", p.stopping},
       {"slots", p.slots},
       {"results", p.results},
       {"updated_at", p.updated_at}};
}

void from_json(const json& j, PoolSnapshot& p) {
  p = {};
  TakeInt(j, "desired", p.desired);
  TakeInt(j, "max_workers", p.max_workers);
  TakeInt(j, "live", p.live);
  Take(j, "stopping", p.stopping);
  TakeObjects(j, "slots", p.slots);
  if (auto it = j.find("results"); it != j.end() && it->is_object()) {
    for (const auto& [id, answer] : it->items()) {
      if (answer.is_object()) p.results[id] = answer.get<PoolAnswer>();
    }
  }
  TakeInt(j, "updated_at", p.updated_at);
}

}  // namespace tx
