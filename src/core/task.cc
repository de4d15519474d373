#include "core/task.h"

#include <array>

namespace tx {

namespace {
struct StatusName {
  TaskStatus status;
  std::string_view name;
};
constexpr StatusName kStatusNames[] = {
    {TaskStatus::kBlocked, "blocked"},   {TaskStatus::kReady, "ready"},
    {TaskStatus::kRunning, "running"},   {TaskStatus::kReview, "review"},
    {TaskStatus::kApproved, "approved"}, {TaskStatus::kDone, "done"},
    {TaskStatus::kFailed, "failed"},     {TaskStatus::kCancelled, "cancelled"},
    {TaskStatus::kWaiting, "waiting"},
};
constexpr StatusName kAliases[] = {
    {TaskStatus::kReady, "todo"},          {TaskStatus::kRunning, "in-progress"},
    {TaskStatus::kRunning, "in_progress"}, {TaskStatus::kRunning, "active"},
    {TaskStatus::kRunning, "claimed"},     {TaskStatus::kReview, "in_review"},
    {TaskStatus::kReview, "in-review"},    {TaskStatus::kDone, "completed"},
    {TaskStatus::kCancelled, "canceled"},
};

using S = TaskStatus;
using E = TaskEvent;
struct Transition {
  TaskStatus from;
  TaskEvent event;
  TaskStatus to;
};
// The task state machine (design.md §1). Anything not listed is refused.
constexpr Transition kTransitions[] = {
    {S::kBlocked, E::kUnblock, S::kReady},
    {S::kReady, E::kClaim, S::kRunning},
    {S::kRunning, E::kSucceed, S::kDone},
    {S::kRunning, E::kSubmitReview, S::kReview},
    {S::kRunning, E::kAttemptFailed, S::kReady},
    {S::kRunning, E::kAttemptFailed, S::kFailed},
    {S::kRunning, E::kRequeue, S::kReady},
    {S::kRunning, E::kRequeue, S::kFailed},  // a requeue that exhausts max_attempts
    {S::kReview, E::kApprove, S::kApproved},
    {S::kReview, E::kRequestChanges, S::kReady},
    {S::kApproved, E::kMerge, S::kDone},
    {S::kApproved, E::kMergeRefused, S::kReady},
    {S::kBlocked, E::kCancel, S::kCancelled},
    {S::kReady, E::kCancel, S::kCancelled},
    {S::kRunning, E::kCancel, S::kCancelled},
    {S::kReview, E::kCancel, S::kCancelled},
    {S::kApproved, E::kCancel, S::kCancelled},
    {S::kFailed, E::kRetry, S::kReady},
    {S::kFailed, E::kRetry, S::kBlocked},
    {S::kCancelled, E::kRetry, S::kReady},
    {S::kCancelled, E::kRetry, S::kBlocked},
    {S::kBlocked, E::kForceDone, S::kDone},
    {S::kReady, E::kForceDone, S::kDone},
    {S::kRunning, E::kForceDone, S::kDone},
    {S::kReview, E::kForceDone, S::kDone},
    {S::kApproved, E::kForceDone, S::kDone},
    {S::kBlocked, E::kForceFail, S::kFailed},
    {S::kReady, E::kForceFail, S::kFailed},
    {S::kRunning, E::kForceFail, S::kFailed},
    {S::kReview, E::kForceFail, S::kFailed},
    {S::kApproved, E::kForceFail, S::kFailed},
    {S::kRunning, E::kForceReview, S::kReview},
    {S::kRunning, E::kBudgetSpent, S::kFailed},
    {S::kReady, E::kBudgetSpent, S::kFailed},
    {S::kRunning, E::kAsk, S::kWaiting},
    {S::kWaiting, E::kAnswer, S::kReady},
    {S::kWaiting, E::kAnswer, S::kBlocked},
    {S::kWaiting, E::kQuestionExpired, S::kFailed},
    {S::kWaiting, E::kCancel, S::kCancelled},
    {S::kWaiting, E::kForceDone, S::kDone},
    {S::kWaiting, E::kForceFail, S::kFailed},
};

constexpr std::array<std::string_view, 19> kEventNames = {"unblock",
                                                          "claim",
                                                          "succeed",
                                                          "submit for review",
                                                          "fail an attempt",
                                                          "requeue",
                                                          "approve",
                                                          "request changes",
                                                          "merge",
                                                          "send back from a refused merge",
                                                          "cancel",
                                                          "retry",
                                                          "force done",
                                                          "force fail",
                                                          "force review",
                                                          "fail for its spent budget",
                                                          "ask a question about",
                                                          "answer",
                                                          "fail for an unanswered question"};
}  // namespace

std::string_view ToString(TaskStatus s) {
  for (const auto& row : kStatusNames) {
    if (row.status == s) return row.name;
  }
  return "unknown";
}

Result<TaskStatus> ParseTaskStatus(std::string_view name) {
  for (const auto& row : kStatusNames) {
    if (row.name == name) return row.status;
  }
  for (const auto& row : kAliases) {
    if (row.name == name) return row.status;
  }
  return Error::InvalidArgument(
      "unknown status '" + std::string(name) +
      "': expected one of blocked, ready, running, waiting, review, approved, done, failed, "
      "cancelled (or todo, in-progress, active, claimed, in_review, completed)");
}

bool IsTerminal(TaskStatus s) {
  return s == TaskStatus::kDone || s == TaskStatus::kFailed || s == TaskStatus::kCancelled;
}

std::string_view ToString(TaskEvent e) { return kEventNames[static_cast<std::size_t>(e)]; }

bool IsAllowed(TaskStatus from, TaskEvent event, TaskStatus to) {
  for (const auto& t : kTransitions) {
    if (t.from == from && t.event == event && t.to == to) return true;
  }
  return false;
}

Status CheckTransition(std::string_view task_id, TaskStatus from, TaskEvent event, TaskStatus to) {
  if (IsAllowed(from, event, to)) return Ok();
  return Error::Conflict("cannot " + std::string(ToString(event)) + " task " +
                         std::string(task_id) + ": it is " + std::string(ToString(from)));
}

bool AsksForAutoMerge(const Task& task) {
  auto it = task.metadata.find("auto_merge");
  return it != task.metadata.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace tx

namespace tx {

double BudgetUsd(const Task& task) {
  auto it = task.metadata.find("budget_usd");
  return it != task.metadata.end() && it->is_number() ? it->get<double>() : 0;
}

}  // namespace tx
