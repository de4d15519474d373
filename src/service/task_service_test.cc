#include "service/task_service.h"

#include <algorithm>

#include "core/ids.h"
#include "service/service_test_util.h"

namespace tx::service {
namespace {

class TaskServiceTest : public ServiceTest {};

TEST_F(TaskServiceTest, AddStartsReadyWithAFreshIdAndAnEvent) {
  Task t = AddTask("first");
  EXPECT_TRUE(LooksLikeTaskId(t.id)) << t.id;
  EXPECT_EQ(t.status, TaskStatus::kReady);
  EXPECT_EQ(t.timeout_ms, 30 * 60'000);
  EXPECT_EQ(t.max_attempts, 3);
  EXPECT_EQ(EventTypes(), std::vector<std::string>{"task.created"});
}

TEST_F(TaskServiceTest, AddWithUnfinishedDependenciesStartsBlocked) {
  Task a = AddTask("a");
  Task b = AddTask("b", 0, {a.id});
  EXPECT_EQ(b.status, TaskStatus::kBlocked);
}

TEST_F(TaskServiceTest, AddRefusesAnUnknownDependencyAndWritesNothing) {
  Task t;
  t.title = "orphan";
  t.after = {"task-zzzzzzzz"};
  EXPECT_ERROR_CODE(tasks_.Add(t), ErrorCode::kNotFound);
  EXPECT_TRUE(tasks_.List({}).value().empty());
  EXPECT_EQ(EventCount(), 0);
}

TEST_F(TaskServiceTest, AddRefusesInvalidFieldsAndWritesNothing) {
  Task t;
  t.title = "bad queue";
  t.queue = "no spaces please";
  EXPECT_ERROR_CODE(tasks_.Add(t), ErrorCode::kInvalidArgument);
  t.queue = "default";
  t.after = {"task-aaaaaaaa", "task-aaaaaaaa"};
  EXPECT_ERROR_CODE(tasks_.Add(t), ErrorCode::kInvalidArgument);
  EXPECT_EQ(EventCount(), 0);
}

TEST_F(TaskServiceTest, AddManyIsAllOrNothing) {
  std::vector<Task> drafts(3);
  drafts[0].title = "a";
  drafts[1].title = "b";
  drafts[2].title = "";  // invalid
  EXPECT_ERROR_CODE(tasks_.AddMany(drafts), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(tasks_.List({}).value().empty());
  drafts[2].title = "c";
  ASSERT_OK_AND_ASSIGN(auto added, tasks_.AddMany(drafts));
  EXPECT_EQ(added.size(), 3u);
  EXPECT_EQ(tasks_.List({}).value().size(), 3u);
}

// AddEach asks for the drafts one by one, adds them in one transaction, and stops at the first
// refused, named by its label, with nothing written.
TEST_F(TaskServiceTest, AddEachAddsTheDraftsInOrderAndStopsAtTheFirstRefused) {
  std::vector<Task> drafts(3);
  drafts[0].title = "a";
  drafts[1].title = "";  // invalid
  drafts[2].title = "c";
  std::vector<std::size_t> asked;
  auto each = [&](std::size_t i, std::string& label) -> Result<Task*> {
    asked.push_back(i);
    if (i >= drafts.size()) return nullptr;
    label = "draft " + std::to_string(i + 1);
    return &drafts[i];
  };
  auto refused = tasks_.AddEach(each);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message().rfind("draft 2: ", 0), 0u) << refused.error().message();
  EXPECT_EQ(asked, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(tasks_.List({}).value().empty());
  EXPECT_EQ(EventCount(), 0);

  drafts[1].title = "b";
  asked.clear();
  ASSERT_OK_AND_ASSIGN(std::size_t added, tasks_.AddEach(each));
  EXPECT_EQ(added, 3u);
  EXPECT_EQ(asked, (std::vector<std::size_t>{0, 1, 2, 3}));
  auto listed = tasks_.List({}).value();
  ASSERT_EQ(listed.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    // Filled in as Add returns a task, and stored so.
    EXPECT_EQ(drafts[i].status, TaskStatus::kReady);
    EXPECT_EQ(listed[i].id, drafts[i].id);
    EXPECT_EQ(listed[i].title, drafts[i].title);
  }
  EXPECT_EQ(EventCount(), 3);
}

TEST_F(TaskServiceTest, ListFiltersByStatusAndQueue) {
  AddTask("a");
  Task b;
  b.title = "b";
  b.queue = "other";
  ASSERT_OK(tasks_.Add(b));
  Task c = AddTask("c");
  ASSERT_OK(tasks_.Cancel(c.id, ""));
  store::TaskFilter ready;
  ready.status = TaskStatus::kReady;
  EXPECT_EQ(tasks_.List(ready).value().size(), 2u);
  store::TaskFilter other;
  other.queue = "other";
  EXPECT_EQ(tasks_.List(other).value().size(), 1u);
}

TEST_F(TaskServiceTest, UpdateRefusesADependencyCycleAndChangesNothing) {
  Task a = AddTask("a");
  Task b = AddTask("b", 0, {a.id});
  Task c = AddTask("c", 0, {b.id});
  TaskPatch p;
  p.after = std::vector<std::string>{c.id};
  std::int64_t events = EventCount();
  auto r = tasks_.Update(a.id, p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("cycle"), std::string::npos);
  EXPECT_TRUE(Get(a.id).after.empty());
  EXPECT_EQ(EventCount(), events);
  p.after = std::vector<std::string>{a.id};
  EXPECT_ERROR_CODE(tasks_.Update(a.id, p), ErrorCode::kInvalidArgument);  // itself
}

TEST_F(TaskServiceTest, UpdateMovesATaskBetweenReadyAndBlockedAsItsDependenciesChange) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  TaskPatch p;
  p.after = std::vector<std::string>{a.id};
  ASSERT_OK_AND_ASSIGN(Task blocked, tasks_.Update(b.id, p));
  EXPECT_EQ(blocked.status, TaskStatus::kBlocked);
  p.after = std::vector<std::string>{};
  ASSERT_OK_AND_ASSIGN(Task ready, tasks_.Update(b.id, p));
  EXPECT_EQ(ready.status, TaskStatus::kReady);
}

TEST_F(TaskServiceTest, UpdateMergesMetadataAndChangesPriority) {
  Task t;
  t.title = "t";
  t.metadata = {{"keep", 1}, {"drop", 2}};
  ASSERT_OK_AND_ASSIGN(Task added, tasks_.Add(t));
  TaskPatch p;
  p.priority = 9;
  p.metadata_merge = nlohmann::json{{"drop", nullptr}, {"new", "x"}};
  ASSERT_OK_AND_ASSIGN(Task updated, tasks_.Update(added.id, p));
  EXPECT_EQ(updated.priority, 9);
  EXPECT_EQ(updated.metadata, (nlohmann::json{{"keep", 1}, {"new", "x"}}));
}

TEST_F(TaskServiceTest, CancellingARunningTaskRevokesItsClaim) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.Cancel(r.task.id, "not needed"));
  EXPECT_EQ(t.status, TaskStatus::kCancelled);
  EXPECT_ERROR_CODE(claims_.Renew(t.id, r.claim.token), ErrorCode::kConflict);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kCancelled);
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
  EXPECT_ERROR_CODE(tasks_.Cancel(t.id, ""), ErrorCode::kConflict);
}

TEST_F(TaskServiceTest, RetryGivesAFailedTaskAFreshAttemptBudget) {
  Task t;
  t.title = "once";
  t.max_attempts = 1;
  ASSERT_OK(tasks_.Add(t));
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task failed, claims_.Report(r.task.id, r.claim.token, Outcome::kFail, "e"));
  EXPECT_EQ(failed.status, TaskStatus::kFailed);
  ASSERT_OK_AND_ASSIGN(Task retried, tasks_.Retry(failed.id));
  EXPECT_EQ(retried.status, TaskStatus::kReady);
  EXPECT_EQ(retried.attempt, 0);
  EXPECT_TRUE(retried.error.empty());
  ClaimResult again = ClaimNextFor(w);
  EXPECT_EQ(again.claim.attempt, 2);  // attempts[] keeps the whole history
}

TEST_F(TaskServiceTest, RetryOfATaskThatIsNotFailedOrCancelledIsRefused) {
  Task t = AddTask("t");
  EXPECT_ERROR_CODE(tasks_.Retry(t.id), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.Retry("task-zzzzzzzz"), ErrorCode::kNotFound);
}

TEST_F(TaskServiceTest, ForcedDoneRevokesTheClaimSoItsHolderIsRefused) {
  AddTask("t");
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(Task t, tasks_.ForceOutcome(r.task.id, Outcome::kDone, "by hand"));
  EXPECT_EQ(t.status, TaskStatus::kDone);
  EXPECT_ERROR_CODE(claims_.Renew(t.id, r.claim.token), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_.Report(t.id, r.claim.token, Outcome::kDone, ""), ErrorCode::kConflict);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kForced);
  EXPECT_ERROR_CODE(tasks_.ForceOutcome(t.id, Outcome::kDone, ""), ErrorCode::kConflict);
}

TEST_F(TaskServiceTest, ForcedFailOfAReadyTaskFailsIt) {
  Task t = AddTask("t");
  ASSERT_OK_AND_ASSIGN(Task failed, tasks_.ForceOutcome(t.id, Outcome::kFail, "nope"));
  EXPECT_EQ(failed.status, TaskStatus::kFailed);
  EXPECT_EQ(failed.error, "nope");
}

TEST_F(TaskServiceTest, CountsGroupByStatusAndQueue) {
  AddTask("a");
  AddTask("b");
  ASSERT_OK_AND_ASSIGN(auto counts, tasks_.Counts());
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].status, TaskStatus::kReady);
  EXPECT_EQ(counts[0].count, 2);
}

TEST_F(TaskServiceTest, ApprovingAReviewWithNoRepositoryFinishesItAndUnblocksItsDependents) {
  Task a = AddTask("a");
  Task b = AddTask("b", 0, {a.id});
  Worker w = Register();
  ClaimResult r = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(a.id, r.claim.token, Outcome::kReview, "draft"));
  ASSERT_OK_AND_ASSIGN(Task done, tasks_.Approve(a.id, "lgtm"));
  EXPECT_EQ(done.status, TaskStatus::kDone);
  EXPECT_EQ(done.result, "draft");
  EXPECT_EQ(Get(b.id).status, TaskStatus::kReady);
  std::vector<std::string> types = EventTypes();
  auto approved = std::find(types.begin(), types.end(), "task.approved");
  ASSERT_NE(approved, types.end());
  EXPECT_NE(std::find(approved, types.end(), "task.done"), types.end());
  EXPECT_ERROR_CODE(tasks_.Approve(a.id, ""), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.Approve(b.id, ""), ErrorCode::kConflict);  // ready, not in review
}

TEST_F(TaskServiceTest, ApprovingAReviewWithARepositoryLeavesItApprovedForTheMerge) {
  Task t;
  t.title = "on a branch";
  t.review = true;
  t.repo = "/srv/repo";
  ASSERT_OK_AND_ASSIGN(Task added, tasks_.Add(t));
  ClaimResult r = ClaimNextFor(Register());
  ASSERT_OK(claims_.Report(added.id, r.claim.token, Outcome::kDone, ""));
  ASSERT_EQ(Get(added.id).status, TaskStatus::kReview);
  ASSERT_OK_AND_ASSIGN(Task approved, tasks_.Approve(added.id, ""));
  EXPECT_EQ(approved.status, TaskStatus::kApproved);
  EXPECT_EQ(Get(added.id).status, TaskStatus::kApproved);
}

TEST_F(TaskServiceTest, RequestedChangesSendTheTaskBackWithTheNoteOnTheSameBudget) {
  Task a = AddTask("a");
  ClaimResult r = ClaimNextFor(Register());
  ASSERT_OK(claims_.Report(a.id, r.claim.token, Outcome::kReview, "draft"));
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(tasks_.RequestChanges(a.id + "x", "?"), ErrorCode::kNotFound);
  EXPECT_EQ(EventCount(), events);
  ASSERT_OK_AND_ASSIGN(Task back, tasks_.RequestChanges(a.id, "add a test"));
  EXPECT_EQ(back.status, TaskStatus::kReady);
  EXPECT_EQ(back.attempt, 1);
  EXPECT_EQ(back.metadata["review_notes"], nlohmann::json({"add a test"}));
  EXPECT_EQ(Get(a.id).metadata["review_notes"], nlohmann::json({"add a test"}));
  EXPECT_ERROR_CODE(tasks_.RequestChanges(a.id, "again"), ErrorCode::kConflict);
}

TEST_F(TaskServiceTest, AnApprovedBranchMergedIsDoneAndARefusedMergeGoesBackWithTheReason) {
  Task t;
  t.title = "on a branch";
  t.review = true;
  t.repo = "/srv/repo";
  ASSERT_OK_AND_ASSIGN(Task added, tasks_.Add(t));
  Task after = AddTask("after", 0, {added.id});
  ClaimResult r = ClaimNextFor(Register());
  ASSERT_OK(claims_.Report(added.id, r.claim.token, Outcome::kDone, "the fix"));
  // Not yet approved: neither is allowed, and nothing is written.
  std::int64_t events = EventCount();
  EXPECT_ERROR_CODE(tasks_.Merged(added.id, {{"head", "abc"}}), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.MergeRefused(added.id, "conflict"), ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), events);
  ASSERT_OK(tasks_.Approve(added.id, ""));

  ASSERT_OK_AND_ASSIGN(Task back, tasks_.MergeRefused(added.id, "rebase conflicts in: a.txt"));
  EXPECT_EQ(back.status, TaskStatus::kReady);
  EXPECT_EQ(back.attempt, 1);  // the same budget
  EXPECT_EQ(Get(added.id).metadata["review_notes"], nlohmann::json({"rebase conflicts in: a.txt"}));
  EXPECT_EQ(EventTypes().back(), "task.merge_refused");

  ClaimResult again = ClaimNextFor(Register());
  ASSERT_EQ(again.task.id, added.id);
  ASSERT_OK(claims_.Report(added.id, again.claim.token, Outcome::kDone, "resolved"));
  ASSERT_OK(tasks_.Approve(added.id, ""));
  ASSERT_OK_AND_ASSIGN(Task merged, tasks_.Merged(added.id, {{"base", "main"}, {"head", "abc"}}));
  EXPECT_EQ(merged.status, TaskStatus::kDone);
  EXPECT_EQ(merged.result, "resolved");
  EXPECT_EQ(Get(after.id).status, TaskStatus::kReady);  // its dependents go on
  std::vector<std::string> types = EventTypes();
  auto at = std::find(types.begin(), types.end(), "task.merged");
  ASSERT_NE(at, types.end());
  EXPECT_NE(std::find(at, types.end(), "task.done"), types.end());
  EXPECT_ERROR_CODE(tasks_.Merged(added.id, {}), ErrorCode::kConflict);  // once
}

// Auto-merge: a task in review that asks for it is approved by its green check, recorded with the
// merge in one transaction; a refused one goes back from review. One that does not ask is refused.
TEST_F(TaskServiceTest, AnAutoMergeIsApprovedWithItsMergeAndRefusedStraightFromReview) {
  auto in_review = [&](bool auto_merge) {
    Task t;
    t.title = "auto";
    t.review = true;
    t.repo = "/srv/repo";
    if (auto_merge) t.metadata["auto_merge"] = true;
    Task added = tasks_.Add(t).value();
    ClaimResult r = ClaimNextFor(Register());
    EXPECT_EQ(r.task.id, added.id);
    EXPECT_TRUE(claims_.Report(added.id, r.claim.token, Outcome::kDone, "").ok());
    return added.id;
  };
  std::string plain = in_review(false);
  EXPECT_ERROR_CODE(tasks_.Merged(plain, {{"head", "abc"}}), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.MergeRefused(plain, "red"), ErrorCode::kConflict);
  EXPECT_EQ(Get(plain).status, TaskStatus::kReview);

  std::string refused = in_review(true);
  ASSERT_OK_AND_ASSIGN(Task back, tasks_.MergeRefused(refused, "the check failed"));
  EXPECT_EQ(back.status, TaskStatus::kReady);
  EXPECT_EQ(EventTypes().back(), "task.merge_refused");
  ASSERT_OK(tasks_.Cancel(refused, ""));  // out of the way of the next claim

  std::string id = in_review(true);
  std::int64_t before = EventCount();
  ASSERT_OK_AND_ASSIGN(Task merged, tasks_.Merged(id, {{"base", "main"}, {"head", "abc"}}));
  EXPECT_EQ(merged.status, TaskStatus::kDone);
  std::vector<std::string> types;
  for (const auto& e : events_.Since(before).value()) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"task.approved", "task.merged", "task.done"}));
}

// ================================ subtasks and notes (issue 22) =================================

Task Draft(const std::string& title) {
  Task t;
  t.title = title;
  return t;
}

TEST_F(TaskServiceTest, AnAgentAddsASubtaskOfItsOwnTaskFencedByItsToken_Issue22) {
  AddTask("parent");
  ClaimResult held = ClaimNextFor(Register());
  Task draft = Draft("child");
  draft.metadata = {{"depth", 0}, {"parent", "task-forged00"}, {"subtasks", {"x"}}, {"k", 1}};
  ASSERT_OK_AND_ASSIGN(Task child, tasks_.AddSubtask(held.task.id, held.claim.token, draft, {}));
  EXPECT_EQ(child.status, TaskStatus::kReady);
  // What the draft said of its place is overwritten; the rest of its metadata kept.
  EXPECT_EQ(child.metadata, (nlohmann::json{{"depth", 1}, {"parent", held.task.id}, {"k", 1}}));
  EXPECT_EQ(Get(held.task.id).metadata["subtasks"], nlohmann::json::array({child.id}));
  EXPECT_EQ(Get(held.task.id).status, TaskStatus::kRunning);
  auto events = events_.Since(0).value();
  EXPECT_EQ(events.back().type, "task.created");
  EXPECT_EQ(events.back().data["parent"], held.task.id);
}

TEST_F(TaskServiceTest, ASubtaskWithAStaleTokenIsRefusedAndWritesNothing_Issue22) {
  AddTask("parent");
  ClaimResult held = ClaimNextFor(Register());
  ASSERT_OK(claims_.Report(held.task.id, held.claim.token, Outcome::kDone, ""));
  std::int64_t before = EventCount();
  EXPECT_ERROR_CODE(tasks_.AddSubtask(held.task.id, held.claim.token, Draft("late"), {}),
                    ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.AddSubtask(held.task.id, held.claim.token + 7, Draft("forged"), {}),
                    ErrorCode::kConflict);
  EXPECT_ERROR_CODE(tasks_.AddSubtask("task-zzzzzzzz", held.claim.token, Draft("x"), {}),
                    ErrorCode::kNotFound);
  EXPECT_EQ(EventCount(), before);
  EXPECT_EQ(tasks_.List({}).value().size(), 1u);
}

TEST_F(TaskServiceTest, SubtasksPastMaxSubtasksAreRefusedAsBackpressure_Issue22) {
  AddTask("parent");
  ClaimResult held = ClaimNextFor(Register());
  SubtaskLimits limits;
  limits.max_subtasks = 2;
  ASSERT_OK(tasks_.AddSubtask(held.task.id, held.claim.token, Draft("one"), limits));
  ASSERT_OK(tasks_.AddSubtask(held.task.id, held.claim.token, Draft("two"), limits));
  std::int64_t before = EventCount();
  auto third = tasks_.AddSubtask(held.task.id, held.claim.token, Draft("three"), limits);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kBackpressure);
  EXPECT_NE(third.error().message().find("max_subtasks = 2"), std::string::npos)
      << third.error().message();
  EXPECT_EQ(EventCount(), before);
  EXPECT_EQ(tasks_.List({}).value().size(), 3u);
  EXPECT_EQ(Get(held.task.id).metadata["subtasks"].size(), 2u);
}

TEST_F(TaskServiceTest, ASubtaskDeeperThanTwoLevelsIsRefused_Issue22) {
  Task root = AddTask("root", 10);
  ClaimResult r0 = ClaimNextFor(Register("w0"));
  ASSERT_EQ(r0.task.id, root.id);
  SubtaskLimits limits;
  ASSERT_OK_AND_ASSIGN(Task level1, tasks_.AddSubtask(root.id, r0.claim.token, Draft("1"), limits));
  ClaimResult r1 = ClaimNextFor(Register("w1"));
  ASSERT_EQ(r1.task.id, level1.id);
  ASSERT_OK_AND_ASSIGN(Task level2,
                       tasks_.AddSubtask(level1.id, r1.claim.token, Draft("2"), limits));
  EXPECT_EQ(level2.metadata["depth"], 2);
  ClaimResult r2 = ClaimNextFor(Register("w2"));
  ASSERT_EQ(r2.task.id, level2.id);
  std::int64_t before = EventCount();
  auto level3 = tasks_.AddSubtask(level2.id, r2.claim.token, Draft("3"), limits);
  ASSERT_FALSE(level3.ok());
  EXPECT_EQ(level3.error().code(), ErrorCode::kConflict);
  EXPECT_NE(level3.error().message().find("2 levels"), std::string::npos)
      << level3.error().message();
  EXPECT_EQ(EventCount(), before);
  EXPECT_FALSE(Get(level2.id).metadata.contains("subtasks"));
}

TEST_F(TaskServiceTest, ANoteIsKeptInTheMetadataWithAnEventFencedByTheToken_Issue22) {
  AddTask("t");
  ClaimResult held = ClaimNextFor(Register());
  ASSERT_OK_AND_ASSIGN(NoteResult n, tasks_.Note(held.task.id, held.claim.token, "halfway"));
  EXPECT_EQ(n.attempt, 1);
  nlohmann::json notes = Get(held.task.id).metadata["notes"];
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["text"], "halfway");
  EXPECT_EQ(notes[0]["attempt"], 1);
  auto events = events_.Since(0).value();
  EXPECT_EQ(events.back().type, "task.note");
  EXPECT_EQ(events.back().data["text"], "halfway");

  std::int64_t before = EventCount();
  EXPECT_ERROR_CODE(tasks_.Note(held.task.id, held.claim.token, ""), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(
      tasks_.Note(held.task.id, held.claim.token, std::string(kMaxNoteBytes + 1, 'x')),
      ErrorCode::kInvalidArgument);
  ASSERT_OK(claims_.Report(held.task.id, held.claim.token, Outcome::kDone, ""));
  before = EventCount();
  EXPECT_ERROR_CODE(tasks_.Note(held.task.id, held.claim.token, "late"), ErrorCode::kConflict);
  EXPECT_EQ(EventCount(), before);
  EXPECT_EQ(Get(held.task.id).metadata["notes"].size(), 1u);
}

TEST_F(TaskServiceTest, OnlyTheNewestNotesAreKeptInTheMetadata_Issue22) {
  AddTask("t");
  ClaimResult held = ClaimNextFor(Register());
  for (std::size_t i = 0; i < kMaxNotes + 5; ++i) {
    ASSERT_OK(tasks_.Note(held.task.id, held.claim.token, std::to_string(i) + "n"));
  }
  nlohmann::json notes = Get(held.task.id).metadata["notes"];
  ASSERT_EQ(notes.size(), kMaxNotes);
  EXPECT_EQ(notes.front()["text"], "5n");
  EXPECT_EQ(notes.back()["text"], std::to_string(kMaxNotes + 4) + "n");
}

}  // namespace
}  // namespace tx::service

namespace tx::service {
namespace {

class AddAndCheckTest : public ServiceTest {};

// The add's answer to "can a running worker claim it now" is Unclaimable's, in the same
// transaction: none running; one running without the capability; one that can.
TEST_F(AddAndCheckTest, SaysWhyNoRunningWorkerCanClaimTheTaskItAddedAsUnclaimableWould) {
  Task t;
  t.title = "needs a gpu";
  t.requires_caps = {"gpu"};
  auto none = tasks_.AddAndCheck(t);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_EQ(none->task.status, TaskStatus::kReady);
  auto expected = tasks_.Unclaimable({none->task});
  ASSERT_TRUE(expected.ok());
  ASSERT_TRUE(none->unclaimable.has_value());
  EXPECT_EQ(*none->unclaimable, expected->at(none->task.id));

  Register("cpu-only");
  auto lacking = tasks_.AddAndCheck(t);
  ASSERT_TRUE(lacking.ok());
  ASSERT_TRUE(lacking->unclaimable.has_value());
  EXPECT_EQ(*lacking->unclaimable, tasks_.Unclaimable({lacking->task})->at(lacking->task.id));
  EXPECT_NE(*lacking->unclaimable, *none->unclaimable);

  Register("gpu-box", {"gpu"});
  auto fine = tasks_.AddAndCheck(t);
  ASSERT_TRUE(fine.ok());
  EXPECT_FALSE(fine->unclaimable.has_value()) << *fine->unclaimable;
  EXPECT_TRUE(tasks_.Unclaimable({fine->task})->empty());
  auto shown = tasks_.Show(fine->task.id);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->task.title, "needs a gpu");
}

}  // namespace
}  // namespace tx::service
