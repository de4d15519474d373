#pragma once
// Questions from agents (docs/agents.md, "Questions"): an agent's `tx task ask` ends its attempt
// and its task waits, in status `waiting`, for a person's `tx task answer`; the next attempt
// resumes the agent's session with the answer. The history is the task's metadata.questions,
// oldest first: {"question", "asked_at" (epoch ms), "attempt" (the n of the attempt that asked)}
// and, once answered, "answer" and "answered_at". Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/task.h"

namespace tx {

struct Question {
  std::string question;
  Millis asked_at = 0;
  int attempt = 0;
  std::optional<std::string> answer;
  Millis answered_at = 0;
};

// The task's questions as metadata.questions holds them, oldest first (an entry without a
// question string is passed over).
std::vector<Question> Questions(const Task& task);

// The newest question, while it has no answer.
std::optional<Question> OpenQuestion(const Task& task);

// Appends a question asked by attempt `attempt` at `now`.
void AddQuestion(Task& task, const std::string& question, int attempt, Millis now);

// Records `answer` to the open question at `now`. conflict when no question is open.
Status AnswerOpenQuestion(Task& task, const std::string& answer, Millis now);

// A question's or an answer's text: not blank, at most `max` bytes. invalid_argument naming
// `field` otherwise.
Status ValidateQuestionText(std::string_view field, std::string_view text, std::size_t max);

}  // namespace tx
