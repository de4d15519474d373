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

}  // namespace
}  // namespace tx::service
