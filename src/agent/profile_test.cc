#include "agent/profile.h"

#include <gtest/gtest.h>

#include "core/agent.h"

namespace tx::agent {
namespace {

TEST(Profiles, TheBuiltInProfilesRunEachCliHeadlessWithItsAdapter) {
  auto profiles = BuiltInProfiles();
  for (const char* name : {"claude", "codex", "aider", "generic"}) {
    ASSERT_TRUE(profiles.count(name)) << name;
    EXPECT_TRUE(ValidateProfile(profiles[name]).ok()) << name;
  }
  EXPECT_EQ(profiles["claude"].family, Family::kClaude);
  EXPECT_EQ(profiles["claude"].argv,
            (std::vector<std::string>{"claude", "-p", "{prompt}", "--output-format", "stream-json",
                                      "--verbose", "--permission-mode", "acceptEdits",
                                      "--allowedTools", "Bash(tx:*)"}));
  EXPECT_EQ(profiles["codex"].family, Family::kCodex);
  EXPECT_EQ(profiles["generic"].argv, (std::vector<std::string>{"agent", "{prompt}"}));
  EXPECT_EQ(profiles["generic"].family, Family::kGeneric);
}

TEST(Profiles, AProgramIsLookedForAheadOnlyWhenNoTaskOrAccountDecidesWhereItIs) {
  AgentProfile p;
  EXPECT_FALSE(ProgramCheckableAhead(p)) << "no argv";
  p.argv = {"claude", "-p", "{prompt}"};
  EXPECT_TRUE(ProgramCheckableAhead(p));
  p.argv = {"/opt/agent/bin/run", "{prompt}"};
  EXPECT_TRUE(ProgramCheckableAhead(p));
  p.argv = {"{workdir}/bin/agent", "{prompt}"};
  EXPECT_FALSE(ProgramCheckableAhead(p)) << "a template";
  p.argv = {"bin/agent", "{prompt}"};
  EXPECT_FALSE(ProgramCheckableAhead(p)) << "relative to the task's workdir";
  p.argv = {"claude", "{prompt}"};
  p.accounts = {{"work", {"PATH=/opt/work/bin"}}};
  EXPECT_FALSE(ProgramCheckableAhead(p)) << "an account's own PATH";
}

TEST(Profiles, AResumeContinuesTheSessionWithTheSameFlags) {
  auto profiles = BuiltInProfiles();
  AgentContext c;
  c.prompt = "go on";
  c.session_id = "s-1";
  EXPECT_EQ(ExpandTemplate(ResumeTemplate(profiles["claude"]), c),
            (std::vector<std::string>{"claude", "--resume", "s-1", "-p", "go on", "--output-format",
                                      "stream-json", "--verbose", "--permission-mode",
                                      "acceptEdits", "--allowedTools", "Bash(tx:*)"}));
  EXPECT_EQ(
      ExpandTemplate(ResumeTemplate(profiles["codex"]), c),
      (std::vector<std::string>{
          "codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "-c",
          "sandbox_workspace_write.network_access=true", "-c", "allow_login_shell=false",
          "--disable", "unbounded_connection_retries", "resume", "s-1", "go on"}));
  EXPECT_TRUE(ResumeTemplate(profiles["aider"]).empty());
  EXPECT_TRUE(ResumeTemplate(profiles["generic"]).empty());
  AgentProfile own = profiles["generic"];
  own.resume_argv = {"agent", "--continue", "{session_id}", "{prompt}"};
  EXPECT_EQ(ResumeTemplate(own), own.resume_argv);
}

TEST(Profiles, TheModelOfARunIsWhatItsArgvAsksForElseItsFamilysDefault) {
  EXPECT_EQ(ModelOf(Family::kCodex, {"codex", "exec", "-m", "gpt-5-mini", "x"}), "gpt-5-mini");
  EXPECT_EQ(ModelOf(Family::kCodex, {"codex", "exec", "-c", "model=\"o4-mini\"", "x"}), "o4-mini");
  EXPECT_EQ(ModelOf(Family::kClaude, {"claude", "--model=claude-opus-4-1", "-p", "x"}),
            "claude-opus-4-1");
  EXPECT_EQ(ModelOf(Family::kCodex, BuiltInProfiles()["codex"].argv), "gpt-5-codex");
  EXPECT_EQ(ModelOf(Family::kClaude, BuiltInProfiles()["claude"].argv), "");
}

TEST(Profiles, ABadPatternAccountOrPlaceholderIsRefusedNamingIt) {
  AgentProfile p = BuiltInProfiles()["generic"];
  p.limit_patterns = {"(oops"};
  ASSERT_FALSE(ValidateProfile(p).ok());
  EXPECT_NE(ValidateProfile(p).error().message().find("(oops"), std::string::npos);
  p.limit_patterns.clear();
  p.accounts = {{"a b", {}}};
  EXPECT_FALSE(ValidateProfile(p).ok());
  p.accounts = {{"a", {"NOEQUALS"}}};
  EXPECT_FALSE(ValidateProfile(p).ok());
  p.accounts = {{"a", {"CLAUDE_CONFIG_DIR=/x"}}};
  EXPECT_TRUE(ValidateProfile(p).ok());
  p.argv = {"x", "{sesion}"};
  EXPECT_FALSE(ValidateProfile(p).ok());
  EXPECT_FALSE(ParseFamily("claud").ok());
  EXPECT_EQ(*ParseFamily("codex"), Family::kCodex);
}

TEST(Profiles, McpRegistersTxsServerInEachCliOwnFlags_Issue22) {
  auto profiles = BuiltInProfiles();
  std::vector<std::string> claude = WithMcpServer(
      Family::kClaude, {"claude", "--resume", "s-1", "-p", "go", "--allowedTools", "Bash(tx:*)"},
      "/usr/bin/tx", {"TX_TASK_ID"});
  EXPECT_EQ(claude, (std::vector<std::string>{
                        "claude", "--mcp-config",
                        R"({"mcpServers":{"tx":{"args":["mcp"],"command":"/usr/bin/tx"}}})",
                        "--resume", "s-1", "-p", "go", "--allowedTools", "mcp__tx", "Bash(tx:*)"}));
  // An argv of one's own without --allowedTools gets the flag, last.
  EXPECT_EQ(
      WithMcpServer(Family::kClaude, {"claude", "-p", "go"}, "/t x/tx", {}),
      (std::vector<std::string>{"claude", "--mcp-config",
                                R"({"mcpServers":{"tx":{"args":["mcp"],"command":"/t x/tx"}}})",
                                "-p", "go", "--allowedTools", "mcp__tx"}));
  std::vector<std::string> codex = WithMcpServer(Family::kCodex, {"codex", "exec", "--json", "go"},
                                                 "/opt/\"q\"/tx", {"TX_TASK_ID", "TX_CLAIM_TOKEN"});
  EXPECT_EQ(codex,
            (std::vector<std::string>{
                "codex", "exec", "-c", R"(mcp_servers.tx.command="/opt/\"q\"/tx")", "-c",
                R"(mcp_servers.tx.args=["mcp"])", "-c",
                R"(mcp_servers.tx.env_vars=["TX_TASK_ID","TX_CLAIM_TOKEN"])", "--json", "go"}));
  std::vector<std::string> plain = {"aider", "--message", "go"};
  EXPECT_EQ(WithMcpServer(Family::kAider, plain, "/usr/bin/tx", {}), plain);
  AgentProfile p = profiles["aider"];
  p.mcp = true;
  EXPECT_FALSE(ValidateProfile(p).ok());
  p = profiles["codex"];
  p.mcp = true;
  EXPECT_TRUE(ValidateProfile(p).ok());
}

}  // namespace
}  // namespace tx::agent
