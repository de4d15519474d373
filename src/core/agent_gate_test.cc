#include "core/agent_gate.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

using Args = std::vector<std::string>;

const AgentIdentity kAgent{"t-own", "7", ""};

Args Gated(const Args& args, const AgentIdentity& agent = kAgent) {
  Result<Args> r = GateAgentCommand(args, agent);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : Args{};
}

std::string Refusal(const Args& args, const AgentIdentity& agent = kAgent) {
  Result<Args> r = GateAgentCommand(args, agent);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  return r.error().message();
}

TEST(AgentGate, ReportsOnItsOwnTaskPassWithTheTaskFilledIn) {
  EXPECT_EQ(Gated({"task", "done", "--result", "ok"}),
            (Args{"task", "done", "t-own", "--result", "ok"}));
  EXPECT_EQ(Gated({"--json", "task", "fail", "t-own", "--error=bad"}),
            (Args{"--json", "task", "fail", "t-own", "--error", "bad"}));
  EXPECT_EQ(Gated({"task", "review", "t-own", "--token", "7"}),
            (Args{"task", "review", "t-own", "--token", "7"}));
  EXPECT_EQ(Gated({"task", "show"}), (Args{"task", "show", "t-own"}));
}

TEST(AgentGate, TextStaysTextAfterADoubleDash) {
  EXPECT_EQ(Gated({"task", "ask", "Which port?"}), (Args{"task", "ask", "--", "Which port?"}));
  EXPECT_EQ(Gated({"task", "note", "--task", "t-own", "--", "-1 test left"}),
            (Args{"task", "note", "--task", "t-own", "--", "-1 test left"}));
  EXPECT_EQ(Gated({"task", "add", "write the docs", "--priority", "3", "--review"}),
            (Args{"task", "add", "--priority", "3", "--review", "--", "write the docs"}));
}

TEST(AgentGate, AnotherTaskOrTokenIsRefused) {
  EXPECT_NE(Refusal({"task", "done", "t-other"}).find("t-other is not this agent's"),
            std::string::npos);
  EXPECT_NE(Refusal({"task", "show", "t-other"}).find("not this agent's"), std::string::npos);
  EXPECT_NE(Refusal({"task", "ask", "q", "--task=t-other"}).find("not this agent's"),
            std::string::npos);
  EXPECT_NE(Refusal({"task", "done", "--token", "8"}).find("token 8"), std::string::npos);
}

TEST(AgentGate, OperatorsOptionsAndOtherCommandsAreRefused) {
  EXPECT_NE(Refusal({"task", "done", "t-own", "--force"}).find("'--force' is not for an agent"),
            std::string::npos);
  EXPECT_NE(Refusal({"--db", "/x/tx.db", "task", "done"}).find("'--db'"), std::string::npos);
  EXPECT_NE(Refusal({"task", "cancel", "t-own"}).find("'tx task cancel' is not for an agent"),
            std::string::npos);
  EXPECT_NE(Refusal({"worker", "stop", "w"}).find("not for an agent"), std::string::npos);
  EXPECT_NE(Refusal({"task", "add", "x", "--workdir", "/"}).find("'--workdir'"), std::string::npos);
  EXPECT_NE(Refusal({"task", "add", "x", "--command", "rm -rf /"}).find("'--command'"),
            std::string::npos);
  EXPECT_NE(Refusal({"task", "done", "t-own", "extra"}).find("unexpected argument"),
            std::string::npos);
}

TEST(AgentGate, ASandboxedAgentsSubtaskGoesInItsSandbox_Issue25) {
  const AgentIdentity boxed{"t-own", "7", "", "bwrap"};
  EXPECT_EQ(Gated({"task", "add", "child", "--queue", "q"}, boxed),
            (Args{"task", "add", "--queue", "q", "--sandbox", "bwrap", "--", "child"}));
  EXPECT_EQ(Gated({"task", "done"}, boxed), (Args{"task", "done", "t-own"}));
  // Its own choice of a sandbox is not an agent's to make.
  EXPECT_NE(Refusal({"task", "add", "child", "--sandbox", "none"}, boxed).find("'--sandbox'"),
            std::string::npos);
}

TEST(AgentGate, TheWorkersAllowListNarrowsWhatIsLeft) {
  const AgentIdentity narrow{"t-own", "7", "task.show,task.done"};
  EXPECT_EQ(Gated({"task", "done"}, narrow), (Args{"task", "done", "t-own"}));
  EXPECT_NE(Refusal({"task", "add", "x"}, narrow).find("allowed_commands=task.show,task.done"),
            std::string::npos);
  // A wider list widens nothing.
  const AgentIdentity wide{"t-own", "7", "*"};
  Refusal({"task", "cancel", "t-own"}, wide);
}

}  // namespace
}  // namespace tx
