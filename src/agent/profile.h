#pragma once
// Agent profiles: a named way to run an agent CLI (docs/agents.md). A profile names its adapter
// (the agent family whose output it parses), the argv template of a fresh run and, optionally,
// of a resumed one, the patterns that mean a usage limit, and the accounts it may run under.
// Pure: no I/O.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx::agent {

// The agent families tx understands. kGeneric treats the output as plain text, as tx always did.
enum class Family { kGeneric, kClaude, kCodex, kAider };

std::string_view ToString(Family f);
// invalid_argument naming the known ones.
Result<Family> ParseFamily(std::string_view name);

// One account of a profile: the environment its runs get (its own CLAUDE_CONFIG_DIR, its own
// API key...). While one is limited, the profile's tasks run under the next one that is not.
struct Account {
  std::string name;
  std::vector<std::string> env;  // "NAME=value"
  bool operator==(const Account&) const = default;
};

struct AgentProfile {
  std::string name;
  Family family = Family::kGeneric;
  std::vector<std::string> argv;            // a fresh run's template
  std::vector<std::string> resume_argv;     // a resumed run's; empty = the adapter's default
  std::vector<std::string> limit_patterns;  // ECMAScript regexes over output lines
  std::vector<Account> accounts;            // empty = one unnamed account: the worker's env
  // Register tx's MCP server with the agent (`mcp = true`; claude and codex only): WithMcpServer.
  bool mcp = false;
  bool operator==(const AgentProfile&) const = default;
};

// claude, codex, aider (each its family's headless argv, docs/agents.md says which versions were
// checked) and generic (`agent {prompt}`: any program named `agent` on PATH).
std::map<std::string, AgentProfile> BuiltInProfiles();

// The argv template of a resumed run of `profile` ({session_id} and {prompt} filled later):
// resume_argv when it is set, else what the family's CLI takes — claude: `--resume
// {session_id}` after the program; codex: `exec resume {session_id}` in place of `exec`, the
// prompt last. Empty when the family cannot resume (generic, aider: aider's chat history is
// its own file, restored by its flag in a fresh run's argv).
std::vector<std::string> ResumeTemplate(const AgentProfile& profile);

// The model a run of `argv` asks for (-m M, --model M, --model=M, -c model=M), else the family's
// default when its output never names one (codex: gpt-5-codex), else "".
std::string ModelOf(Family family, const std::vector<std::string>& argv);

// The name the agent knows tx's MCP server by: its tools are mcp__tx__task_done, ... to Claude
// Code.
inline constexpr char kMcpServerName[] = "tx";

// `argv` (a run of a `family` agent, expanded) with tx's MCP server (`tx mcp`, docs/mcp.md)
// registered for that run alone, nothing written to the agent's own configuration:
//  - claude: `--mcp-config {"mcpServers":{"tx":{"command":TX,"args":["mcp"]}}}` right after the
//    program (the flag takes several values, so an option must follow it), and `mcp__tx` (every
//    tool of the server) added to --allowedTools (or the flag added, last, when argv has none).
//    Claude Code passes its own environment (TX_TASK_ID, TX_CLAIM_TOKEN, ...) on to the server.
//  - codex: `-c mcp_servers.tx.command="TX" -c mcp_servers.tx.args=["mcp"]
//    -c mcp_servers.tx.env_vars=[ENV_NAMES]` right after `exec`: Codex passes a server only a
//    few variables of its own unless told which others to forward.
// `tx` is the path of the tx binary; `env_names` the TX_* variables the agent gets. Other
// families (and a codex argv without `exec`): argv unchanged.
std::vector<std::string> WithMcpServer(Family family, std::vector<std::string> argv,
                                       const std::string& tx,
                                       const std::vector<std::string>& env_names);

// Whether a profile's program can be looked for before a task names a workdir and an account
// (what a worker and `tx doctor` look for on PATH): not when its argv[0] is a template
// ("{workdir}/bin/agent"), a path relative to the task's workdir, or found through an account's
// own PATH. False for an empty argv.
bool ProgramCheckableAhead(const AgentProfile& profile);

// Checks a profile: a valid fresh (and resume) template, regexes that compile, accounts with
// names, mcp only with the claude or codex adapter. invalid_argument naming the profile and what is
// wrong.
Status ValidateProfile(const AgentProfile& profile);

}  // namespace tx::agent
