#include "core/agent.h"

#include <array>

#include "core/question.h"

namespace tx {
namespace {

constexpr std::array<std::string_view, 6> kPlaceholders = {"prompt",  "task_id", "title",
                                                           "workdir", "attempt", "session_id"};

std::string_view ValueOf(std::string_view name, const AgentContext& c, std::string& scratch) {
  if (name == "prompt") return c.prompt;
  if (name == "task_id") return c.task_id;
  if (name == "title") return c.title;
  if (name == "workdir") return c.workdir;
  if (name == "session_id") return c.session_id;
  scratch = std::to_string(c.attempt);
  return scratch;
}

bool IsPlaceholder(std::string_view name) {
  for (auto p : kPlaceholders) {
    if (p == name) return true;
  }
  return false;
}

}  // namespace

Status ValidateTemplate(std::string_view profile, const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) {
    return Error::InvalidArgument("agent profile '" + std::string(profile) + "' has an empty argv");
  }
  for (const auto& arg : argv) {
    for (std::size_t open = arg.find('{'); open != std::string::npos;
         open = arg.find('{', open + 1)) {
      std::size_t close = arg.find('}', open);
      if (close == std::string::npos) break;  // a lone brace is literal text
      std::string_view name(arg.data() + open + 1, close - open - 1);
      if (!IsPlaceholder(name)) {
        return Error::InvalidArgument(
            "agent profile '" + std::string(profile) + "': unknown placeholder {" +
            std::string(name) +
            "} (known: {prompt} {task_id} {title} {workdir} {attempt} {session_id})");
      }
    }
  }
  return Ok();
}

std::vector<std::string> ExpandTemplate(const std::vector<std::string>& argv,
                                        const AgentContext& context) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  std::string scratch;
  for (const auto& arg : argv) {
    std::string expanded;
    std::size_t pos = 0;
    while (pos < arg.size()) {
      std::size_t open = arg.find('{', pos);
      std::size_t close = open == std::string::npos ? open : arg.find('}', open);
      if (close == std::string::npos) {
        expanded.append(arg, pos, std::string::npos);
        break;
      }
      std::string_view name(arg.data() + open + 1, close - open - 1);
      expanded.append(arg, pos, open - pos);
      if (IsPlaceholder(name)) {
        expanded.append(ValueOf(name, context, scratch));
      } else {
        expanded.append(arg, open, close - open + 1);
      }
      pos = close + 1;
    }
    out.push_back(std::move(expanded));
  }
  return out;
}

std::string BuildPrompt(const Task& task, int attempt) {
  std::string p;
  p += "You are working on task " + task.id + ": " + task.title + "\n";
  if (!task.owner.empty()) p += "Owner: " + task.owner + "\n";
  if (!task.workdir.empty()) p += "Working directory: " + task.workdir + "\n";
  if (attempt > 1) {
    // The attempts that count (task.attempt), not the claims: a claim given back uncounted (a
    // limit, a missing program) made none.
    int counted = task.attempt > 0 ? task.attempt : attempt;
    p += "This is attempt " + std::to_string(counted) + " of " + std::to_string(task.max_attempts) +
         ".";
    if (!task.error.empty()) p += " The previous attempt ended with: " + task.error;
    p += "\n";
  }
  auto section = [&](std::string_view heading, const std::string& body) {
    if (body.empty()) return;
    p += "\n## " + std::string(heading) + "\n" + body + "\n";
  };
  section("Description", task.description);
  section("Instructions", task.instructions);
  section("Deliverables", task.deliverables);
  if (!task.steps.empty()) {
    p += "\n## Steps\n";
    for (std::size_t i = 0; i < task.steps.size(); ++i) {
      p += std::to_string(i + 1) + ". " + task.steps[i] + "\n";
    }
  }
  // A reviewer's requested changes (tx task changes, PATCH status ready on a task in review).
  if (auto it = task.metadata.find("review_notes"); it != task.metadata.end() && it->is_array()) {
    std::string notes;
    for (const auto& n : *it) {
      if (n.is_string()) notes += "- " + n.get<std::string>() + "\n";
    }
    if (!notes.empty()) p += "\n## Changes requested in review\n" + notes;
  }
  // The note of a retry (tx task retry --note), for the attempts after it.
  if (auto it = task.metadata.find("next_note"); it != task.metadata.end() && it->is_object()) {
    auto text = it->find("text");
    auto after = it->find("after_attempt");
    bool reviewed = false;
    if (auto r = task.metadata.find("review_notes"); r != task.metadata.end() && r->is_array()) {
      for (const auto& n : *r) reviewed = reviewed || (text != it->end() && n == *text);
    }
    if (text != it->end() && text->is_string() && !reviewed && after != it->end() &&
        after->is_number_integer() && attempt > after->get<int>()) {
      p += "\n## Note\n" + text->get<std::string>() + "\n";
    }
  }
  // What the agent asked a person (tx task ask) and what it was told, in any attempt after.
  if (std::vector<Question> asked = Questions(task); !asked.empty()) {
    p += "\n## Questions you asked, and the answers\n";
    for (const auto& q : asked) {
      p += "Q: " + q.question + "\nA: " + (q.answer ? *q.answer : "(no answer came)") + "\n";
    }
  }
  p += "\n## Reporting\n";
  // The task's id is written out: an agent's permissions may refuse a command holding a
  // variable (Claude Code cannot check one before it runs), and tx reads the token by itself.
  p += "When you have finished, report the outcome with the tx command (your claim token is in "
       "$TX_CLAIM_TOKEN, which tx reads by itself):\n";
  p += "- done:   tx task done " + task.id + " --result \"<one-line summary>\"\n";
  p += "- needs a human review: tx task review " + task.id + " --result \"<summary>\"\n";
  p += "- cannot be done: tx task fail " + task.id + " --error \"<why>\"\n";
  p += "- a question only a person can answer: tx task ask \"<question>\", then stop and exit: "
       "you are resumed with the answer\n";
  p += "If you exit without reporting, exit status 0 counts as done and any other as a failure.\n";
  return p;
}

}  // namespace tx
