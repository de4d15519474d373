#include "core/question.h"

namespace tx {

namespace {

constexpr char kKey[] = "questions";

Millis TimeOf(const nlohmann::json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_number_integer() ? it->get<Millis>() : 0;
}

}  // namespace

std::vector<Question> Questions(const Task& task) {
  std::vector<Question> out;
  auto list = task.metadata.find(kKey);
  if (list == task.metadata.end() || !list->is_array()) return out;
  for (const auto& entry : *list) {
    if (!entry.is_object()) continue;
    auto q = entry.find("question");
    if (q == entry.end() || !q->is_string()) continue;
    Question& out_q = out.emplace_back();
    out_q.question = q->get<std::string>();
    out_q.asked_at = TimeOf(entry, "asked_at");
    out_q.answered_at = TimeOf(entry, "answered_at");
    if (auto n = entry.find("attempt"); n != entry.end() && n->is_number_integer()) {
      out_q.attempt = n->get<int>();
    }
    if (auto a = entry.find("answer"); a != entry.end() && a->is_string()) {
      out_q.answer = a->get<std::string>();
    }
  }
  return out;
}

std::optional<Question> OpenQuestion(const Task& task) {
  std::vector<Question> all = Questions(task);
  if (all.empty() || all.back().answer) return std::nullopt;
  return all.back();
}

void AddQuestion(Task& task, const std::string& question, int attempt, Millis now) {
  if (!task.metadata.is_object()) task.metadata = nlohmann::json::object();
  nlohmann::json& list = task.metadata[kKey];
  if (!list.is_array()) list = nlohmann::json::array();
  list.push_back({{"question", question}, {"asked_at", now}, {"attempt", attempt}});
}

Status AnswerOpenQuestion(Task& task, const std::string& answer, Millis now) {
  auto list = task.metadata.find(kKey);
  if (list != task.metadata.end() && list->is_array()) {
    for (auto it = list->rbegin(); it != list->rend(); ++it) {
      if (!it->is_object() || !it->contains("question")) continue;
      if (it->contains("answer")) break;
      (*it)["answer"] = answer;
      (*it)["answered_at"] = now;
      return Ok();
    }
  }
  return Error::Conflict("task " + task.id + " has no open question to answer");
}

Status ValidateQuestionText(std::string_view field, std::string_view text, std::size_t max) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Error::InvalidArgument("the " + std::string(field) + " is empty");
  }
  if (text.size() > max) {
    return Error::InvalidArgument("the " + std::string(field) + " is " +
                                  std::to_string(text.size()) + " bytes long; at most " +
                                  std::to_string(max) + " are kept");
  }
  return Ok();
}

}  // namespace tx
