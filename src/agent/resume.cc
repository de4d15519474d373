#include "agent/resume.h"

#include "core/question.h"

namespace tx::agent {

namespace {

int MetaInt(const Task& task, const char* key) {
  auto it = task.metadata.find(key);
  return it != task.metadata.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

std::optional<ResumePlan> PlanResume(const Task& task, int attempt, const AgentProfile& profile,
                                     const std::vector<AttemptUsage>& history) {
  if (profile.name.empty() || ResumeTemplate(profile).empty()) return std::nullopt;
  int fresh_after = MetaInt(task, "fresh_after_attempt");
  const AttemptUsage* last = nullptr;
  for (const auto& u : history) {
    if (u.session_id.empty() || u.agent != profile.name) continue;
    if (u.attempt <= fresh_after || u.attempt >= attempt) continue;
    if (last == nullptr || u.attempt > last->attempt) last = &u;
  }
  if (last == nullptr) return std::nullopt;
  ResumePlan plan{last->session_id, last->account, ResumePrompt(task, last->attempt), {}};
  for (const auto& u : history) {
    if (u.session_id == last->session_id) plan.session_tokens += u.tokens;
  }
  return plan;
}

std::string ResumePrompt(const Task& task, int resumed_attempt) {
  std::string p;
  // The questions this session asked (tx task ask) and what a person answered.
  for (const auto& q : Questions(task)) {
    if (q.attempt < resumed_attempt || !q.answer) continue;
    p += "You asked a person about task " + task.id + ":\n\n" + q.question +
         "\n\nTheir answer:\n\n" + *q.answer + "\n\n";
  }
  if (!p.empty()) p += "Continue the task with it, then report as before.\n";
  auto note = task.metadata.find("next_note");
  bool noted = note != task.metadata.end() && note->is_object() &&
               note->value("after_attempt", 0) >= resumed_attempt && note->contains("text") &&
               (*note)["text"].is_string();
  if (noted) {
    p += "Your work on task " + task.id + " was sent back with this note:\n\n" +
         (*note)["text"].get<std::string>() + "\n\nAct on it, then report as before.\n";
  } else if (p.empty()) {
    std::string error = task.error;
    if (error.empty()) {
      auto last = task.metadata.find("last_error");
      if (last != task.metadata.end() && last->is_string()) error = last->get<std::string>();
    }
    p = "Your previous attempt at task " + task.id + " ended";
    p += error.empty() ? " before it was reported." : " with: " + error;
    p += "\n\nContinue the task from where you left off, then report as before.\n";
  }
  p += "\nReport with: tx task done " + task.id + " --result \"<summary>\" (or tx task review " +
       task.id + ", or tx task fail " + task.id + " --error \"<why>\"; or, for a question only a " +
       "person can answer, tx task ask \"<question>\" and exit).\n";
  return p;
}

}  // namespace tx::agent
