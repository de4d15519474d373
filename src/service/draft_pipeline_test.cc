#include "service/draft_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tx::service {
namespace {

std::string Name(std::size_t i) { return "item " + std::to_string(i + 1); }

unsigned HelpersWanted(unsigned max_threads) {
  return std::min(std::max(1u, std::thread::hardware_concurrency()) - 1, max_threads);
}

// Decodes item i as a task titled by its index, counting the calls per item and noting whether
// any ran on another thread than the one that made the Decoder; item `bad` does not decode, item
// `throws` throws.
struct Decoder {
  explicit Decoder(std::size_t items, std::size_t bad = SIZE_MAX, std::size_t throws = SIZE_MAX)
      : calls(items), bad(bad), throws(throws) {}
  std::vector<std::atomic<int>> calls;
  std::size_t bad, throws;
  const std::thread::id maker = std::this_thread::get_id();
  std::atomic<bool> elsewhere{false};
  std::mutex mu;
  std::condition_variable decoded;

  DraftPipeline::Decode Fn() {
    return [this](std::size_t i) -> Result<Task> {
      if (std::this_thread::get_id() != maker) elsewhere = true;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++calls[i];
      }
      decoded.notify_all();
      if (i == bad) return Error::InvalidArgument(Name(i) + ": no title");
      if (i == throws) throw std::runtime_error("out of luck");
      Task t;
      t.title = std::to_string(i);
      return t;
    };
  }
  // Waits (at most 30 s) until item i has been decoded.
  bool WaitFor(std::size_t i) {
    std::unique_lock<std::mutex> lock(mu);
    return decoded.wait_for(lock, std::chrono::seconds(30), [&] { return calls[i] > 0; });
  }
};

TEST(DraftPipeline, HandsEveryItemOverInOrderDecodedOnceThenNothing) {
  for (std::size_t items : {1, 7, 100, 1000}) {
    SCOPED_TRACE("items " + std::to_string(items));
    Decoder d(items);
    DraftPipeline p(items, d.Fn(), Name, {.run_items = 10, .items_for_threads = 20});
    EXPECT_EQ(p.helpers(), items >= 20 ? HelpersWanted(2) : 0u);
    std::string label;
    for (std::size_t i = 0; i < items; ++i) {
      Result<Task*> t = p.At(i, label);
      ASSERT_TRUE(t.ok()) << t.error().message();
      ASSERT_NE(*t, nullptr);
      EXPECT_EQ((*t)->title, std::to_string(i));
      EXPECT_EQ(label, Name(i));
      (*t)->id = "task-" + std::to_string(i);  // changed in place
    }
    Result<Task*> end = p.At(items, label);
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, nullptr);
    // Asked again (a transaction run again): the same tasks, as changed, none decoded again.
    for (std::size_t i = 0; i < items; ++i) {
      EXPECT_EQ((*p.At(i, label))->id, "task-" + std::to_string(i));
      EXPECT_EQ(d.calls[i].load(), 1) << "item " << i;
    }
  }
}

TEST(DraftPipeline, TheFirstItemThatDoesNotDecodeEndsTheHandOverWithItsError) {
  Decoder d(50, /*bad=*/23, /*throws=*/41);
  DraftPipeline p(50, d.Fn(), Name, {.run_items = 10, .items_for_threads = 0});
  std::string label;
  for (std::size_t i = 0; i < 23; ++i) ASSERT_TRUE(p.At(i, label).ok()) << i;
  Result<Task*> bad = p.At(23, label);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "item 24: no title");
  EXPECT_EQ(label, Name(22));  // a label is only given with a task
  // A decoder that throws, on whatever thread, gives that item an error instead.
  Result<Task*> thrown = p.At(41, label);
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.error().code(), ErrorCode::kInternal);
  EXPECT_EQ(thrown.error().message(), "item 42: out of luck");
}

TEST(DraftPipeline, DecodeAllLeavesNothingToDecodeForTheHandOver) {
  Decoder d(35, /*bad=*/32);
  DraftPipeline p(35, d.Fn(), Name, {.run_items = 10, .items_for_threads = SIZE_MAX});
  EXPECT_EQ(p.helpers(), 0u);
  p.DecodeAll();
  // Every run decoded up to its first bad item; nothing more is decoded by the hand-over.
  for (std::size_t i = 0; i < 33; ++i) EXPECT_EQ(d.calls[i].load(), 1) << i;
  EXPECT_EQ(d.calls[33].load(), 0);
  std::string label;
  for (std::size_t i = 0; i < 32; ++i) ASSERT_TRUE(p.At(i, label).ok()) << i;
  EXPECT_EQ(p.At(32, label).error().message(), "item 33: no title");
  for (std::size_t i = 0; i < 33; ++i) EXPECT_EQ(d.calls[i].load(), 1) << i;
}

TEST(DraftPipeline, HelpersDecodeAheadOfTheHandOverOnAnotherThread) {
  ASSERT_GE(std::thread::hardware_concurrency(), 2u) << "the test machines have 2 cores or more";
  Decoder d(400);
  DraftPipeline p(400, d.Fn(), Name, {.run_items = 10, .items_for_threads = 20});
  EXPECT_EQ(p.helpers(), HelpersWanted(2));
  // Nothing asked for past item 0: the helpers decode the rest on their own.
  std::string label;
  ASSERT_TRUE(p.At(0, label).ok());
  ASSERT_TRUE(d.WaitFor(399));
  EXPECT_TRUE(d.elsewhere.load());
  EXPECT_EQ((*p.At(399, label))->title, "399");
}

// Pipelines that share a budget start no more helper threads at once than it allows.
TEST(DraftPipeline, HelperThreadsAreCappedByTheirSharedBudget) {
  ASSERT_GE(std::thread::hardware_concurrency(), 2u) << "the test machines have 2 cores or more";
  unsigned wanted = HelpersWanted(2);
  HelperBudget budget(3);
  // Every decode waits until released, so each helper stays busy while the next pipelines start.
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  auto decode = [&](std::size_t) -> Result<Task> {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
    return Task();
  };
  std::vector<std::unique_ptr<DraftPipeline>> pipelines;
  std::size_t helpers = 0;
  for (int i = 0; i < 5; ++i) {
    pipelines.push_back(std::make_unique<DraftPipeline>(
        100, decode, Name,
        DraftPipeline::Options{.run_items = 10, .items_for_threads = 20, .max_threads = 2},
        &budget));
    helpers += pipelines.back()->helpers();
  }
  EXPECT_EQ(helpers, std::min<std::size_t>(5 * wanted, 3));
  EXPECT_EQ(pipelines.back()->helpers(), 0u);
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  std::string label;
  for (auto& p : pipelines) EXPECT_TRUE(p->At(99, label).ok());
  pipelines.clear();
  // All ended and their helpers given back: a new pipeline gets its own again.
  DraftPipeline again(100, decode, Name, {.run_items = 10, .items_for_threads = 20}, &budget);
  EXPECT_EQ(again.helpers(), wanted);
}

}  // namespace
}  // namespace tx::service
