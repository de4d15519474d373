#include "api/event_hub.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "run_process.h"
#include "service/task_service.h"

namespace tx::api {
namespace {

using namespace std::chrono_literals;

// A hub on a real SQLite file, its tick far longer than any wait below: what arrives in time
// came through the store's watch (or the read deferred after a burst), not the tick.
class EventHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_.path() / "tx.db").string();
    auto s = store::Open({db_, true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    writer_ = std::move(*s);
  }

  std::unique_ptr<EventHub> StartHub(std::chrono::milliseconds tick) {
    auto hub = EventHub::Start(store::OpenOptions{db_, false}, tick);
    EXPECT_TRUE(hub.ok()) << hub.error().message();
    return hub.ok() ? std::move(*hub) : nullptr;
  }

  void AddTask(const std::string& title) {
    service::TaskService tasks(*writer_, clock_);
    Task t;
    t.title = title;
    t.command = {"true"};
    ASSERT_TRUE(tasks.Add(t).ok());
  }

  testing::TempDir dir_;
  std::string db_;
  RealClock clock_;
  std::unique_ptr<store::Store> writer_;
};

TEST_F(EventHubTest, TheFirstClaimWaitingIsWokenByACommitThatMakesATaskReady) {
  auto hub = StartHub(60s);
  ASSERT_NE(hub, nullptr);
  for (int round = 0; round < 3; ++round) {  // each time the first (and only) waiter
    std::uint64_t seen = hub->ready_generation();
    std::thread add([&] {
      std::this_thread::sleep_for(200ms);
      AddTask("t" + std::to_string(round));
    });
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(hub->WaitForReady(seen, 20s)) << "round " << round;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
    add.join();
  }
}

TEST_F(EventHubTest, AStreamSeesEveryEventOfABurstInOrder) {
  auto hub = StartHub(60s);
  ASSERT_NE(hub, nullptr);
  constexpr int kTasks = 200;
  std::thread add([&] {
    for (int i = 0; i < kTasks; ++i) AddTask("t" + std::to_string(i));
  });
  std::vector<StoredEvent> seen;
  std::int64_t after = hub->last_id();
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (static_cast<int>(seen.size()) < kTasks && std::chrono::steady_clock::now() < deadline) {
    EventHub::Batch b = hub->Wait(after, 1s, 1000);
    ASSERT_FALSE(b.evicted);
    for (auto& e : b.events) {
      EXPECT_GT(e.id, after);
      after = e.id;
      seen.push_back(std::move(e));
    }
  }
  add.join();
  ASSERT_EQ(static_cast<int>(seen.size()), kTasks);
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_EQ(seen[i].type, "task.created");
    EXPECT_EQ(nlohmann::json::parse(seen[i].data).value("title", ""), "t" + std::to_string(i));
  }
}

TEST_F(EventHubTest, WithNoOneWaitingCommitsAreReadAtTheTick) {
  auto hub = StartHub(100ms);
  ASSERT_NE(hub, nullptr);
  std::int64_t before = hub->last_id();
  for (int i = 0; i < 5; ++i) AddTask("t" + std::to_string(i));
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (hub->last_id() < before + 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EventHub::Batch b = hub->Wait(before, 0ms, 100);
  ASSERT_EQ(b.events.size(), 5u);
  EXPECT_EQ(nlohmann::json::parse(b.events.back().data).value("title", ""), "t4");
  // The tick drained the watch too: a claim that read the generation before these commits
  // would see it moved, and not wait for the next.
  EXPECT_GT(hub->ready_generation(), 0u);
}

}  // namespace
}  // namespace tx::api
