// Batches of claims (ClaimService::ReportAndClaimBatch) from several claimers at once, each with
// a store of its own, on a SQLite file and on PostgreSQL (where the claims it reports are locked
// in one statement, and its new claims are picked and written with the commit): every task is
// claimed once and completed once, every claim is attempt 1 and ends completed, each task's events
// tell it in order, and the workers' counts add up.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "pg_test_db.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "service/worker_service.h"
#include "store/store.h"

namespace tx {
namespace {

namespace fs = std::filesystem;

enum class Backend { kSqliteFile, kPostgres };
const char* Name(Backend b) { return b == Backend::kPostgres ? "postgres" : "sqlite"; }
// Names the backend in test output (gtest would print its bytes).
void PrintTo(Backend b, std::ostream* os) { *os << Name(b); }

class BatchClaimTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      pg_ = std::make_unique<testing::PgTestDb>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url_ = pg_->url();
    } else {
      char tmpl[] = "/tmp/tx-batch-XXXXXX";
      dir_ = mkdtemp(tmpl);
      url_ = dir_ + "/tx.db";
    }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::unique_ptr<testing::PgTestDb> pg_;
  std::string dir_;
  std::string url_;
};

TEST_P(BatchClaimTest, ConcurrentBatchesClaimAndCompleteEveryTaskExactlyOnce) {
  constexpr int kTasks = 300, kClaimers = 4, kBatch = 7;
  RealClock clock;
  {
    auto store = store::Open({url_, true});
    ASSERT_TRUE(store.ok()) << store.error().message();
    service::TaskService tasks(**store, clock);
    std::vector<Task> drafts(kTasks);
    for (int i = 0; i < kTasks; ++i) {
      drafts[i].title = "task " + std::to_string(i);
      drafts[i].priority = i % 3;  // the pick order is not the insertion order
    }
    auto added = tasks.AddMany(drafts);
    ASSERT_TRUE(added.ok()) << added.error().message();
  }

  std::atomic<int> failures{0};
  std::vector<std::vector<std::string>> completed(kClaimers);
  std::vector<std::string> worker_ids(kClaimers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaimers; ++i) {
    threads.emplace_back([&, i] {
      auto store = store::Open({url_, false});
      if (!store.ok()) {
        ADD_FAILURE() << store.error().message();
        ++failures;
        return;
      }
      service::WorkerService workers(**store, clock);
      service::ClaimService claims(**store, clock);
      service::Registration r;
      r.name = "batch-" + std::to_string(i);
      auto w = workers.Register(r);
      if (!w.ok()) {
        ADD_FAILURE() << w.error().message();
        ++failures;
        return;
      }
      worker_ids[i] = w->id;
      std::vector<service::ClaimService::Finished> finished;
      for (;;) {
        auto got = claims.ReportAndClaimBatch(w->id, finished, kBatch);
        if (!got.ok()) {
          ADD_FAILURE() << got.error().message();
          ++failures;
          return;
        }
        for (const Task& t : got->reported) {
          EXPECT_EQ(t.status, TaskStatus::kDone);
          completed[i].push_back(t.id);
        }
        finished.clear();
        if (got->claimed.empty()) return;
        EXPECT_LE(got->claimed.size(), static_cast<std::size_t>(kBatch));
        for (const auto& c : got->claimed) {
          EXPECT_EQ(c.claim.worker_id, w->id);
          EXPECT_EQ(c.claim.attempt, 1);
          finished.push_back({c.task.id, c.claim.token, service::Outcome::kDone, "", 0});
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures, 0);

  std::set<std::string> once;
  std::size_t total = 0;
  for (const auto& list : completed) {
    total += list.size();
    once.insert(list.begin(), list.end());
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kTasks)) << "a task was completed twice or lost";
  EXPECT_EQ(once.size(), static_cast<std::size_t>(kTasks));

  auto store = store::Open({url_, false});
  ASSERT_TRUE(store.ok()) << store.error().message();
  service::TaskService tasks(**store, clock);
  service::WorkerService workers(**store, clock);
  for (const std::string& id : once) {
    auto detail = tasks.Show(id);
    ASSERT_TRUE(detail.ok()) << detail.error().message();
    EXPECT_EQ(detail->task.status, TaskStatus::kDone);
    ASSERT_EQ(detail->attempts.size(), 1u) << id << " was claimed more than once";
    EXPECT_EQ(detail->attempts[0].status, ClaimStatus::kCompleted);
  }
  // Each task's story in the event log: created, claimed (attempt 1, a 30 min lease, the token
  // of its one claim), done, in that order; whichever way the store wrote the claims.
  std::map<std::string, std::vector<std::string>> story;
  std::vector<Event> claimed_events;
  ASSERT_TRUE((*store)
                  ->Read([&](store::Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(std::vector<Event> events, txn.ListEvents(0, 0));
                    for (Event& e : events) {
                      if (e.task_id.empty()) continue;
                      story[e.task_id].push_back(e.type);
                      if (e.type == "task.claimed") claimed_events.push_back(std::move(e));
                    }
                    return Ok();
                  })
                  .ok());
  for (const Event& e : claimed_events) {
    auto detail = tasks.Show(e.task_id);
    ASSERT_TRUE(detail.ok()) << detail.error().message();
    ASSERT_EQ(detail->attempts.size(), 1u);
    const Claim& c = detail->attempts[0];
    EXPECT_EQ(e.data, (nlohmann::json{{"attempt", 1}, {"lease", "30m"}, {"token", c.token}}));
    EXPECT_EQ(e.worker_id, c.worker_id);
    EXPECT_EQ(e.at, c.claimed_at);
  }
  ASSERT_EQ(story.size(), static_cast<std::size_t>(kTasks));
  for (const auto& [id, types] : story) {
    EXPECT_EQ(types, (std::vector<std::string>{"task.created", "task.claimed", "task.done"})) << id;
  }
  std::int64_t counted = 0;
  for (int i = 0; i < kClaimers; ++i) {
    auto w = workers.Get(worker_ids[i]);
    ASSERT_TRUE(w.ok()) << w.error().message();
    EXPECT_EQ(w->status, WorkerStatus::kIdle);
    EXPECT_TRUE(w->current_task_id.empty());
    EXPECT_EQ(w->metadata.value("tasks_completed", 0),
              static_cast<std::int64_t>(completed[i].size()));
    counted += w->metadata.value("tasks_completed", 0);
  }
  EXPECT_EQ(counted, kTasks);
}

INSTANTIATE_TEST_SUITE_P(Stores, BatchClaimTest,
                         ::testing::Values(Backend::kSqliteFile, Backend::kPostgres),
                         [](const auto& info) { return std::string(Name(info.param)); });

}  // namespace
}  // namespace tx
