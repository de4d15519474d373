#include "agent/profile.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/agent.h"
#include "core/validation.h"

namespace tx::agent {

namespace {
constexpr std::array<std::string_view, 4> kFamilies = {"generic", "claude", "codex", "aider"};
}  // namespace

std::string_view ToString(Family f) { return kFamilies[static_cast<std::size_t>(f)]; }

Result<Family> ParseFamily(std::string_view name) {
  for (std::size_t i = 0; i < kFamilies.size(); ++i) {
    if (kFamilies[i] == name) return static_cast<Family>(i);
  }
  return Error::InvalidArgument("unknown adapter '" + std::string(name) +
                                "' (known: claude, codex, aider, generic)");
}

std::map<std::string, AgentProfile> BuiltInProfiles() {
  std::map<std::string, AgentProfile> out;
  auto add = [&](std::string name, Family family, std::vector<std::string> argv) {
    AgentProfile p;
    p.name = name;
    p.family = family;
    p.argv = std::move(argv);
    out[name] = std::move(p);
  };
  // Headless Claude Code: the prompt right after -p (--allowedTools takes several values, so it
  // comes last); stream-json (which needs --verbose) for the live log, the ledger and limits;
  // file edits in its working directory accepted, and `tx ...` (how it reports; what it may do
  // with tx is the worker's allowed_commands) allowed, without a prompt. Everything else it
  // would ask for is refused and recorded as a denial.
  add("claude", Family::kClaude,
      {"claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose",
       "--permission-mode", "acceptEdits", "--allowedTools", "Bash(tx:*)"});
  // Codex: JSON lines; a sandbox that may write its workspace (exec's default is read-only)
  // and reach the network (a remote worker's tx talks to its server); commands run without a
  // login shell, whose profile would reset the PATH that leads to tx; outside a git repository
  // too; and a run that cannot reach its API gives up instead of waiting for ever. (The worker
  // adds the store's directory to the writable ones: spawn_plan.h.)
  add("codex", Family::kCodex,
      {"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "-c",
       "sandbox_workspace_write.network_access=true", "-c", "allow_login_shell=false", "--disable",
       "unbounded_connection_retries", "{prompt}"});
  // Aider: one message and exit, every question answered yes, plain output, nothing fetched or
  // opened on its own.
  add("aider", Family::kAider,
      {"aider", "--yes-always", "--no-pretty", "--no-stream", "--no-fancy-input",
       "--no-check-update", "--no-show-release-notes", "--analytics-disable", "--message",
       "{prompt}"});
  add("generic", Family::kGeneric, {"agent", "{prompt}"});
  return out;
}

bool ProgramCheckableAhead(const AgentProfile& profile) {
  if (profile.argv.empty()) return false;
  const std::string& program = profile.argv[0];
  if (program.find('{') != std::string::npos) return false;
  if (program.find('/') != std::string::npos && program.front() != '/') return false;
  for (const auto& account : profile.accounts) {
    for (const auto& e : account.env) {
      if (e.starts_with("PATH=")) return false;
    }
  }
  return true;
}

std::vector<std::string> ResumeTemplate(const AgentProfile& p) {
  if (!p.resume_argv.empty()) return p.resume_argv;
  std::vector<std::string> argv = p.argv;
  switch (p.family) {
    case Family::kClaude:
      if (argv.empty()) return {};
      argv.insert(argv.begin() + 1, {"--resume", "{session_id}"});
      return argv;
    case Family::kCodex: {
      // codex exec [OPTIONS] resume SESSION_ID PROMPT: the options stay before `resume`.
      auto exec = std::find(argv.begin(), argv.end(), "exec");
      auto prompt = std::find(argv.begin(), argv.end(), "{prompt}");
      if (exec == argv.end() || prompt == argv.end()) return {};
      argv.erase(prompt);
      argv.push_back("resume");
      argv.push_back("{session_id}");
      argv.push_back("{prompt}");
      return argv;
    }
    case Family::kAider:
    case Family::kGeneric:
      break;
  }
  return {};
}

std::string ModelOf(Family family, const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if ((a == "-m" || a == "--model") && i + 1 < argv.size()) return argv[i + 1];
    if (a.rfind("--model=", 0) == 0) return a.substr(8);
    if ((a == "-c" || a == "--config") && i + 1 < argv.size() &&
        argv[i + 1].rfind("model=", 0) == 0) {
      std::string m = argv[i + 1].substr(6);
      if (m.size() >= 2 && m.front() == '"' && m.back() == '"') m = m.substr(1, m.size() - 2);
      return m;
    }
  }
  return family == Family::kCodex ? "gpt-5-codex" : "";
}

std::vector<std::string> WithMcpServer(Family family, std::vector<std::string> argv,
                                       const std::string& tx,
                                       const std::vector<std::string>& env_names) {
  if (argv.empty()) return argv;
  const std::string server = kMcpServerName;
  if (family == Family::kClaude) {
    nlohmann::json config = {
        {"mcpServers", {{server, {{"command", tx}, {"args", nlohmann::json::array({"mcp"})}}}}}};
    argv.insert(argv.begin() + 1, {"--mcp-config", config.dump()});
    auto allowed = std::find_if(argv.begin(), argv.end(), [](const std::string& a) {
      return a == "--allowedTools" || a == "--allowed-tools";
    });
    if (allowed == argv.end()) {
      argv.push_back("--allowedTools");
      argv.push_back("mcp__" + server);
    } else {
      argv.insert(allowed + 1, "mcp__" + server);
    }
    return argv;
  }
  if (family == Family::kCodex) {
    auto exec = std::find(argv.begin(), argv.end(), "exec");
    if (exec == argv.end()) return argv;
    // -c values are TOML: a JSON string or array of strings is one too.
    std::string prefix = "mcp_servers." + server + ".";
    argv.insert(exec + 1, {"-c", prefix + "command=" + nlohmann::json(tx).dump(), "-c",
                           prefix + "args=[\"mcp\"]", "-c",
                           prefix + "env_vars=" + nlohmann::json(env_names).dump()});
    return argv;
  }
  return argv;
}

Status ValidateProfile(const AgentProfile& p) {
  TX_RETURN_IF_ERROR(ValidateTemplate(p.name, p.argv));
  if (!p.resume_argv.empty()) TX_RETURN_IF_ERROR(ValidateTemplate(p.name, p.resume_argv));
  for (const auto& pattern : p.limit_patterns) {
    try {
      std::regex re(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Error::InvalidArgument("agent profile '" + p.name + "': limit pattern '" + pattern +
                                    "' does not compile: " + e.what());
    }
  }
  if (p.mcp && p.family != Family::kClaude && p.family != Family::kCodex) {
    return Error::InvalidArgument("agent profile '" + p.name +
                                  "': mcp = true needs the claude or codex adapter, not " +
                                  std::string(ToString(p.family)));
  }
  for (const auto& a : p.accounts) {
    TX_RETURN_IF_ERROR(ValidateName("agent profile '" + p.name + "' account", a.name));
    for (const auto& kv : a.env) {
      if (kv.find('=') == std::string::npos || kv.front() == '=') {
        return Error::InvalidArgument("agent profile '" + p.name + "' account '" + a.name +
                                      "': environment entry '" + kv + "' is not NAME=value");
      }
    }
  }
  return Ok();
}

}  // namespace tx::agent
