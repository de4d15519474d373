#pragma once
// Argv templates and prompts: how a worker turns a task into an argv. Pure: no I/O. (The
// profiles that hold the templates are agent/profile.h's.)
//
// Each argument of a template may contain placeholders — {prompt}, {task_id}, {title},
// {workdir}, {attempt}, {session_id} — replaced inside that one argument: a value never splits
// into several arguments and nothing is run through a shell, so no text in a task can inject a
// command.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/task.h"

namespace tx {

// Checks a template: non-empty, and every {...} a known placeholder. invalid_argument names the
// profile and the unknown placeholder.
Status ValidateTemplate(std::string_view profile, const std::vector<std::string>& argv);

// The values of the placeholders for one attempt.
struct AgentContext {
  std::string prompt;
  std::string task_id;
  std::string title;
  std::string workdir;
  int attempt = 0;
  std::string session_id;  // the session a resumed run continues
};

// Expands a validated template.
std::vector<std::string> ExpandTemplate(const std::vector<std::string>& argv,
                                        const AgentContext& context);

// The prompt for an agent: the task (id, title, owner, working directory, description,
// instructions, deliverables, numbered steps), the attempt when it is a retry with the previous
// error, the questions its agents asked and their answers (core/question.h), and how to report
// back (`tx task done|review|fail ID`, or `tx task ask QUESTION`).
std::string BuildPrompt(const Task& task, int attempt);

}  // namespace tx
