#include "core/agent.h"

#include <gtest/gtest.h>

#include "core/question.h"

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

// Issue 22: every prompt tells the agent how to ask, and carries the questions asked so far with
// their answers, whether or not the session is resumed.
TEST(Agent, PromptCarriesTheQuestionsAskedAndTheirAnswers) {
  Task t;
  t.id = "task-abcdefgh";
  std::string fresh = BuildPrompt(t, 1);
  EXPECT_NE(fresh.find("tx task ask \"<question>\""), std::string::npos) << fresh;
  EXPECT_EQ(fresh.find("## Questions you asked"), std::string::npos) << fresh;
  AddQuestion(t, "Which database should I use?", 1, 1000);
  ASSERT_TRUE(AnswerOpenQuestion(t, "Use PostgreSQL", 2000).ok());
  AddQuestion(t, "And the port?", 2, 3000);
  std::string p = BuildPrompt(t, 3);
  EXPECT_NE(p.find("## Questions you asked, and the answers\n"
                   "Q: Which database should I use?\nA: Use PostgreSQL\n"
                   "Q: And the port?\nA: (no answer came)\n"),
            std::string::npos)
      << p;
  EXPECT_LT(p.find("## Questions you asked"), p.find("## Reporting"));
}

TEST(Question, TheHistoryKeepsEachQuestionAndOnlyTheNewestMayBeOpen) {
  Task t;
  t.id = "task-abcdefgh";
  EXPECT_FALSE(OpenQuestion(t));
  EXPECT_EQ(AnswerOpenQuestion(t, "a", 1).error().code(), ErrorCode::kConflict);
  AddQuestion(t, "first?", 1, 100);
  ASSERT_TRUE(OpenQuestion(t));
  EXPECT_EQ(OpenQuestion(t)->question, "first?");
  EXPECT_EQ(OpenQuestion(t)->asked_at, 100);
  EXPECT_EQ(OpenQuestion(t)->attempt, 1);
  ASSERT_TRUE(AnswerOpenQuestion(t, "yes", 200).ok());
  EXPECT_FALSE(OpenQuestion(t));
  EXPECT_EQ(AnswerOpenQuestion(t, "again", 300).error().code(), ErrorCode::kConflict);
  std::vector<Question> all = Questions(t);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].answer, "yes");
  EXPECT_EQ(all[0].answered_at, 200);
  // Entries that are not questions (a hand-edited metadata) are passed over.
  t.metadata["questions"].push_back(42);
  t.metadata["questions"].push_back({{"answer", "orphan"}});
  EXPECT_EQ(Questions(t).size(), 1u);
  EXPECT_EQ(ValidateQuestionText("question", " \n", 10).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ValidateQuestionText("answer", "0123456789a", 10).error().message(),
            "the answer is 11 bytes long; at most 10 are kept");
  EXPECT_TRUE(ValidateQuestionText("answer", "ok", 10).ok());
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
