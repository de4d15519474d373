#include "core/json.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <type_traits>

#include "core/duration.h"

namespace tx {

namespace {

nlohmann::json Time(Millis t) { return t > 0 ? nlohmann::json(FormatTime(t)) : nlohmann::json(); }
std::optional<std::string> WhenSet(Millis t) {
  return t > 0 ? std::optional<std::string>(FormatTime(t)) : std::nullopt;
}

// A claim's and a task's wire fields, listed once for the two forms below: a json object (built
// by emplace: nlohmann's initializer-list form copies every value and checks every pair's shape
// first) and JSON text written directly (an add's reply: building the object, dumping it and
// freeing it was a third of the add's work in `tx serve`).
template <typename Out>
void ClaimFields(const Claim& c, Out& out) {
  out("n", c.attempt);
  out("token", c.token);
  out("task_id", c.task_id);
  out("worker_id", c.worker_id);
  out("status", ToString(c.status));
  out("started_at", WhenSet(c.claimed_at));
  out("lease_expires_at", WhenSet(c.lease_expires_at));
  out("lease", FormatDuration(c.lease_ms));
  out("renewed_count", c.renewed_count);
  out("ended_at", WhenSet(c.ended_at));
  out("end_reason", c.end_reason == EndReason::kNone
                        ? std::nullopt
                        : std::optional<std::string_view>(ToString(c.end_reason)));
  out("exit_code", c.exit_code);
}

// Every field but "attempts".
template <typename Out>
void TaskFields(const Task& t, Out& out) {
  out("id", t.id);
  out("status", ToString(t.status));
  out("title", t.title);
  out("description", t.description);
  out("instructions", t.instructions);
  out("deliverables", t.deliverables);
  out("steps", t.steps);
  out("priority", t.priority);
  out("queue", t.queue);
  out("requires", t.requires_caps);
  out("after", t.after);
  out("owner", t.owner);
  out("workdir", t.workdir);
  out("command", t.command);
  out("agent", t.agent);
  out("timeout", FormatDuration(t.timeout_ms));
  out("attempt", t.attempt);
  out("max_attempts", t.max_attempts);
  out("review", t.review);
  out("repo", t.repo);
  out("base", t.base_branch);
  out("metadata", t.metadata);
  out("result", t.result);
  out("error", t.error);
  out("run_after", WhenSet(t.run_after));
  out("created_at", WhenSet(t.created_at));
  out("updated_at", WhenSet(t.updated_at));
  out("started_at", WhenSet(t.started_at));
  out("finished_at", WhenSet(t.finished_at));
}

template <typename T>
constexpr bool kIsOptional = false;
template <typename T>
constexpr bool kIsOptional<std::optional<T>> = true;

struct ObjectOut {
  nlohmann::json& j;
  template <typename V>
  void operator()(const char* key, const V& v) {
    if constexpr (kIsOptional<V>) {
      j.emplace(key, v ? nlohmann::json(*v) : nlohmann::json());
    } else {
      j.emplace(key, v);
    }
  }
};

// The text nlohmann's dump() gives each value (json's own checks first: it converts to nearly
// anything).
template <typename V>
void AppendValue(std::string& s, const V& v) {
  if constexpr (std::is_same_v<V, nlohmann::json>) {
    s += v.dump();
  } else if constexpr (std::is_same_v<V, bool>) {
    s += v ? "true" : "false";
  } else if constexpr (std::is_integral_v<V>) {
    s += std::to_string(v);
  } else if constexpr (kIsOptional<V>) {
    if (v) {
      AppendValue(s, *v);
    } else {
      s += "null";
    }
  } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
    s += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) s += ',';
      AppendJsonString(s, v[i]);
    }
    s += ']';
  } else {
    static_assert(std::is_convertible_v<const V&, std::string_view>,
                  "a value JSON has no text for");
    AppendJsonString(s, v);
  }
}

// Writes into an object whose '{' is already in `s`.
struct TextOut {
  std::string& s;
  template <typename V>
  void operator()(const char* key, const V& v) {
    s += s.back() == '{' ? "\"" : ",\"";
    s += key;
    s += "\":";
    AppendValue(s, v);
  }
};

}  // namespace

nlohmann::json ToJson(const Claim& c) {
  nlohmann::json j = nlohmann::json::object();
  ObjectOut out{j};
  ClaimFields(c, out);
  return j;
}

nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : attempts) a.push_back(ToJson(c));
  nlohmann::json j = nlohmann::json::object();
  ObjectOut out{j};
  TaskFields(t, out);
  j.emplace("attempts", std::move(a));
  return j;
}

std::string ToJsonText(const Task& t, const std::vector<Claim>& attempts) {
  std::string s;
  s.reserve(1024 + 256 * attempts.size());  // a task without long texts, grown once at most
  s += '{';
  TextOut out{s};
  TaskFields(t, out);
  s += ",\"attempts\":[";
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    s += i > 0 ? ",{" : "{";
    TextOut claim{s};
    ClaimFields(attempts[i], claim);
    s += '}';
  }
  s += "]}";
  return s;
}

nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts,
                      const std::vector<AttemptUsage>& usage) {
  nlohmann::json j = ToJson(t, attempts);
  UsageTotal total;
  for (auto& a : j["attempts"]) {
    a["usage"] = nullptr;
    for (const auto& u : usage) {
      if (u.token == a["token"].get<std::int64_t>()) {
        a["usage"] = ToJson(u);
        total.Add(u);
      }
    }
  }
  j["usage"] = total.attempts > 0 ? ToJson(total) : nlohmann::json();
  return j;
}

nlohmann::json ToJson(const Worker& w, const Moment& now) {
  return {
      {"id", w.id},
      {"name", w.name},
      {"slot", w.slot},
      {"pool", w.pool},
      {"hostname", w.hostname},
      {"pid", w.pid},
      {"status", ToString(w.status)},
      {"stale", IsLive(w.status) && IsStale(w, now)},
      {"capabilities", w.capabilities},
      {"queues", w.queues},
      {"heartbeat_interval", FormatDuration(w.heartbeat_interval_ms)},
      {"busy_heartbeat_interval", FormatDuration(BusyIntervalMs(w))},
      {"registered_at", Time(w.registered_at)},
      {"last_heartbeat_at", Time(w.last_heartbeat_at)},
      {"heartbeat_age_ms", w.last_heartbeat_at > 0 && now > 0
                               ? nlohmann::json(now - w.last_heartbeat_at)
                               : nlohmann::json()},
      {"current_task_id",
       w.current_task_id.empty() ? nlohmann::json() : nlohmann::json(w.current_task_id)},
      {"reason", w.reason},
      {"request",
       w.request == WorkerRequest::kNone ? nlohmann::json() : nlohmann::json(ToString(w.request))},
      {"metadata", w.metadata},
  };
}

bool PlainJsonString(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

void AppendJsonString(std::string& out, std::string_view s) {
  if (PlainJsonString(s)) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(s)).dump();
}

nlohmann::json HeartbeatDocument(const std::vector<Worker>& workers,
                                 const std::map<std::string, std::string>& titles) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& w : workers) {
    std::string key = w.slot.empty() ? w.name : w.slot;
    if (out.contains(key)) continue;  // an older registration of the same slot
    bool live = IsLive(w.status);
    bool working = live && !w.current_task_id.empty();
    auto meta_int = [&](const char* field) -> nlohmann::json {
      auto it = w.metadata.find(field);
      return it != w.metadata.end() && it->is_number_integer() ? *it : nlohmann::json(0);
    };
    nlohmann::json meta = {{"workerPid", live ? nlohmann::json(w.pid) : nlohmann::json()},
                           {"workerVersion", "0.1.0"},
                           {"restartCount", meta_int("restart_count")},
                           {"workerId", w.id}};
    if (working) meta["agentPid"] = meta_int("agent_pid");
    if (!live) meta["offlineReason"] = w.reason;
    auto title = titles.find(w.current_task_id);
    out[key] = {
        {"slot", key},
        {"status", !live     ? "offline"
                   : working ? "working"
                             : "idle"},
        {"task", working ? nlohmann::json(w.current_task_id) : nlohmann::json()},
        {"taskTitle",
         working && title != titles.end() ? nlohmann::json(title->second) : nlohmann::json()},
        {"sessionId",
         working ? nlohmann::json("tx:" + w.id + ":" + w.current_task_id) : nlohmann::json()},
        {"lastUpdate", w.last_heartbeat_at},
        {"startedAt", w.registered_at},
        {"metadata", meta},
    };
  }
  return {{"workers", out}};
}

nlohmann::json ToJson(const Event& e) {
  return {
      {"id", e.id},
      {"type", e.type},
      {"at", Time(e.at)},
      {"task_id", e.task_id.empty() ? nlohmann::json() : nlohmann::json(e.task_id)},
      {"worker_id", e.worker_id.empty() ? nlohmann::json() : nlohmann::json(e.worker_id)},
      {"data", e.data},
  };
}

std::string ToJsonText(const StoredEvent& e) {
  // dump() writes an object's keys sorted.
  std::string s = "{\"at\":";
  AppendValue(s, WhenSet(e.at));
  s += ",\"data\":";
  bool object = !e.data.empty() && e.data.front() == '{' && nlohmann::json::accept(e.data);
  s += object ? std::string_view(e.data) : std::string_view("{}");
  s += ",\"id\":";
  s += std::to_string(e.id);
  s += ",\"task_id\":";
  AppendValue(s, e.task_id.empty() ? std::nullopt : std::optional<std::string>(e.task_id));
  s += ",\"type\":";
  AppendJsonString(s, e.type);
  s += ",\"worker_id\":";
  AppendValue(s, e.worker_id.empty() ? std::nullopt : std::optional<std::string>(e.worker_id));
  s += '}';
  return s;
}

nlohmann::json ToJson(const ReconcileReport& r) {
  return {
      {"dead_workers", r.dead_workers},       {"expired_leases", r.expired_leases},
      {"orphaned_tasks", r.orphaned_tasks},   {"inconsistencies_fixed", r.inconsistencies_fixed},
      {"overdue_reviews", r.overdue_reviews}, {"expired_questions", r.expired_questions},
      {"agents_resumed", r.agents_resumed},   {"at", Time(r.at)},
  };
}

namespace {

// Reads typed fields out of one JSON object, stopping at the first that is missing or mistyped.
class Reader {
 public:
  Reader(const nlohmann::json& j, const char* what) : j_(j), what_(what) {
    if (!j.is_object()) status_ = Error::InvalidArgument(std::string(what) + ": not an object");
  }
  Status status() const { return status_; }

  void Str(const char* key, std::string& out, bool null_ok = false) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (null_ok && v->is_null()) return;
    if (!v->is_string()) return Bad(key, "a string");
    out = v->get<std::string>();
  }
  template <typename T>
  void Int(const char* key, T& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return Bad(key, "an integer");
    out = v->get<T>();
  }
  void Number(const char* key, double& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_number()) return Bad(key, "a number");
    out = v->get<double>();
  }
  void Array(const char* key, nlohmann::json& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Bad(key, "an array");
    out = *v;
  }
  void Bool(const char* key, bool& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Bad(key, "true or false");
    out = v->get<bool>();
  }
  void Strs(const char* key, std::vector<std::string>& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Bad(key, "an array of strings");
    out.clear();
    for (const auto& x : *v) {
      if (!x.is_string()) return Bad(key, "an array of strings");
      out.push_back(x.get<std::string>());
    }
  }
  void Object(const char* key, nlohmann::json& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_object()) return Bad(key, "an object");
    out = *v;
  }
  // An ISO time, or null for 0.
  void Time(const char* key, Millis& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (v->is_null()) {
      out = 0;
      return;
    }
    if (!v->is_string()) return Bad(key, "a time or null");
    Result<Millis> t = ParseTime(v->get<std::string>());
    if (!t.ok()) return Bad(key, "an ISO-8601 time");
    out = *t;
  }
  void Duration(const char* key, Millis& out) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    Result<Millis> d = v->is_string() ? ParseDuration(v->get<std::string>())
                                      : Result<Millis>(Error::InvalidArgument(""));
    if (!d.ok()) return Bad(key, "a duration");
    out = *d;
  }
  // A name parsed by `parse`, or null for `none` when `none` is given.
  template <typename T, typename Parse>
  void Enum(const char* key, T& out, Parse parse, std::optional<T> none = std::nullopt) {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return;
    if (v->is_null() && none) {
      out = *none;
      return;
    }
    if (!v->is_string()) return Bad(key, "a name");
    auto r = parse(v->get<std::string>());
    if (!r.ok()) return Bad(key, "a known name");
    out = *r;
  }

 private:
  const nlohmann::json* Find(const char* key) {
    if (!status_.ok()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end()) {
      status_ = Error::InvalidArgument(std::string(what_) + ": field '" + key + "' is missing");
      return nullptr;
    }
    return &*it;
  }
  void Bad(const char* key, const char* want) {
    status_ = Error::InvalidArgument(std::string(what_) + ": field '" + key + "' must be " + want);
  }

  const nlohmann::json& j_;
  const char* what_;
  Status status_;
};

}  // namespace

Result<Claim> ClaimFromJson(const nlohmann::json& j) {
  Claim c;
  Reader r(j, "claim");
  r.Int("n", c.attempt);
  r.Int("token", c.token);
  r.Str("task_id", c.task_id);
  r.Str("worker_id", c.worker_id);
  r.Enum("status", c.status, ParseClaimStatus);
  r.Time("started_at", c.claimed_at);
  r.Time("lease_expires_at", c.lease_expires_at);
  r.Duration("lease", c.lease_ms);
  r.Int("renewed_count", c.renewed_count);
  r.Time("ended_at", c.ended_at);
  r.Enum("end_reason", c.end_reason, ParseEndReason, std::optional(EndReason::kNone));
  TX_RETURN_IF_ERROR(r.status());
  if (auto it = j.find("exit_code"); it != j.end() && it->is_number_integer()) {
    c.exit_code = it->get<int>();
  }
  return c;
}

Result<AttemptUsage> UsageFromJson(const nlohmann::json& j) {
  AttemptUsage u;
  Reader r(j, "usage");
  r.Int("token", u.token);
  r.Str("task_id", u.task_id);
  r.Int("attempt", u.attempt);
  r.Str("worker_id", u.worker_id);
  r.Str("agent", u.agent);
  r.Str("account", u.account);
  r.Str("queue", u.queue);
  r.Str("session_id", u.session_id, true);
  r.Str("model", u.model, true);
  nlohmann::json tokens = nlohmann::json::object();
  r.Object("tokens", tokens);
  r.Number("cost_usd", u.cost_usd);
  r.Bool("cost_estimated", u.cost_estimated);
  r.Int("turns", u.turns);
  r.Array("permission_denials", u.denials);
  r.Time("started_at", u.started_at);
  r.Time("updated_at", u.updated_at);
  TX_RETURN_IF_ERROR(r.status());
  Reader t(tokens, "usage.tokens");
  t.Int("input", u.tokens.input);
  t.Int("output", u.tokens.output);
  t.Int("cache_read", u.tokens.cache_read);
  t.Int("cache_write", u.tokens.cache_write);
  TX_RETURN_IF_ERROR(t.status());
  if (u.cost_usd < 0 || u.turns < 0 || u.tokens.input < 0 || u.tokens.output < 0 ||
      u.tokens.cache_read < 0 || u.tokens.cache_write < 0) {
    return Error::InvalidArgument("usage: counts and costs cannot be negative");
  }
  if (!(u.cost_usd <= kMaxCostUsd) || u.turns > 1'000'000 || u.tokens.input > kMaxTokens ||
      u.tokens.output > kMaxTokens || u.tokens.cache_read > kMaxTokens ||
      u.tokens.cache_write > kMaxTokens) {
    return Error::InvalidArgument("usage: a count or cost past what any attempt can use");
  }
  return u;
}

Result<AgentLimit> LimitFromJson(const nlohmann::json& j) {
  AgentLimit l;
  Reader r(j, "limit");
  r.Str("agent", l.profile);
  r.Str("account", l.account);
  r.Time("until", l.until);
  r.Time("since", l.since);
  r.Str("reason", l.reason);
  r.Str("task_id", l.task_id, true);
  r.Int("strikes", l.strikes);
  r.Bool("resumed", l.resumed);
  TX_RETURN_IF_ERROR(r.status());
  return l;
}

Result<Task> TaskFromJson(const nlohmann::json& j) {
  Task t;
  Reader r(j, "task");
  r.Str("id", t.id);
  r.Enum("status", t.status, ParseTaskStatus);
  r.Str("title", t.title);
  r.Str("description", t.description);
  r.Str("instructions", t.instructions);
  r.Str("deliverables", t.deliverables);
  r.Strs("steps", t.steps);
  r.Int("priority", t.priority);
  r.Str("queue", t.queue);
  r.Strs("requires", t.requires_caps);
  r.Strs("after", t.after);
  r.Str("owner", t.owner);
  r.Str("workdir", t.workdir);
  r.Strs("command", t.command);
  r.Str("agent", t.agent);
  r.Duration("timeout", t.timeout_ms);
  r.Int("attempt", t.attempt);
  r.Int("max_attempts", t.max_attempts);
  r.Bool("review", t.review);
  r.Str("repo", t.repo);
  r.Str("base", t.base_branch);
  r.Object("metadata", t.metadata);
  r.Str("result", t.result);
  r.Str("error", t.error);
  r.Time("run_after", t.run_after);
  r.Time("created_at", t.created_at);
  r.Time("updated_at", t.updated_at);
  r.Time("started_at", t.started_at);
  r.Time("finished_at", t.finished_at);
  TX_RETURN_IF_ERROR(r.status());
  return t;
}

Result<Worker> WorkerFromJson(const nlohmann::json& j) {
  Worker w;
  Reader r(j, "worker");
  r.Str("id", w.id);
  r.Str("name", w.name);
  r.Str("slot", w.slot);
  r.Str("pool", w.pool);
  r.Str("hostname", w.hostname);
  r.Int("pid", w.pid);
  r.Enum("status", w.status, ParseWorkerStatus);
  r.Strs("capabilities", w.capabilities);
  r.Strs("queues", w.queues);
  r.Duration("heartbeat_interval", w.heartbeat_interval_ms);
  r.Duration("busy_heartbeat_interval", w.busy_heartbeat_interval_ms);
  r.Time("registered_at", w.registered_at);
  r.Time("last_heartbeat_at", w.last_heartbeat_at);
  r.Str("current_task_id", w.current_task_id, true);
  r.Str("reason", w.reason);
  r.Enum("request", w.request, ParseWorkerRequest, std::optional(WorkerRequest::kNone));
  r.Object("metadata", w.metadata);
  TX_RETURN_IF_ERROR(r.status());
  return w;
}

}  // namespace tx
