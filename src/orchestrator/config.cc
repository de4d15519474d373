#include "orchestrator/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/duration.h"
#include "core/toml_text.h"
#include "core/validation.h"

namespace tx::orchestrator {
namespace {

// [orchestrator] is read strictly: an integer as an integer (TomlTyping::kStrict).
TomlTable Section(const toml::table& t, const std::string& prefix, const std::string& origin) {
  return TomlTable(t, "orchestrator." + prefix, origin, TomlTyping::kStrict);
}

template <typename T>
Status Count(TomlTable& t, const std::string& key, int lo, int hi, T& out) {
  return t.Integer(key, lo, hi, out,
                   "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
}

Status Dur(TomlTable& t, const std::string& key, Millis& out) {
  if (t.Find(key) == nullptr) return Ok();
  std::string v;
  TX_RETURN_IF_ERROR(t.String(key, v, "a duration such as \"30s\""));
  Result<Millis> d = ParseDuration(v);
  if (!d.ok()) return t.Bad(key, d.error().message());
  if (*d <= 0) return t.Bad(key, "must be positive");
  out = *d;
  return Ok();
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

Status ApplySlots(TomlTable& section, const toml::table& slots, OrchestratorConfig& c) {
  for (const auto& [key, node] : slots) {
    std::string slot(key.str());
    TX_RETURN_IF_ERROR(ValidateName("slot", slot));
    const toml::table* t = node.as_table();
    if (t == nullptr) return section.Bad("slots." + slot, "must be a table");
    TomlTable one = Section(*t, "slots." + slot + ".", section.origin());
    std::vector<std::string> args;
    for (const auto& [k, v] : *t) {
      std::string name(k.str());
      if (name == "agent") {
        std::string agent;
        TX_RETURN_IF_ERROR(one.String(name, agent));
        if (agent.empty()) return one.Bad(name, "must be a string");
        args.insert(args.end(), {"--agent", agent});
      } else if (name == "capabilities" || name == "queues") {
        std::vector<std::string> list;
        TX_RETURN_IF_ERROR(one.Strings(name, list, "a list of strings"));
        if (list.empty()) return one.Bad(name, "must not be empty");
        args.insert(args.end(), {"--" + name, Join(list)});
      } else {
        return one.Bad(name, "is not a known key (agent, capabilities, queues)");
      }
    }
    c.slot_args[slot] = std::move(args);
  }
  return Ok();
}

}  // namespace

std::vector<std::string> MergeWorkerArgs(const std::vector<std::string>& pool,
                                         const std::vector<std::string>& own) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < pool.size(); i += 2) {
    bool replaced = false;
    for (std::size_t j = 0; j < own.size(); j += 2) replaced = replaced || own[j] == pool[i];
    if (!replaced) out.insert(out.end(), {pool[i], pool[i + 1]});
  }
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

Status ApplyOrchestratorToml(const std::string& toml_text, const std::string& origin,
                             OrchestratorConfig& config) {
  TX_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(toml_text, origin));
  const toml::node* section = root.get("orchestrator");
  if (section == nullptr) return Ok();
  const toml::table* t = section->as_table();
  if (t == nullptr) return Error::InvalidArgument(origin + ": 'orchestrator' must be a table");
  OrchestratorConfig c = config;  // applied whole or not at all
  TomlTable o = Section(*t, "", origin);
  for (const auto& [key, node] : *t) {
    std::string k(key.str());
    if (k == "workers") {
      TX_RETURN_IF_ERROR(Count(o, k, 0, 10'000, c.workers));
    } else if (k == "max_workers") {
      TX_RETURN_IF_ERROR(Count(o, k, 1, 10'000, c.policy.max_workers));
    } else if (k == "max_restarts") {
      TX_RETURN_IF_ERROR(Count(o, k, 0, 1'000'000, c.policy.max_restarts));
    } else if (k == "max_queue_depth") {
      TX_RETURN_IF_ERROR(Count(o, k, 0, 1'000'000'000, c.max_queue_depth));
    } else if (k == "reconcile_interval") {
      TX_RETURN_IF_ERROR(Dur(o, k, c.reconcile_interval_ms));
    } else if (k == "review_timeout") {
      // "0s" turns the mark off; Dur refuses zero.
      if (node.value<std::string>() == std::optional<std::string>("0s")) {
        c.review_timeout_ms = 0;
      } else {
        TX_RETURN_IF_ERROR(Dur(o, k, c.review_timeout_ms));
      }
    } else if (k == "question_timeout") {
      // Off by default; "0s" turns it off again.
      if (node.value<std::string>() == std::optional<std::string>("0s")) {
        c.question_timeout_ms = 0;
      } else {
        TX_RETURN_IF_ERROR(Dur(o, k, c.question_timeout_ms));
      }
    } else if (k == "shutdown_timeout") {
      TX_RETURN_IF_ERROR(Dur(o, k, c.shutdown_timeout_ms));
    } else if (k == "restart_window") {
      TX_RETURN_IF_ERROR(Dur(o, k, c.policy.restart_window_ms));
    } else if (k == "max_backoff") {
      TX_RETURN_IF_ERROR(Dur(o, k, c.policy.backoff_max_ms));
    } else if (k == "capacity_timeout") {
      TX_RETURN_IF_ERROR(Dur(o, k, c.policy.capacity_timeout_ms));
    } else if (k == "log_format") {
      std::string v;
      TX_RETURN_IF_ERROR(o.String(k, v, "\"text\" or \"json\""));
      Result<log::LogFormat> f = log::ParseLogFormat(v, "'orchestrator.log_format'");
      if (!f.ok()) return Error::InvalidArgument(origin + ": " + f.error().message());
      c.log_format = *f;
    } else if (k == "log_max_mb") {
      double v = 0;
      TX_RETURN_IF_ERROR(o.Number(k, v, "a number of MB (0: no rotation)"));
      Result<std::uint64_t> bytes = log::MaxBytesOfMb(v, "'orchestrator.log_max_mb'");
      if (!bytes.ok()) return Error::InvalidArgument(origin + ": " + bytes.error().message());
      c.log_max_mb = v;
    } else if (k == "heartbeat_file") {
      TX_RETURN_IF_ERROR(o.String(k, c.heartbeat_file, "a string (a path)"));
    } else if (k == "slots") {
      const toml::table* slots = node.as_table();
      if (slots == nullptr) return o.Bad(k, "must be a table of slots");
      TX_RETURN_IF_ERROR(ApplySlots(o, *slots, c));
    } else {
      return o.Bad(k, "is not a known key");
    }
  }
  config = std::move(c);
  return Ok();
}

Status ApplyOrchestratorFile(const std::string& path, OrchestratorConfig& config) {
  std::ifstream in(path);
  if (!in) return Ok();
  std::stringstream buf;
  buf << in.rdbuf();
  return ApplyOrchestratorToml(buf.str(), path, config);
}

bool ConfigReload::Changed(const std::string& key) const {
  return std::find(applied.begin(), applied.end(), key) != applied.end();
}

ConfigReload ReloadConfig(OrchestratorConfig& running, const OrchestratorConfig& fresh) {
  ConfigReload r;
  auto say = [&](const std::string& key, const std::string& what) {
    r.applied.push_back(key);
    r.summary += (r.summary.empty() ? "" : ", ") + key + (what.empty() ? "" : " " + what);
  };
  auto count = [&](const char* key, auto& now, const auto& then) {
    if (now == then) return;
    say(key, std::to_string(now) + " → " + std::to_string(then));
    now = then;
  };
  // 0 is "off" for the timeouts that may be off.
  auto duration = [&](const char* key, Millis& now, Millis then) {
    if (now == then) return;
    auto text = [](Millis ms) { return ms == 0 ? std::string("off") : FormatDuration(ms); };
    say(key, text(now) + " → " + text(then));
    now = then;
  };
  count("workers", running.workers, fresh.workers);
  count("max_workers", running.policy.max_workers, fresh.policy.max_workers);
  count("max_restarts", running.policy.max_restarts, fresh.policy.max_restarts);
  duration("restart_window", running.policy.restart_window_ms, fresh.policy.restart_window_ms);
  duration("max_backoff", running.policy.backoff_max_ms, fresh.policy.backoff_max_ms);
  duration("capacity_timeout", running.policy.capacity_timeout_ms,
           fresh.policy.capacity_timeout_ms);
  duration("reconcile_interval", running.reconcile_interval_ms, fresh.reconcile_interval_ms);
  duration("review_timeout", running.review_timeout_ms, fresh.review_timeout_ms);
  duration("question_timeout", running.question_timeout_ms, fresh.question_timeout_ms);
  count("max_queue_depth", running.max_queue_depth, fresh.max_queue_depth);
  if (running.heartbeat_file != fresh.heartbeat_file) {
    say("heartbeat_file", fresh.heartbeat_file.empty() ? "off" : fresh.heartbeat_file);
    running.heartbeat_file = fresh.heartbeat_file;
  }
  if (running.slot_args != fresh.slot_args) {
    say("slots", "(for the workers started from now on)");
    running.slot_args = fresh.slot_args;
  }
  if (running.log_format != fresh.log_format) {
    say("log_format", std::string(log::LogFormatName(running.log_format)) + " → " +
                          log::LogFormatName(fresh.log_format));
    running.log_format = fresh.log_format;
  }
  if (running.log_max_mb != fresh.log_max_mb) {
    say("log_max_mb", log::FormatMb(running.log_max_mb) + " → " + log::FormatMb(fresh.log_max_mb));
    running.log_max_mb = fresh.log_max_mb;
  }
  if (running.notify != fresh.notify) {
    std::size_t n = fresh.notify.size();
    std::string sinks = std::to_string(n) + (n == 1 ? " sink" : " sinks");
    say("notify", "(" + sinks + ")");
    running.notify = fresh.notify;
  }
  if (running.shutdown_timeout_ms != fresh.shutdown_timeout_ms) {
    r.at_restart.push_back("shutdown_timeout");
  }
  return r;
}

std::vector<std::string> WorkerLogArgs(const OrchestratorConfig& config, const std::string& slot) {
  return {"--log-file",   config.worker_log_path(slot),
          "--log-max-mb", log::FormatMb(config.log_max_mb),
          "--log-format", log::LogFormatName(config.log_format)};
}

nlohmann::json ConfigJson(const OrchestratorConfig& c) {
  return {{"workers", c.workers},
          {"max_workers", c.policy.max_workers},
          {"max_restarts", c.policy.max_restarts},
          {"restart_window_ms", c.policy.restart_window_ms},
          {"max_backoff_ms", c.policy.backoff_max_ms},
          {"capacity_timeout_ms", c.policy.capacity_timeout_ms},
          {"reconcile_interval_ms", c.reconcile_interval_ms},
          {"shutdown_timeout_ms", c.shutdown_timeout_ms},
          {"review_timeout_ms", c.review_timeout_ms},
          {"question_timeout_ms", c.question_timeout_ms},
          {"max_queue_depth", c.max_queue_depth},
          {"heartbeat_file", c.heartbeat_file},
          {"log_format", log::LogFormatName(c.log_format)},
          {"log_max_mb", c.log_max_mb},
          {"http", c.http},
          {"worker_args", c.worker_args}};
}

}  // namespace tx::orchestrator
