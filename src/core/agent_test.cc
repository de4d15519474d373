#include "core/agent.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

TEST(Agent, PlaceholdersExpandInsideOneArgumentAndNeverSplitOrRunAShell) {
  AgentContext c{
      "do it; rm -rf / $(reboot) `id`", "task-abcdefgh", "a \"title\"", "/w d", 3, "sess-1"};
  auto argv = ExpandTemplate({"run", "{prompt}", "--id={task_id}", "{title}", "{workdir}",
                              "n{attempt}", "{unknown}", "{", "}", "{session_id}"},
                             c);
  std::vector<std::string> want = {"run",
                                   "do it; rm -rf / $(reboot) `id`",
                                   "--id=task-abcdefgh",
                                   "a \"title\"",
                                   "/w d",
                                   "n3",
                                   "{unknown}",
                                   "{",
                                   "}",
                                   "sess-1"};
  EXPECT_EQ(argv, want);
}

TEST(Agent, UnknownPlaceholderOrEmptyTemplateIsRefusedNamingIt) {
  Status s = ValidateTemplate("mine", {"x", "{promt}"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message().find("{promt}"), std::string::npos);
  EXPECT_NE(s.error().message().find("mine"), std::string::npos);
  EXPECT_FALSE(ValidateTemplate("mine", {}).ok());
}

TEST(Agent, PromptCarriesTheTaskAndHowToReport) {
  Task t;
  t.id = "task-abcdefgh";
  t.title = "Fix the login bug";
  t.owner = "slot-1";
  t.workdir = "/repo";
  t.description = "Users cannot log in.";
  t.instructions = "Write a test first.";
  t.deliverables = "A green test.";
  t.steps = {"reproduce", "fix"};
  t.max_attempts = 3;
  t.error = "exited 1";
  std::string p = BuildPrompt(t, 2);
  for (const char* want :
       {"task-abcdefgh", "Fix the login bug", "Owner: slot-1", "Working directory: /repo",
        "Users cannot log in.", "Write a test first.", "A green test.", "1. reproduce", "2. fix",
        "attempt 2 of 3", "exited 1", "tx task done task-abcdefgh --result",
        "tx task fail task-abcdefgh --error", "tx task review task-abcdefgh --result"}) {
    EXPECT_NE(p.find(want), std::string::npos) << want << "\n" << p;
  }
  EXPECT_EQ(BuildPrompt(t, 1).find("This is attempt"), std::string::npos);
}

TEST(Agent, PromptCarriesTheChangesAReviewerRequested) {
  Task t;
  t.id = "task-abcdefgh";
  t.title = "Fix the login bug";
  EXPECT_EQ(BuildPrompt(t, 1).find("Changes requested"), std::string::npos);
  t.metadata["review_notes"] = {"add a test", "update the docs"};
  std::string p = BuildPrompt(t, 1);
  EXPECT_NE(p.find("## Changes requested in review\n- add a test\n- update the docs\n"),
            std::string::npos)
      << p;
  EXPECT_LT(p.find("Changes requested"), p.find("## Reporting"));
}

TEST(Agent, PromptCarriesTheNoteOfARetryFromTheAttemptAfterIt) {
  Task t;
  t.id = "task-abcdefgh";
  t.metadata["next_note"] = {{"text", "use the v2 API"}, {"after_attempt", 2}};
  EXPECT_EQ(BuildPrompt(t, 2).find("use the v2 API"), std::string::npos);
  EXPECT_NE(BuildPrompt(t, 3).find("## Note\nuse the v2 API\n"), std::string::npos);
  // A note that is also a review note is shown once, with the review's.
  t.metadata["review_notes"] = {"use the v2 API"};
  EXPECT_EQ(BuildPrompt(t, 3).find("## Note"), std::string::npos);
}

}  // namespace
}  // namespace tx
