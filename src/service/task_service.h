#pragma once
// TaskService: adding, listing, showing, editing, cancelling and retrying tasks, and the
// operator's forced outcomes. Every method is one store transaction; a refused call writes
// nothing.

#include <cstddef>
#include <functional>
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

// What an agent may add under its own task (docs/mcp.md): at most `max_subtasks` subtasks per
// task ([worker] max_subtasks), and no deeper than `max_depth` (a subtask is at depth 1, a
// subtask of it at 2).
inline constexpr int kDefaultMaxSubtasks = 10;
inline constexpr int kMaxSubtaskDepth = 2;
struct SubtaskLimits {
  int max_subtasks = kDefaultMaxSubtasks;
  int max_depth = kMaxSubtaskDepth;
};

// An agent's notes on its task: each at most this long; the newest kMaxNotes are kept in
// metadata.notes (every one stays in the event log).
inline constexpr std::size_t kMaxNoteBytes = 4096;
inline constexpr std::size_t kMaxNotes = 100;

// A note recorded on a running task, and the attempt it was made in (whose log it also goes to).
struct NoteResult {
  Task task;
  int attempt = 0;
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
  // Add, and in the same transaction why no running worker could claim the task now
  // (Unclaimable's reason; none when one can): one transaction where the two took two.
  struct Added {
    Task task;
    std::optional<std::string> unclaimable;
  };
  Result<Added> AddAndCheck(Task draft);
  // Adds many tasks in one transaction (all or nothing). An error of one task is prefixed with its
  // label (labels[i], e.g. "line 7: ") when labels are given.
  Result<std::vector<Task>> AddMany(std::vector<Task> drafts,
                                    const std::vector<std::string>& labels = {});
  // The i-th draft of a bulk add and its label ("line 7"), nullptr after the last, or the error
  // that ends the add. Drafts are asked for one at a time, so a caller may still be decoding the
  // later ones while the earlier are inserted; from 0 again if the store runs the transaction
  // again. AddEach fills in each draft as Add returns it (id, status, times).
  using DraftAt = std::function<Result<Task*>(std::size_t i, std::string& label)>;
  // Adds every draft `draft_at` hands over in one transaction (all or nothing). The first draft
  // refused, in order, ends it with its error prefixed by its label. The queue's room
  // (max-queue-depth) is checked for `expected` drafts before the first insert when the caller
  // knows how many there are (a full queue then refuses them before any is decoded or written),
  // otherwise once the last is in, for them all. Returns how many were added.
  Result<std::size_t> AddEach(const DraftAt& draft_at, std::size_t expected = 0);

  // Adds `draft` as a subtask of `parent_id` for the agent that holds the parent's claim: one
  // transaction that checks the claim with `token` (active, unexpired, the parent's), then adds
  // the task as Add does, with metadata.parent (the parent's id) and metadata.depth (the
  // parent's depth + 1) set whatever the draft's metadata says, and appends its id to the
  // parent's metadata.subtasks, whose length is what max_subtasks counts. The task.created event
  // names the parent. conflict: a stale, unknown, expired or foreign token, or a parent already
  // at limits.max_depth; backpressure: the parent already has limits.max_subtasks subtasks (or
  // the queue is full); not_found: no such parent. A refused call writes nothing.
  Result<Task> AddSubtask(std::string_view parent_id, std::int64_t token, Task draft,
                          const SubtaskLimits& limits);

  // An agent's note on its running task, fenced by its claim's `token`: appended to
  // metadata.notes as {"at", "attempt", "text"} (the newest kMaxNotes kept), with a task.note
  // event {"attempt", "text"}. invalid_argument: an empty note or one over kMaxNoteBytes;
  // conflict: a stale, unknown, expired or foreign token. Writes nothing when refused.
  Result<NoteResult> Note(std::string_view task_id, std::int64_t token, const std::string& text);

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

  // The end of a merge of an approved task's branch (git/merge.h), which happens in git
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
  // `parent`: the task a subtask is added under (named in its task.created event), or "".
  Status Insert(store::Txn& txn, Task& task, Millis now, const std::string& parent = "");

  store::Store& store_;
  const Clock& clock_;
  ServiceOptions options_;
};

}  // namespace tx::service
