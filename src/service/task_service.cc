#include "service/task_service.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

#include "core/claimable.h"
#include "core/duration.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/question.h"
#include "core/validation.h"
#include "service/lifecycle.h"

namespace tx::service {

using detail::Emit;
using detail::LoadTask;

TaskService::TaskService(store::Store& store, const Clock& clock, ServiceOptions options)
    : store_(store), clock_(clock), options_(WithDefaults(std::move(options))) {}

Status TaskService::Insert(store::Txn& txn, Task& t, Millis now, const std::string& parent) {
  TX_RETURN_IF_ERROR(ValidateNewTask(t, options_.limits));
  std::set<std::string> seen;
  for (const auto& dep : t.after) {
    if (!seen.insert(dep).second) {
      return Error::InvalidArgument("task " + dep + " appears twice in --after");
    }
  }
  for (const auto& dep : t.after) {
    TX_ASSIGN_OR_RETURN(std::optional<Task> d, txn.GetTask(dep));
    if (!d) return Error::NotFound("task " + dep + " (in --after) not found");
  }
  TX_ASSIGN_OR_RETURN(bool deps_done, detail::DependenciesDone(txn, t.after));
  t.status = deps_done ? TaskStatus::kReady : TaskStatus::kBlocked;
  t.attempt = 0;
  t.created_at = t.updated_at = t.run_after = now;
  t.started_at = t.finished_at = 0;
  t.result.clear();
  t.error.clear();
  // The thread's next id; if it is taken (the insert finds out as it writes), one from a new run.
  for (int tries = 0;; ++tries) {
    t.id = NewTaskId();
    TX_ASSIGN_OR_RETURN(bool inserted, txn.InsertNewTask(t));
    if (inserted) break;
    if (tries > 8) return Error::Internal("could not find a free task id");
    RestartTaskIds();
  }
  // The event's data written out (keys in order, as a json object's dump would): a bulk add
  // spends no time building an object per task.
  std::string data = "{";
  if (!parent.empty()) {
    data += "\"parent\":";
    AppendJsonString(data, parent);
    data += ',';
  }
  data += "\"priority\":" + std::to_string(t.priority) + ",\"queue\":";
  AppendJsonString(data, t.queue);
  data += ",\"status\":\"";
  data += ToString(t.status);
  data += "\",\"title\":";
  AppendJsonString(data, t.title);
  data += '}';
  return detail::EmitData(txn, now, "task.created", t.id, "", data);
}

namespace {

// Backpressure (tx orchestrator start --max-queue-depth): while an orchestrator runs with a
// limit, adding `adding` tasks that would take the ready queue past it is refused. With several
// orchestrators on one store, the smallest limit among those running holds.
// `counted` of the tasks being added are already in the ready count (AddEach checks the room
// after inserting them).
Status CheckQueueRoom(store::Txn& txn, std::size_t adding, const ServiceOptions& options,
                      Millis now, std::int64_t counted = 0) {
  TX_ASSIGN_OR_RETURN(std::vector<OrchestratorState> all, txn.ListOrchestrators());
  std::int64_t max = 0;
  for (const auto& o : all) {
    // A limit left behind by an orchestrator that is gone (even by kill -9) no longer applies.
    if (o.status == "stopped" || !options.orchestrator_alive(o, now)) continue;
    auto it = o.config.find("max_queue_depth");
    if (it == o.config.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0) {
      continue;
    }
    std::int64_t limit = it->get<std::int64_t>();
    max = max == 0 ? limit : std::min(max, limit);
  }
  if (max == 0) return Ok();
  TX_ASSIGN_OR_RETURN(std::int64_t ready, txn.CountReadyTasks());
  ready -= counted;
  if (ready + static_cast<std::int64_t>(adding) > max) {
    return Error::Backpressure(
        "queue full: " + std::to_string(ready) + " tasks ready of " + std::to_string(max) +
        " allowed (max-queue-depth); " +
        (adding > 1 ? std::to_string(adding) + " more refused" : std::string("try again later")));
  }
  return Ok();
}

}  // namespace

Result<Task> TaskService::Add(Task draft) {
  Millis now = clock_.NowMs();
  if (draft.timeout_ms <= 0) draft.timeout_ms = options_.default_task_timeout_ms;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_RETURN_IF_ERROR(CheckQueueRoom(txn, 1, options_, now));
    return Insert(txn, draft, now);
  }));
  return draft;
}

Result<TaskService::Added> TaskService::AddAndCheck(Task draft) {
  Millis now = clock_.NowMs();
  if (draft.timeout_ms <= 0) draft.timeout_ms = options_.default_task_timeout_ms;
  Added out;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_RETURN_IF_ERROR(CheckQueueRoom(txn, 1, options_, now));
    TX_RETURN_IF_ERROR(Insert(txn, draft, now));
    out.unclaimable.reset();  // a retried transaction starts again
    if (draft.status != TaskStatus::kReady && draft.status != TaskStatus::kBlocked) return Ok();
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, txn.ListWorkers(LiveWorkerStatuses()));
    out.unclaimable = WhyNoWorkerCanClaim(draft, live, clock_.Now());
    return Ok();
  }));
  out.task = std::move(draft);
  return out;
}

Result<std::vector<Task>> TaskService::AddMany(std::vector<Task> drafts,
                                               const std::vector<std::string>& labels) {
  Millis now = clock_.NowMs();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_RETURN_IF_ERROR(CheckQueueRoom(txn, drafts.size(), options_, now));
    for (std::size_t i = 0; i < drafts.size(); ++i) {
      Task& t = drafts[i];
      if (t.timeout_ms <= 0) t.timeout_ms = options_.default_task_timeout_ms;
      Status inserted = Insert(txn, t, now);
      if (!inserted.ok() && i < labels.size()) {
        return Error(inserted.error().code(), labels[i] + ": " + inserted.error().message());
      }
      TX_RETURN_IF_ERROR(inserted);
    }
    return Ok();
  }));
  return drafts;
}

Result<std::size_t> TaskService::AddEach(const DraftAt& draft_at, std::size_t expected) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<std::size_t> {
    if (expected > 0) TX_RETURN_IF_ERROR(CheckQueueRoom(txn, expected, options_, now));
    std::int64_t ready = 0;
    std::string label;
    for (std::size_t i = 0;; ++i) {
      TX_ASSIGN_OR_RETURN(Task * t, draft_at(i, label));
      if (t == nullptr) {
        if (i != expected) TX_RETURN_IF_ERROR(CheckQueueRoom(txn, i, options_, now, ready));
        return i;
      }
      if (t->timeout_ms <= 0) t->timeout_ms = options_.default_task_timeout_ms;
      Status inserted = Insert(txn, *t, now);
      if (!inserted.ok()) {
        return Error(inserted.error().code(), label + ": " + inserted.error().message());
      }
      if (t->status == TaskStatus::kReady) ++ready;
    }
  });
}

Result<Task> TaskService::AddSubtask(std::string_view parent_id, std::int64_t token, Task draft,
                                     const SubtaskLimits& limits) {
  const Moment now = clock_.Now();
  if (draft.timeout_ms <= 0) draft.timeout_ms = options_.default_task_timeout_ms;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    Claim claim;
    Task parent;
    TX_RETURN_IF_ERROR(detail::CheckToken(txn, parent_id, token, now, claim, parent));
    int depth = 0;
    if (auto it = parent.metadata.find("depth"); it != parent.metadata.end()) {
      if (it->is_number_integer()) depth = it->get<int>();
    }
    if (depth >= limits.max_depth) {
      return Error::Conflict("task " + parent.id + " is a subtask " + std::to_string(depth) +
                             " levels deep: a subtask of it would pass the limit of " +
                             std::to_string(limits.max_depth) + " levels");
    }
    nlohmann::json& subtasks = parent.metadata["subtasks"];
    if (!subtasks.is_array()) subtasks = nlohmann::json::array();
    if (static_cast<std::int64_t>(subtasks.size()) >= limits.max_subtasks) {
      return Error::Backpressure("task " + parent.id + " has " + std::to_string(subtasks.size()) +
                                 " subtasks already, the most allowed (max_subtasks = " +
                                 std::to_string(limits.max_subtasks) + ")");
    }
    if (!draft.metadata.is_object()) draft.metadata = nlohmann::json::object();
    draft.metadata.erase("subtasks");
    draft.metadata["parent"] = parent.id;
    draft.metadata["depth"] = depth + 1;
    TX_RETURN_IF_ERROR(CheckQueueRoom(txn, 1, options_, now));
    TX_RETURN_IF_ERROR(Insert(txn, draft, now, parent.id));
    subtasks.push_back(draft.id);
    parent.updated_at = now;
    return txn.UpdateTask(parent);
  }));
  return draft;
}

Result<NoteResult> TaskService::Note(std::string_view task_id, std::int64_t token,
                                     const std::string& text) {
  if (text.empty()) return Error::InvalidArgument("a note needs some text");
  if (text.size() > kMaxNoteBytes) {
    return Error::InvalidArgument("a note is at most " + std::to_string(kMaxNoteBytes) +
                                  " bytes (this one has " + std::to_string(text.size()) + ")");
  }
  const Moment now = clock_.Now();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<NoteResult> {
    Claim claim;
    Task task;
    TX_RETURN_IF_ERROR(detail::CheckToken(txn, task_id, token, now, claim, task));
    nlohmann::json& notes = task.metadata["notes"];
    if (!notes.is_array()) notes = nlohmann::json::array();
    notes.push_back({{"at", FormatTime(now)}, {"attempt", claim.attempt}, {"text", text}});
    if (notes.size() > kMaxNotes) notes.erase(notes.begin(), notes.end() - kMaxNotes);
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.note", task.id, claim.worker_id,
                            {{"attempt", claim.attempt}, {"token", token}, {"text", text}}));
    return NoteResult{std::move(task), claim.attempt};
  });
}

Result<std::vector<Task>> TaskService::List(const store::TaskFilter& filter) {
  std::vector<Task> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListTasks(filter));
    return Ok();
  }));
  return out;
}

Result<TaskDetail> TaskService::Show(std::string_view id) {
  TaskDetail out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out.task, LoadTask(txn, id));
    TX_ASSIGN_OR_RETURN(out.attempts, txn.ListClaimsForTask(id));
    TX_ASSIGN_OR_RETURN(out.usage, txn.ListUsageForTask(id));
    return Ok();
  }));
  return out;
}

Result<std::map<std::string, std::string>> TaskService::CurrentTitles(
    const std::vector<Worker>& workers) {
  std::map<std::string, std::string> titles;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    for (const auto& w : workers) {
      if (w.current_task_id.empty() || titles.contains(w.current_task_id)) continue;
      TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(w.current_task_id));
      if (t) titles[w.current_task_id] = t->title;
    }
    return Ok();
  }));
  return titles;
}

Result<std::map<std::string, std::string>> TaskService::Unclaimable(
    const std::vector<Task>& tasks) {
  std::map<std::string, std::string> out;
  bool waiting = std::any_of(tasks.begin(), tasks.end(), [](const Task& t) {
    return t.status == TaskStatus::kReady || t.status == TaskStatus::kBlocked;
  });
  if (!waiting) return out;
  std::vector<Worker> live;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(live, txn.ListWorkers(LiveWorkerStatuses()));
    return Ok();
  }));
  const Moment now = clock_.Now();
  for (const auto& t : tasks) {
    if (t.status != TaskStatus::kReady && t.status != TaskStatus::kBlocked) continue;
    if (std::optional<std::string> why = WhyNoWorkerCanClaim(t, live, now)) out[t.id] = *why;
  }
  return out;
}

Result<std::vector<store::StatusCount>> TaskService::Counts() {
  std::vector<store::StatusCount> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.CountTasks());
    return Ok();
  }));
  return out;
}

namespace {
// Refuses an after[] that would make `id` (transitively) depend on itself.
Status CheckNoCycle(store::Txn& txn, const std::string& id, const std::vector<std::string>& after) {
  std::set<std::string> visited;
  std::vector<std::string> stack(after.begin(), after.end());
  while (!stack.empty()) {
    std::string cur = stack.back();
    stack.pop_back();
    if (cur == id) {
      return Error::InvalidArgument("dependency cycle: task " + id +
                                    " would (transitively) wait on itself");
    }
    if (!visited.insert(cur).second) continue;
    TX_ASSIGN_OR_RETURN(std::optional<Task> t, txn.GetTask(cur));
    if (t) stack.insert(stack.end(), t->after.begin(), t->after.end());
  }
  return Ok();
}
}  // namespace

Result<Task> TaskService::Update(std::string_view id, const TaskPatch& patch) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    nlohmann::json changed = nlohmann::json::object();
    if (patch.title) {
      task.title = *patch.title;
      changed["title"] = task.title;
    }
    if (patch.priority) {
      task.priority = *patch.priority;
      changed["priority"] = task.priority;
    }
    if (patch.metadata_merge) {
      task.metadata.merge_patch(*patch.metadata_merge);
      if (!task.metadata.is_object()) task.metadata = nlohmann::json::object();
      changed["metadata"] = *patch.metadata_merge;
    }
    if (patch.after) {
      std::set<std::string> seen;
      for (const auto& dep : *patch.after) {
        if (!LooksLikeTaskId(dep)) {
          return Error::InvalidArgument("invalid task id '" + dep + "' in --after");
        }
        if (!seen.insert(dep).second) {
          return Error::InvalidArgument("task " + dep + " appears twice in --after");
        }
      }
      for (const auto& dep : *patch.after) {
        TX_ASSIGN_OR_RETURN(std::optional<Task> d, txn.GetTask(dep));
        if (!d) return Error::NotFound("task " + dep + " (in --after) not found");
      }
      TX_RETURN_IF_ERROR(CheckNoCycle(txn, task.id, *patch.after));
      task.after = *patch.after;
      TX_RETURN_IF_ERROR(txn.ReplaceDependencies(task.id, task.after));
      changed["after"] = task.after;
      TX_ASSIGN_OR_RETURN(bool done, detail::DependenciesDone(txn, task.after));
      if (task.status == TaskStatus::kReady && !done) {
        task.status = TaskStatus::kBlocked;
      } else if (task.status == TaskStatus::kBlocked && done) {
        task.status = TaskStatus::kReady;
        task.run_after = now;
      }
    }
    TX_RETURN_IF_ERROR(ValidateNewTask(task, options_.limits));
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.updated", task.id, "", changed));
    return task;
  });
}

Result<Task> TaskService::Cancel(std::string_view id, const std::string& note) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kCancel, TaskStatus::kCancelled));
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetActiveClaimForTask(task.id));
    if (claim) {
      TX_RETURN_IF_ERROR(
          detail::EndClaim(txn, *claim, ClaimStatus::kReleased, EndReason::kCancelled, now));
      txn.WakeWatchersOnCommit();  // its worker stops the agent now, not at its next heartbeat
    }
    task.status = TaskStatus::kCancelled;
    task.finished_at = now;
    task.updated_at = now;
    if (!note.empty()) task.error = note;
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "task.cancelled", task.id, claim ? claim->worker_id : "", {{"note", note}}));
    return task;
  });
}

namespace {

// What the next attempt's agent is told when it resumes its session (docs/agents.md): the note
// of a retry or of requested changes, kept with how many attempts had run (a later attempt does
// not repeat it); and, with `fresh`, that no session before now is resumed.
Status NoteForNextAttempt(store::Txn& txn, Task& task, const std::string& note, bool fresh) {
  TX_ASSIGN_OR_RETURN(int attempts, txn.CountClaimsForTask(task.id));
  if (!note.empty()) task.metadata["next_note"] = {{"text", note}, {"after_attempt", attempts}};
  if (fresh) {
    task.metadata["fresh_after_attempt"] = attempts;
  }
  return Ok();
}

}  // namespace

Result<Task> TaskService::Retry(std::string_view id, const std::string& note, bool fresh) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    TX_ASSIGN_OR_RETURN(bool done, detail::DependenciesDone(txn, task.after));
    TaskStatus to = done ? TaskStatus::kReady : TaskStatus::kBlocked;
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, TaskEvent::kRetry, to));
    // A task whose attempts spent its budget would fail again at its next claim.
    if (double budget = BudgetUsd(task); budget > 0) {
      TX_ASSIGN_OR_RETURN(double spent, txn.TaskCost(task.id));
      if (spent >= budget) {
        char why[200];
        std::snprintf(why, sizeof why,
                      "task %s has spent its budget ($%.2f of $%.2f): raise metadata.budget_usd "
                      "first (tx task update %s --metadata '{\"budget_usd\": N}')",
                      task.id.c_str(), spent, budget, task.id.c_str());
        return Error::Conflict(why);
      }
    }
    std::string error = task.error;
    task.status = to;
    task.attempt = 0;
    task.run_after = now;
    task.finished_at = 0;
    task.error.clear();
    task.updated_at = now;
    // The failure the next attempt resumes from, when no note says more.
    if (!error.empty()) task.metadata["last_error"] = error;
    TX_RETURN_IF_ERROR(NoteForNextAttempt(txn, task, note, fresh));
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.retried", task.id, "",
                            {{"status", ToString(to)}, {"note", note}, {"fresh", fresh}}));
    return task;
  });
}

Result<Task> TaskService::Answer(std::string_view id, const std::string& answer) {
  TX_RETURN_IF_ERROR(ValidateQuestionText("answer", answer, options_.limits.max_text));
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    if (task.status != TaskStatus::kWaiting) {
      return Error::Conflict("task " + task.id + " is " + std::string(ToString(task.status)) +
                             ", not waiting for an answer");
    }
    TX_ASSIGN_OR_RETURN(bool done, detail::DependenciesDone(txn, task.after));
    TaskStatus to = done ? TaskStatus::kReady : TaskStatus::kBlocked;
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, TaskEvent::kAnswer, to));
    std::optional<Question> open = OpenQuestion(task);
    TX_RETURN_IF_ERROR(AnswerOpenQuestion(task, answer, now));
    task.status = to;
    // The asking agent may still be exiting: its next attempt does not start beside it.
    task.run_after = std::max(now, open->asked_at + ClaimService::kReportedFailureRetryMs);
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.answered", task.id, "",
                            {{"answer", answer}, {"question", open->question}}));
    return task;
  });
}

Result<Task> TaskService::Approve(std::string_view id, const std::string& note) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    TX_RETURN_IF_ERROR(
        CheckTransition(task.id, task.status, TaskEvent::kApprove, TaskStatus::kApproved));
    task.status = TaskStatus::kApproved;
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTaskState(task));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.approved", task.id, "", {{"note", note}}));
    if (task.repo.empty()) {
      TX_RETURN_IF_ERROR(
          CheckTransition(task.id, task.status, TaskEvent::kMerge, TaskStatus::kDone));
      TX_RETURN_IF_ERROR(detail::FinishDone(txn, task, task.result, now, ""));
    }
    return task;
  });
}

Result<Task> TaskService::Merged(std::string_view id, const nlohmann::json& merge) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    if (task.status == TaskStatus::kReview && AsksForAutoMerge(task)) {
      // Auto-merge: the green check is the approval, recorded with the merge it allowed.
      TX_RETURN_IF_ERROR(
          CheckTransition(task.id, task.status, TaskEvent::kApprove, TaskStatus::kApproved));
      task.status = TaskStatus::kApproved;
      TX_RETURN_IF_ERROR(
          Emit(txn, now, "task.approved", task.id, "", {{"note", "auto-merge on a green check"}}));
    }
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, TaskEvent::kMerge, TaskStatus::kDone));
    TX_RETURN_IF_ERROR(Emit(txn, now, "task.merged", task.id, "", merge));
    TX_RETURN_IF_ERROR(detail::FinishDone(txn, task, task.result, now, ""));
    return task;
  });
}

Result<Task> TaskService::MergeRefused(std::string_view id, const std::string& why) {
  return SendBack(id, why, TaskEvent::kMergeRefused, "task.merge_refused");
}

Result<Task> TaskService::RequestChanges(std::string_view id, const std::string& note, bool fresh) {
  return SendBack(id, note, TaskEvent::kRequestChanges, "task.changes_requested", fresh);
}

Result<Task> TaskService::SendBack(std::string_view id, const std::string& note, TaskEvent event,
                                   const char* event_type, bool fresh) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    TaskStatus to = TaskStatus::kReady;
    // An auto-merge refused is refused straight from review (nobody approved it).
    TaskEvent checked = event == TaskEvent::kMergeRefused && task.status == TaskStatus::kReview &&
                                AsksForAutoMerge(task)
                            ? TaskEvent::kRequestChanges
                            : event;
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, checked, to));
    if (!note.empty()) {
      nlohmann::json& notes = task.metadata["review_notes"];
      if (!notes.is_array()) notes = nlohmann::json::array();
      notes.push_back(note);
    }
    TX_RETURN_IF_ERROR(NoteForNextAttempt(txn, task, note, fresh));
    task.status = to;
    task.run_after = now;
    task.updated_at = now;
    TX_RETURN_IF_ERROR(txn.UpdateTask(task));
    nlohmann::json data = {{"note", note}};
    if (fresh) data["fresh"] = true;
    TX_RETURN_IF_ERROR(Emit(txn, now, event_type, task.id, "", std::move(data)));
    return task;
  });
}

Result<Task> TaskService::ForceOutcome(std::string_view id, Outcome outcome,
                                       const std::string& text) {
  Millis now = clock_.NowMs();
  return store_.WriteReturning([&](store::Txn& txn) -> Result<Task> {
    TX_ASSIGN_OR_RETURN(Task task, LoadTask(txn, id));
    TaskEvent event = outcome == Outcome::kDone     ? TaskEvent::kForceDone
                      : outcome == Outcome::kReview ? TaskEvent::kForceReview
                                                    : TaskEvent::kForceFail;
    TaskStatus to = outcome == Outcome::kDone     ? TaskStatus::kDone
                    : outcome == Outcome::kReview ? TaskStatus::kReview
                                                  : TaskStatus::kFailed;
    TX_RETURN_IF_ERROR(CheckTransition(task.id, task.status, event, to));
    TX_ASSIGN_OR_RETURN(std::optional<Claim> claim, txn.GetActiveClaimForTask(task.id));
    std::string worker_id;
    if (claim) {
      worker_id = claim->worker_id;
      TX_RETURN_IF_ERROR(
          detail::EndClaim(txn, *claim, ClaimStatus::kReleased, EndReason::kForced, now));
      txn.WakeWatchersOnCommit();  // its worker stops the agent now, not at its next heartbeat
    }
    TX_RETURN_IF_ERROR(
        Emit(txn, now, "task.forced", task.id, worker_id,
             {{"outcome", ToString(outcome)},
              {"revoked_token", claim ? nlohmann::json(claim->token) : nlohmann::json()}}));
    if (to == TaskStatus::kDone) {
      TX_RETURN_IF_ERROR(detail::FinishDone(txn, task, text, now, worker_id));
    } else {
      task.status = to;
      task.updated_at = now;
      if (to == TaskStatus::kFailed) {
        task.error = text;
        task.finished_at = now;
      } else {
        task.result = text;
      }
      // Into review: the last review's overdue mark goes (the reconciler's, reconciler.h).
      bool rewrite = to == TaskStatus::kReview && task.metadata.erase("review_overdue_at") > 0;
      TX_RETURN_IF_ERROR(rewrite ? txn.UpdateTask(task) : txn.UpdateTaskState(task));
      TX_RETURN_IF_ERROR(Emit(txn, now, to == TaskStatus::kFailed ? "task.failed" : "task.review",
                              task.id, worker_id, {{"forced", true}}));
    }
    return task;
  });
}

}  // namespace tx::service
