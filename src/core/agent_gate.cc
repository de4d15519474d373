#include "core/agent_gate.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/argv.h"

namespace tx {
namespace {

// One option of a command an agent may give: its name, whether it takes a value, and whether
// that value must be the agent's own (task id or token).
enum class Own { kNo, kTask, kToken };
struct AgentOption {
  std::string_view name;
  bool takes_value;
  Own own = Own::kNo;
};

struct AgentCommand {
  std::string_view verb;  // after "task"
  // The first positional argument: the task's id (filled in when left out), or text it needs.
  enum class Positional { kTaskId, kText } positional;
  std::vector<AgentOption> options;
};

// A subtask may not name where or how it runs (--workdir, --repo, --command, --owner,
// --metadata ...); it may name its queue and needs, as any task does.
const std::array<AgentCommand, 7>& Commands() {
  static const std::array<AgentCommand, 7> kCommands = {{
      {"show", AgentCommand::Positional::kTaskId, {}},
      {"done",
       AgentCommand::Positional::kTaskId,
       {{"--result", true}, {"--error", true}, {"--token", true, Own::kToken}}},
      {"fail",
       AgentCommand::Positional::kTaskId,
       {{"--result", true}, {"--error", true}, {"--token", true, Own::kToken}}},
      {"review",
       AgentCommand::Positional::kTaskId,
       {{"--result", true}, {"--error", true}, {"--token", true, Own::kToken}}},
      {"ask",
       AgentCommand::Positional::kText,
       {{"--task", true, Own::kTask}, {"--token", true, Own::kToken}}},
      {"note",
       AgentCommand::Positional::kText,
       {{"--task", true, Own::kTask}, {"--token", true, Own::kToken}}},
      {"add",
       AgentCommand::Positional::kText,
       {{"--description", true},
        {"--instructions", true},
        {"--deliverables", true},
        {"--step", true},
        {"--priority", true},
        {"--queue", true},
        {"--requires", true},
        {"--after", true},
        {"--agent", true},
        {"--budget-usd", true},
        {"--timeout", true},
        {"--max-attempts", true},
        {"--review", false}}},
  }};
  return kCommands;
}

bool IsHelp(std::string_view a) { return a == "--help" || a == "-h"; }

Error Refused(const std::string& why) {
  return Error::InvalidArgument(why +
                                " (an agent's tx acts on its own task only: docs/sandbox.md)");
}

}  // namespace

Result<std::vector<std::string>> GateAgentCommand(const std::vector<std::string>& args,
                                                  const AgentIdentity& agent) {
  std::vector<std::string> out;
  std::size_t i = 0;
  // Global options before the command: --json alone.
  for (; i < args.size() && args[i].starts_with("-"); ++i) {
    if (args[i] == "--json" || IsHelp(args[i]) || args[i] == "--version") {
      out.push_back(args[i]);
      continue;
    }
    return Refused("'" + args[i] + "' is not for an agent");
  }
  if (i == args.size()) {
    if (!out.empty()) return out;  // tx --help, tx --version
    return Error::InvalidArgument("no command given (see tx --help)");
  }
  std::string group = args[i++];
  std::string verb = i < args.size() ? args[i++] : "";
  std::string name = group + "." + verb;
  const AgentCommand* command = nullptr;
  if (group == "task") {
    for (const auto& c : Commands()) {
      if (c.verb == verb) command = &c;
    }
  }
  if (command == nullptr) {
    return Refused("'tx " + group + (verb.empty() ? "" : " " + verb) + "' is not for an agent");
  }
  if (!agent.allow_list.empty() && !IsAllowed(name, agent.allow_list)) {
    return Refused("'tx " + group + " " + verb +
                   "' is not allowed here: the worker's allowed_commands=" + agent.allow_list);
  }
  out.push_back(group);
  out.push_back(verb);
  std::optional<std::string> positional;
  std::vector<std::string> rest;
  bool only_positionals = false;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || !a.starts_with("-") || a == "-") {
      if (positional) return Refused("unexpected argument '" + a + "'");
      positional = a;
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (IsHelp(a) || a == "--json") {
      rest.push_back(a);
      continue;
    }
    std::string flag = a;
    std::optional<std::string> value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    auto known = std::find_if(command->options.begin(), command->options.end(),
                              [&](const AgentOption& o) { return o.name == flag; });
    if (known == command->options.end()) {
      return Refused("'" + flag + "' is not for an agent's 'tx task " + verb + "'");
    }
    if (!known->takes_value) {
      if (value) return Refused("'" + flag + "' takes no value");
      rest.push_back(flag);
      continue;
    }
    if (!value) {
      if (i + 1 == args.size()) return Error::InvalidArgument(flag + " needs a value");
      value = args[++i];
    }
    if (known->own == Own::kTask && *value != agent.task_id) {
      return Refused("task " + *value + " is not this agent's (" + agent.task_id + ")");
    }
    if (known->own == Own::kToken && *value != agent.token) {
      return Refused("token " + *value + " is not this agent's claim's");
    }
    rest.push_back(flag);
    rest.push_back(*value);
  }
  if (command->positional == AgentCommand::Positional::kTaskId) {
    if (positional && *positional != agent.task_id) {
      return Refused("task " + *positional + " is not this agent's (" + agent.task_id + ")");
    }
    out.push_back(agent.task_id);
  }
  out.insert(out.end(), rest.begin(), rest.end());
  // A subtask runs in its parent's sandbox at least: else an agent could escape its own.
  if (verb == "add" && !agent.sandbox.empty()) {
    out.push_back("--sandbox");
    out.push_back(agent.sandbox);
  }
  // After "--", so that a text beginning with '-' stays text.
  if (command->positional == AgentCommand::Positional::kText && positional) {
    out.push_back("--");
    out.push_back(*positional);
  }
  return out;
}

std::string EncodeAgentRequest(const AgentRequest& request) {
  // Bytes that are not UTF-8 (a log pasted into --result) are replaced, not refused.
  return nlohmann::json{{"args", request.args}, {"key", request.key}}.dump(
             -1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

Result<AgentRequest> DecodeAgentRequest(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("args") || !j["args"].is_array()) {
    return Error::InvalidArgument("a request must be {\"args\": [strings], \"key\": string}");
  }
  AgentRequest request;
  for (const auto& a : j["args"]) {
    if (!a.is_string()) return Error::InvalidArgument("a request's args must be strings");
    request.args.push_back(a.get<std::string>());
  }
  if (j.contains("key")) {
    if (!j["key"].is_string()) return Error::InvalidArgument("a request's key must be a string");
    request.key = j["key"].get<std::string>();
  }
  return request;
}

std::string EncodeAgentReply(const AgentReply& reply) {
  // Invalid UTF-8 in a command's output is replaced, not refused.
  return nlohmann::json{{"exit_code", reply.exit_code}, {"out", reply.out}, {"err", reply.err}}
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

Result<AgentReply> DecodeAgentReply(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.value("exit_code", nlohmann::json()).is_number_integer()) {
    return Error::Unavailable("the worker's reply is not one it sends");
  }
  AgentReply r;
  r.exit_code = j["exit_code"].get<int>();
  for (auto [key, field] : {std::pair{"out", &r.out}, std::pair{"err", &r.err}}) {
    if (j.contains(key) && j[key].is_string()) *field = j[key].get<std::string>();
  }
  return r;
}

}  // namespace tx
