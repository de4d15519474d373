#include "agent/resume.h"

#include <gtest/gtest.h>

#include "core/question.h"

namespace tx::agent {
namespace {

AttemptUsage Row(int attempt, const std::string& agent, const std::string& session,
                 const std::string& account = "") {
  AttemptUsage u;
  u.attempt = attempt;
  u.agent = agent;
  u.session_id = session;
  u.account = account;
  return u;
}

Task TaskWithError(const std::string& error) {
  Task t;
  t.id = "task-abcdefgh";
  t.error = error;
  return t;
}

TEST(Resume, ARetryResumesTheNewestSessionOfTheSameProfileWithTheFailure) {
  AgentProfile claude = BuiltInProfiles()["claude"];
  Task t = TaskWithError("exited 1");
  std::vector<AttemptUsage> history = {Row(1, "claude", "s-1"), Row(2, "codex", "c-2"),
                                       Row(3, "claude", "s-3", "work"), Row(4, "claude", "")};
  std::optional<ResumePlan> p = PlanResume(t, 5, claude, history);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->session_id, "s-3");
  EXPECT_EQ(p->account, "work");
  EXPECT_NE(p->prompt.find("ended with: exited 1"), std::string::npos) << p->prompt;
  EXPECT_NE(p->prompt.find("tx task done"), std::string::npos) << p->prompt;
}

TEST(Resume, ANoteSinceTheResumedAttemptIsItsPrompt) {
  AgentProfile codex = BuiltInProfiles()["codex"];
  Task t = TaskWithError("");
  t.metadata["next_note"] = {{"text", "Use the new API"}, {"after_attempt", 2}};
  std::optional<ResumePlan> p = PlanResume(t, 3, codex, {Row(2, "codex", "c-2")});
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->prompt.find("Use the new API"), std::string::npos) << p->prompt;
  // A note older than the session is not repeated: the failure is told instead.
  t.metadata["next_note"]["after_attempt"] = 1;
  t.metadata["last_error"] = "timed out after 30m";
  p = PlanResume(t, 3, codex, {Row(2, "codex", "c-2")});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->prompt.find("Use the new API"), std::string::npos) << p->prompt;
  EXPECT_NE(p->prompt.find("timed out after 30m"), std::string::npos) << p->prompt;
}

// Issue 22: the attempt after an answer resumes the session that asked, with the question and
// the answer as its prompt; an earlier session's questions are not repeated.
TEST(Resume, AnAnsweredQuestionIsThePromptOfTheSessionThatAsked) {
  AgentProfile claude = BuiltInProfiles()["claude"];
  Task t = TaskWithError("");
  AddQuestion(t, "Which database should I use?", 1, 1000);
  ASSERT_TRUE(AnswerOpenQuestion(t, "Use PostgreSQL", 2000).ok());
  std::optional<ResumePlan> p = PlanResume(t, 2, claude, {Row(1, "claude", "s-1")});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->session_id, "s-1");
  EXPECT_NE(p->prompt.find("Which database should I use?"), std::string::npos) << p->prompt;
  EXPECT_NE(p->prompt.find("Their answer:\n\nUse PostgreSQL"), std::string::npos) << p->prompt;
  EXPECT_EQ(p->prompt.find("ended before it was reported"), std::string::npos) << p->prompt;
  EXPECT_NE(p->prompt.find("tx task done task-abcdefgh"), std::string::npos) << p->prompt;
  // Asked again by attempt 2 and answered: attempt 3 resumes session 2 with that answer alone.
  AddQuestion(t, "Which port?", 2, 3000);
  ASSERT_TRUE(AnswerOpenQuestion(t, "5432", 4000).ok());
  p = PlanResume(t, 3, claude, {Row(1, "claude", "s-1"), Row(2, "claude", "s-2")});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->session_id, "s-2");
  EXPECT_NE(p->prompt.find("Which port?"), std::string::npos) << p->prompt;
  EXPECT_EQ(p->prompt.find("Which database"), std::string::npos) << p->prompt;
}

TEST(Resume, NothingIsResumedAfterAFreshStartOrForAProfileThatCannot) {
  AgentProfile claude = BuiltInProfiles()["claude"];
  Task t = TaskWithError("x");
  t.metadata["fresh_after_attempt"] = 2;
  EXPECT_FALSE(PlanResume(t, 3, claude, {Row(1, "claude", "s-1"), Row(2, "claude", "s-2")}));
  EXPECT_TRUE(PlanResume(t, 4, claude, {Row(3, "claude", "s-3")}));
  EXPECT_FALSE(
      PlanResume(TaskWithError("x"), 2, BuiltInProfiles()["aider"], {Row(1, "aider", "a-1")}));
  EXPECT_FALSE(PlanResume(TaskWithError("x"), 1, claude, {}));
  // Only an earlier attempt: never the attempt itself, nor a later one.
  EXPECT_FALSE(PlanResume(TaskWithError("x"), 2, claude, {Row(2, "claude", "s-2")}));
}

}  // namespace
}  // namespace tx::agent
