// Questions from agents (issue 22): ClaimService::Ask, TaskService::Answer and the reconciler's
// question timeout, with a fake clock, on both backends: SQLite (:memory:) and PostgreSQL (a
// fresh database on the server of the ctest fixture `pg`), where `waiting` is a value of the
// task status enum.

#include <gtest/gtest.h>

#include <memory>

#include "core/json.h"
#include "pg_test_db.h"
#include "service/claim_service.h"
#include "service/event_log.h"
#include "service/reconciler.h"
#include "service/task_service.h"
#include "service/worker_service.h"

namespace tx::service {
namespace {

using namespace std::chrono_literals;

#define ASSERT_OK(expr)                           \
  do {                                            \
    auto&& s_ = (expr);                           \
    ASSERT_TRUE(s_.ok()) << s_.error().message(); \
  } while (0)
#define EXPECT_ERROR_CODE(expr, code_)                           \
  do {                                                           \
    auto&& s_ = (expr);                                          \
    ASSERT_FALSE(s_.ok());                                       \
    EXPECT_EQ(s_.error().code(), code_) << s_.error().message(); \
  } while (0)

enum class Backend { kSqlite, kPostgres };

std::string Name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "sqlite" : "postgres";
}
// Names the backend in test output (gtest would print the enum's bytes).
void PrintTo(Backend b, std::ostream* os) {
  *os << (b == Backend::kSqlite ? "sqlite" : "postgres");
}

constexpr Millis kQuestionTimeoutMs = 60 * 60'000;

ServiceOptions Options() {
  ServiceOptions o;
  o.unit_random = [] { return 0.5; };
  o.default_lease_ms = 60'000;
  o.default_heartbeat_interval_ms = 10'000;
  o.question_timeout_ms = kQuestionTimeoutMs;
  return o;
}

class QuestionTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string url = ":memory:";
    if (GetParam() == Backend::kPostgres) {
      pg_ = std::make_unique<testing::PgTestDb>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url = pg_->url();
    }
    auto s = store::Open({url, /*create=*/true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    store_ = std::move(*s);
    tasks_ = std::make_unique<TaskService>(*store_, clock_, Options());
    claims_ = std::make_unique<ClaimService>(*store_, clock_, Options());
    workers_ = std::make_unique<WorkerService>(*store_, clock_, Options());
    reconciler_ = std::make_unique<Reconciler>(*store_, Options());
    events_ = std::make_unique<EventLog>(*store_);
  }
  void TearDown() override {
    events_.reset();
    reconciler_.reset();
    workers_.reset();
    claims_.reset();
    tasks_.reset();
    store_.reset();
    pg_.reset();
  }

  Task AddTask(const std::string& title, int max_attempts = 3) {
    Task t;
    t.title = title;
    t.max_attempts = max_attempts;
    auto r = tasks_->Add(t);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Task{};
  }

  Worker Register() {
    Registration r;
    r.name = "w1";
    auto w = workers_->Register(r);
    EXPECT_TRUE(w.ok()) << w.error().message();
    return w.ok() ? *w : Worker{};
  }

  // Claims the next task for `w`: the claim, or an empty one (failing the test) when none came.
  ClaimResult Claim(const Worker& w) {
    auto r = claims_->ClaimNext(w.id);
    EXPECT_TRUE(r.ok() && r->has_value()) << (r.ok() ? "nothing claimable" : r.error().message());
    return r.ok() && r->has_value() ? **r : ClaimResult{};
  }

  Task Get(const std::string& id) { return tasks_->Show(id).value().task; }
  std::vector<tx::Claim> Attempts(const std::string& id) {
    return tasks_->Show(id).value().attempts;
  }
  std::vector<Event> Events() { return events_->Since(0).value(); }
  std::int64_t LastEvent() { return events_->LastId().value(); }
  const nlohmann::json& Questions(const Task& t) { return t.metadata["questions"]; }

  ReconcileReport Reconcile() {
    auto r = reconciler_->RunOnce(clock_.Now());
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : ReconcileReport{};
  }

  // Everything a refused call could have written: the task, its attempts and the event log.
  std::string Snapshot(const std::string& id) {
    service::TaskDetail d = tasks_->Show(id).value();
    nlohmann::json j = ToJson(d.task, d.attempts);
    j["events"] = LastEvent();
    return j.dump();
  }

  std::unique_ptr<testing::PgTestDb> pg_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<TaskService> tasks_;
  std::unique_ptr<ClaimService> claims_;
  std::unique_ptr<WorkerService> workers_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<EventLog> events_;
};

TEST_P(QuestionTest, AskWithTheTokenEndsTheAttemptUncountedAndTheTaskWaits) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult c = Claim(w);
  clock_.Advance(2s);
  auto asked = claims_->Ask(t.id, c.claim.token, "Which database should I use?");
  ASSERT_OK(asked);
  EXPECT_EQ(asked->status, TaskStatus::kWaiting);

  Task now = Get(t.id);
  EXPECT_EQ(now.status, TaskStatus::kWaiting);
  EXPECT_EQ(now.attempt, 0);  // given back: a question is not an attempt used up
  ASSERT_EQ(Questions(now).size(), 1u);
  EXPECT_EQ(Questions(now)[0]["question"], "Which database should I use?");
  EXPECT_EQ(Questions(now)[0]["asked_at"], clock_.NowMs());
  EXPECT_EQ(Questions(now)[0]["attempt"], 1);
  EXPECT_FALSE(Questions(now)[0].contains("answer"));

  std::vector<tx::Claim> attempts = Attempts(t.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].status, ClaimStatus::kCompleted);
  EXPECT_EQ(attempts[0].end_reason, EndReason::kAsked);
  EXPECT_EQ(attempts[0].ended_at, clock_.NowMs());
  EXPECT_FALSE(CountsAsAttempt(EndReason::kAsked));

  // Its worker is free for other work, and counts no completed task.
  Worker after = workers_->Get(w.id).value();
  EXPECT_EQ(after.status, WorkerStatus::kIdle);
  EXPECT_TRUE(after.current_task_id.empty());
  EXPECT_EQ(after.metadata.value("tasks_completed", 0), 0);

  Event e = Events().back();
  EXPECT_EQ(e.type, "task.asked");
  EXPECT_EQ(e.task_id, t.id);
  EXPECT_EQ(e.worker_id, w.id);
  EXPECT_EQ(e.data["question"], "Which database should I use?");

  // Nothing claims a waiting task; `waiting` is listed and counted as a status of its own.
  auto next = claims_->ClaimNext(w.id);
  ASSERT_OK(next);
  EXPECT_FALSE(next->has_value());
  store::TaskFilter f;
  f.status = TaskStatus::kWaiting;
  ASSERT_EQ(tasks_->List(f).value().size(), 1u);
  bool counted = false;
  for (const auto& sc : tasks_->Counts().value()) {
    counted = counted || (sc.status == TaskStatus::kWaiting && sc.count == 1);
  }
  EXPECT_TRUE(counted);
}

TEST_P(QuestionTest, AskWithAStaleTokenIsRefusedAndChangesNothing) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult first = Claim(w);
  ASSERT_OK(claims_->Release(t.id, first.claim.token));
  ClaimResult second = Claim(w);
  Task other = AddTask("other");
  std::string before = Snapshot(t.id);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, first.claim.token, "q?"), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, 999'999, "q?"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kRunning);

  // Another task's token, and an expired lease, are refused alike.
  EXPECT_ERROR_CODE(claims_->Ask(other.id, second.claim.token, "q?"), ErrorCode::kConflict);
  clock_.Advance(61s);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, second.claim.token, "q?"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
}

TEST_P(QuestionTest, AskTwiceWithOneTokenIsRefusedTheSecondTime) {
  Task t = AddTask("t");
  ClaimResult c = Claim(Register());
  ASSERT_OK(claims_->Ask(t.id, c.claim.token, "first?"));
  std::string before = Snapshot(t.id);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, c.claim.token, "second?"), ErrorCode::kConflict);
  EXPECT_ERROR_CODE(claims_->Report(t.id, c.claim.token, Outcome::kDone, ""), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
}

TEST_P(QuestionTest, ABlankOrOversizedQuestionIsRefusedAndChangesNothing) {
  Task t = AddTask("t");
  ClaimResult c = Claim(Register());
  std::string before = Snapshot(t.id);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, c.claim.token, ""), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, c.claim.token, " \n\t"), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(claims_->Ask(t.id, c.claim.token, std::string(300 * 1024, 'q')),
                    ErrorCode::kInvalidArgument);
  EXPECT_EQ(Snapshot(t.id), before);
}

TEST_P(QuestionTest, AnswerSendsItBackToReadyWithTheHistoryAndTheNextAttemptCounts) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult c = Claim(w);
  ASSERT_OK(claims_->Ask(t.id, c.claim.token, "Which database?"));
  Millis asked_at = clock_.NowMs();
  clock_.Advance(10min);
  auto answered = tasks_->Answer(t.id, "Use PostgreSQL");
  ASSERT_OK(answered);
  EXPECT_EQ(answered->status, TaskStatus::kReady);

  Task now = Get(t.id);
  EXPECT_EQ(now.status, TaskStatus::kReady);
  ASSERT_EQ(Questions(now).size(), 1u);
  const nlohmann::json& q = Questions(now)[0];
  EXPECT_EQ(q["question"], "Which database?");
  EXPECT_EQ(q["answer"], "Use PostgreSQL");
  EXPECT_EQ(q["asked_at"], asked_at);
  EXPECT_EQ(q["answered_at"], clock_.NowMs());
  Event e = Events().back();
  EXPECT_EQ(e.type, "task.answered");
  EXPECT_EQ(e.data["answer"], "Use PostgreSQL");
  EXPECT_EQ(e.data["question"], "Which database?");

  // The next attempt is the claim's second, the task's first counted one.
  ASSERT_OK(workers_->Heartbeat(w.id, {}));
  ClaimResult again = Claim(w);
  EXPECT_EQ(again.task.id, t.id);
  EXPECT_EQ(again.claim.attempt, 2);
  EXPECT_EQ(again.task.attempt, 1);
  ASSERT_OK(claims_->Report(t.id, again.claim.token, Outcome::kDone, "ok"));
  EXPECT_EQ(Get(t.id).status, TaskStatus::kDone);
}

TEST_P(QuestionTest, AnAnswerRightAfterTheQuestionWaitsForTheAskingAgentToStop) {
  Task t = AddTask("t");
  Worker w = Register();
  ClaimResult c = Claim(w);
  ASSERT_OK(claims_->Ask(t.id, c.claim.token, "q?"));
  clock_.Advance(1s);
  ASSERT_OK(tasks_->Answer(t.id, "a"));
  auto none = claims_->ClaimNext(w.id);
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value()) << "claimed beside the agent that asked";
  clock_.Advance(std::chrono::milliseconds(ClaimService::kReportedFailureRetryMs));
  ASSERT_OK(workers_->Heartbeat(w.id, {}));
  EXPECT_EQ(Claim(w).task.id, t.id);
}

TEST_P(QuestionTest, AnswerOfATaskThatIsNotWaitingIsRefusedAndChangesNothing) {
  Task t = AddTask("t");
  std::string before = Snapshot(t.id);
  EXPECT_ERROR_CODE(tasks_->Answer(t.id, "yes"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
  ClaimResult c = Claim(Register());
  before = Snapshot(t.id);
  EXPECT_ERROR_CODE(tasks_->Answer(t.id, "yes"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
  ASSERT_OK(claims_->Report(t.id, c.claim.token, Outcome::kDone, ""));
  before = Snapshot(t.id);
  EXPECT_ERROR_CODE(tasks_->Answer(t.id, "yes"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
  EXPECT_ERROR_CODE(tasks_->Answer("task-zzzzzzzz", "yes"), ErrorCode::kNotFound);
}

TEST_P(QuestionTest, AnsweredTwiceIsRefusedTheSecondTimeAndABlankAnswerNever) {
  Task t = AddTask("t");
  ClaimResult c = Claim(Register());
  ASSERT_OK(claims_->Ask(t.id, c.claim.token, "q?"));
  std::string before = Snapshot(t.id);
  EXPECT_ERROR_CODE(tasks_->Answer(t.id, "  "), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Snapshot(t.id), before);
  ASSERT_OK(tasks_->Answer(t.id, "first"));
  before = Snapshot(t.id);
  EXPECT_ERROR_CODE(tasks_->Answer(t.id, "second"), ErrorCode::kConflict);
  EXPECT_EQ(Snapshot(t.id), before);
  EXPECT_EQ(Questions(Get(t.id))[0]["answer"], "first");
}

TEST_P(QuestionTest, QuestionsNeverExhaustMaxAttemptsAndTheHistoryKeepsEach) {
  Task t = AddTask("t", /*max_attempts=*/1);
  Worker w = Register();
  for (int i = 1; i <= 3; ++i) {
    ClaimResult c = Claim(w);
    ASSERT_EQ(c.task.id, t.id);
    ASSERT_OK(claims_->Ask(t.id, c.claim.token, "question " + std::to_string(i)));
    clock_.Advance(10s);
    ASSERT_OK(workers_->Heartbeat(w.id, {}));
    ASSERT_OK(tasks_->Answer(t.id, "answer " + std::to_string(i)));
    clock_.Advance(10s);
    ASSERT_OK(workers_->Heartbeat(w.id, {}));
  }
  ClaimResult last = Claim(w);
  EXPECT_EQ(last.claim.attempt, 4);
  ASSERT_OK(claims_->Report(t.id, last.claim.token, Outcome::kDone, ""));
  Task done = Get(t.id);
  EXPECT_EQ(done.status, TaskStatus::kDone);
  EXPECT_EQ(done.attempt, 1);
  ASSERT_EQ(Questions(done).size(), 3u);
  EXPECT_EQ(Questions(done)[2]["question"], "question 3");
  EXPECT_EQ(Questions(done)[2]["answer"], "answer 3");
  EXPECT_EQ(Questions(done)[2]["attempt"], 3);
}

TEST_P(QuestionTest, AWaitingTaskCanBeCancelledOrForcedButNotRetried) {
  Task a = AddTask("a");
  Task b = AddTask("b");
  Worker w = Register();
  ASSERT_OK(claims_->Ask(a.id, Claim(w).claim.token, "q?"));
  ASSERT_OK(claims_->Ask(b.id, Claim(w).claim.token, "q?"));
  EXPECT_ERROR_CODE(tasks_->Retry(a.id), ErrorCode::kConflict);
  auto cancelled = tasks_->Cancel(a.id, "not needed");
  ASSERT_OK(cancelled);
  EXPECT_EQ(cancelled->status, TaskStatus::kCancelled);
  EXPECT_ERROR_CODE(tasks_->Answer(a.id, "late"), ErrorCode::kConflict);
  auto forced = tasks_->ForceOutcome(b.id, Outcome::kDone, "done by hand");
  ASSERT_OK(forced);
  EXPECT_EQ(forced->status, TaskStatus::kDone);
}

TEST_P(QuestionTest, TheQuestionTimeoutFailsATaskThatWaitedLongerWithAnEventAndAClearError) {
  Task t = AddTask("t");
  Task answered = AddTask("answered");
  Worker w = Register();
  ASSERT_OK(claims_->Ask(t.id, Claim(w).claim.token, "Which region?"));
  ASSERT_OK(claims_->Ask(answered.id, Claim(w).claim.token, "Which zone?"));
  ASSERT_OK(tasks_->Answer(answered.id, "eu-1"));
  clock_.Advance(std::chrono::milliseconds(kQuestionTimeoutMs - 1));
  EXPECT_EQ(Reconcile().expired_questions, 0);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kWaiting);
  clock_.Advance(1ms);
  ReconcileReport r = Reconcile();
  EXPECT_EQ(r.expired_questions, 1);
  EXPECT_EQ(r.orphaned_tasks + r.expired_leases, 0);
  Task failed = Get(t.id);
  EXPECT_EQ(failed.status, TaskStatus::kFailed);
  EXPECT_GT(failed.finished_at, 0);
  EXPECT_EQ(failed.error, "question unanswered for 1h (question_timeout 1h): Which region?");
  bool recorded = false;
  for (const auto& e : Events()) {
    if (e.type == "task.failed" && e.task_id == t.id) {
      recorded = e.data["reason"] == "question_timeout" && e.data["question"] == "Which region?";
    }
  }
  EXPECT_TRUE(recorded) << "no task.failed event with the reason question_timeout";
  // An answered question is never timed out; a second pass finds nothing more.
  EXPECT_NE(Get(answered.id).status, TaskStatus::kFailed);
  EXPECT_EQ(Reconcile().expired_questions, 0);
  // And a retry sends it back to the queue.
  auto retried = tasks_->Retry(t.id);
  ASSERT_OK(retried);
  EXPECT_EQ(retried->status, TaskStatus::kReady);
}

TEST_P(QuestionTest, WithoutAQuestionTimeoutAQuestionWaitsForever) {
  Reconciler patient(*store_, [] {
    ServiceOptions o = Options();
    o.question_timeout_ms = 0;
    return o;
  }());
  Task t = AddTask("t");
  ASSERT_OK(claims_->Ask(t.id, Claim(Register()).claim.token, "q?"));
  clock_.Advance(24h * 30);
  auto r = patient.RunOnce(clock_.Now());
  ASSERT_OK(r);
  EXPECT_EQ(r->expired_questions, 0);
  EXPECT_EQ(Get(t.id).status, TaskStatus::kWaiting);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, QuestionTest, ::testing::Values(Backend::kSqlite), Name);
INSTANTIATE_TEST_SUITE_P(Postgres, QuestionTest, ::testing::Values(Backend::kPostgres), Name);

}  // namespace
}  // namespace tx::service
