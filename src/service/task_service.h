#pragma once
// TaskService: adding, listing, showing, editing, cancelling and retrying tasks, and the
// operator's forced outcomes. Every method is one store transaction; a refused call writes
// nothing.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/claim.h"
#include "core/clock.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"
#include "service/claim_service.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::service {

struct TaskDetail {
  Task task;
  std::vector<Claim> attempts;
  std::vector<AttemptUsage> usage;  // the agents' attempts' rows of the ledger, by token
};

// Fields an update may change; unset fields stay as they are.
struct TaskPatch {
  std::optional<std::string> title;
  std::optional<std::int64_t> priority;
  std::optional<std::vector<std::string>> after;
  std::optional<nlohmann::json> metadata_merge;  // merged into metadata (RFC 7386)
};

class TaskService {
 public:
  TaskService(store::Store& store, const Clock& clock, ServiceOptions options = {});

  // Adds a task: validates every field, checks that each after[] id exists (not_found), assigns
  // a fresh id, and starts it `ready`, or `blocked` while an after[] task is not done.
  Result<Task> Add(Task draft);
  // Adds many tasks in one transaction (all or nothing).
  Result<std::vector<Task>> AddMany(std::vector<Task> drafts);

  Result<std::vector<Task>> List(const store::TaskFilter& filter);
  Result<TaskDetail> Show(std::string_view id);
  Result<std::vector<store::StatusCount>> Counts();
  // The titles of the tasks these workers are running, by task id, read in one transaction (the
  // heartbeat document shows them). A task that has gone is left out.
  Result<std::map<std::string, std::string>> CurrentTitles(const std::vector<Worker>& workers);
  // Of these tasks, the waiting ones (ready or blocked) that no running worker could claim, by
  // id, with the reason (core/claimable.h). One read of the live workers.
  Result<std::map<std::string, std::string>> Unclaimable(const std::vector<Task>& tasks);

  // Changes title, priority, after[] (refusing unknown ids and cycles) or merges metadata. A
  // task whose after[] changes moves between `ready` and `blocked` accordingly.
  Result<Task> Update(std::string_view id, const TaskPatch& patch);

  // Any non-terminal task (a waiting one too) -> cancelled; an active claim ends `cancelled`, so
  // its holder's next renewal or report is refused.
  Result<Task> Cancel(std::string_view id, const std::string& note);

  // failed / cancelled -> ready (or blocked while after[] is not done), with a fresh attempt
  // budget. The next attempt resumes the agent's last session (docs/agents.md) with the note
  // (or, without one, the failure) as its prompt, unless `fresh`.
  Result<Task> Retry(std::string_view id, const std::string& note = "", bool fresh = false);

  // A person answers the question a task's agent asked (ClaimService::Ask): waiting -> ready, or
  // blocked while after[] is not done; the answer is recorded beside its question in
  // metadata.questions, and the next attempt resumes the agent's session with the question and
  // the answer as its prompt (a fresh prompt lists them too: docs/agents.md). It is not claimed
  // sooner than ClaimService::kReportedFailureRetryMs after the question, the time its worker
  // takes to stop the asking agent. Event task.answered {"answer", "question"}.
  // conflict: the task is not waiting. invalid_argument: a blank or oversized answer.
  Result<Task> Answer(std::string_view id, const std::string& answer);

  // A reviewer's verdict on a task in `review`. Approve: `approved`, and — a task with no
  // repository having no branch to merge — on to `done` in the same transaction (events
  // task.approved then task.done). RequestChanges: back to `ready` on the same
  // attempt budget, the note appended to metadata.review_notes, which the next prompt shows.
  // conflict: the task is not in review.
  Result<Task> Approve(std::string_view id, const std::string& note);
  // The next attempt resumes the agent's session with the note as its prompt, unless `fresh`.
  Result<Task> RequestChanges(std::string_view id, const std::string& note, bool fresh = false);

  // The end of a merge of an approved task's branch (worker/merge.h), which happens in git
  // before either is called. Merged: `done` (events task.merged, with `merge`, then task.done).
  // MergeRefused: back to `ready` on the same attempt budget, `why` (the conflict, or the failing
  // check's output) appended to metadata.review_notes for the next prompt (task.merge_refused).
  // conflict: the task is not approved. A task in review that asks for auto-merge
  // (AsksForAutoMerge) is taken as approved by its green check: Merged records task.approved
  // (note "auto-merge on a green check") and the merge in one transaction, and MergeRefused sends
  // it back from review.
  Result<Task> Merged(std::string_view id, const nlohmann::json& merge);
  Result<Task> MergeRefused(std::string_view id, const std::string& why);

  // The operator's override (--force): records the outcome without the token, ending any active
  // claim as `forced` so its holder is refused from then on. Recorded in the event as forced.
  Result<Task> ForceOutcome(std::string_view id, Outcome outcome, const std::string& text);

 private:
  // review (or approved) -> ready with `note` for the next prompt: RequestChanges, MergeRefused.
  Result<Task> SendBack(std::string_view id, const std::string& note, TaskEvent event,
                        const char* event_type, bool fresh = false);
  Status Insert(store::Txn& txn, Task& task, Millis now);

  store::Store& store_;
  const Clock& clock_;
  ServiceOptions options_;
};

}  // namespace tx::service
