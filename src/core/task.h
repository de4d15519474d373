#pragma once
// Task: a unit of work, and the task state machine of design.md §1.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

enum class TaskStatus {
  kBlocked,
  kReady,
  kRunning,
  kReview,
  kApproved,
  kDone,
  kFailed,
  kCancelled,
  kWaiting,  // its agent asked a person a question (tx task ask); an answer sends it back
};

std::string_view ToString(TaskStatus s);
// Accepts the canonical names and the source notes' aliases (todo, in-progress, active, claimed,
// in_review, completed). An unknown name is an invalid argument listing the accepted ones.
Result<TaskStatus> ParseTaskStatus(std::string_view name);
bool IsTerminal(TaskStatus s);  // done, failed, cancelled

// Why a status change happens; the transition table is keyed by it.
enum class TaskEvent {
  kUnblock,          // blocked -> ready: every after[] task is done
  kClaim,            // ready -> running
  kSucceed,          // running -> done
  kSubmitReview,     // running -> review
  kAttemptFailed,    // running -> ready (retry with backoff) or failed (attempts exhausted)
  kRequeue,          // running -> ready: lease expired, worker dead, released, orphaned
  kApprove,          // review -> approved
  kRequestChanges,   // review -> ready
  kMerge,            // approved -> done
  kMergeRefused,     // approved -> ready: the merge met a conflict or a failing check
  kCancel,           // any non-terminal -> cancelled
  kRetry,            // failed / cancelled -> ready (or blocked while after[] is not done)
  kForceDone,        // operator override: any non-terminal -> done
  kForceFail,        // operator override: any non-terminal -> failed
  kForceReview,      // operator override: running -> review
  kBudgetSpent,      // running / ready -> failed: the task's agent budget is spent (not retried)
  kAsk,              // running -> waiting: its agent asked a person a question (tx task ask)
  kAnswer,           // waiting -> ready (or blocked while after[] is not done): a person answered
  kQuestionExpired,  // waiting -> failed: unanswered past [orchestrator] question_timeout
};

std::string_view ToString(TaskEvent e);

// True when the transition table allows `event` to move a task from `from` to `to`.
bool IsAllowed(TaskStatus from, TaskEvent event, TaskStatus to);
// The same as a Status: a conflict naming the task, its state and what was attempted.
Status CheckTransition(std::string_view task_id, TaskStatus from, TaskEvent event, TaskStatus to);

// A task's timeout when it names none.
inline constexpr Millis kDefaultTaskTimeoutMs = 30 * 60'000;
// How long a task may wait in review before the reconciler marks it overdue, unless configured.
inline constexpr Millis kDefaultReviewTimeoutMs = 60 * 60'000;

struct Task {
  std::string id;
  std::int64_t seq = 0;  // insertion order, for FIFO among equal priorities (set by the store)
  std::string title;
  std::string description;
  std::string instructions;
  std::string deliverables;
  std::vector<std::string> steps;
  std::int64_t priority = 0;
  std::string queue = "default";
  std::vector<std::string> requires_caps;  // "requires" on the wire
  std::vector<std::string> after;
  std::string owner;  // pin to a worker name or slot; empty = anyone
  std::string workdir;
  std::vector<std::string> command;  // argv of a plain job
  std::string agent;                 // a named agent profile
  Millis timeout_ms = kDefaultTaskTimeoutMs;
  int max_attempts = 3;
  bool review = false;
  std::string repo;
  std::string base_branch;
  nlohmann::json metadata = nlohmann::json::object();
  std::string result;
  std::string error;
  TaskStatus status = TaskStatus::kReady;
  int attempt = 0;  // attempts counted against max_attempts
  Millis run_after = 0;
  Millis created_at = 0;
  Millis updated_at = 0;
  Millis started_at = 0;   // 0 = never
  Millis finished_at = 0;  // 0 = not finished
};

// Whether the task asks to be merged without a person's approval once its branch passes the
// check (metadata.auto_merge = true; tx task add --auto-merge). docs/git.md.
bool AsksForAutoMerge(const Task& task);

// The task's agent budget in USD (metadata.budget_usd; tx task add --budget-usd): once its
// attempts together have cost it, no new attempt starts (docs/agents.md). 0 = none.
double BudgetUsd(const Task& task);

}  // namespace tx
