#include "service/draft_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tx::service {
namespace {

std::string Name(std::size_t i) { return "item " + std::to_string(i + 1); }

// Decodes item i as a task titled by its index, counting the calls per item and the threads
// that made them; item `bad` (if any) does not decode.
struct Decoder {
  explicit Decoder(std::size_t items, std::size_t bad = SIZE_MAX) : calls(items), bad(bad) {}
  std::vector<std::atomic<int>> calls;
  std::size_t bad;
  std::mutex mu;
  std::vector<std::thread::id> threads;

  DraftPipeline::Decode Fn() {
    return [this](std::size_t i) -> Result<Task> {
      ++calls[i];
      {
        std::lock_guard<std::mutex> lock(mu);
        if (std::find(threads.begin(), threads.end(), std::this_thread::get_id()) ==
            threads.end()) {
          threads.push_back(std::this_thread::get_id());
        }
      }
      if (i == bad) return Error::InvalidArgument(Name(i) + ": no title");
      Task t;
      t.title = std::to_string(i);
      return t;
    };
  }
};

unsigned HelpersWanted(unsigned max_threads) {
  return std::min(std::max(1u, std::thread::hardware_concurrency()) - 1, max_threads);
}

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
      (*t)->id = "task-" + std::to_string(i);  // changed in place, read again below
    }
    Result<Task*> end = p.At(items, label);
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, nullptr);
    for (std::size_t i = 0; i < items; ++i) {
      EXPECT_EQ((*p.At(i, label))->id, "task-" + std::to_string(i));
      EXPECT_EQ(d.calls[i].load(), 1) << "item " << i;
    }
  }
}

TEST(DraftPipeline, TheFirstItemThatDoesNotDecodeEndsTheHandOverWithItsError) {
  Decoder d(50, /*bad=*/23);
  DraftPipeline p(50, d.Fn(), Name, {.run_items = 10, .items_for_threads = 0});
  std::string label;
  for (std::size_t i = 0; i < 23; ++i) ASSERT_TRUE(p.At(i, label).ok()) << i;
  Result<Task*> bad = p.At(23, label);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "item 24: no title");
  EXPECT_EQ(label, Name(22));  // a label is only given with a task
}

TEST(DraftPipeline, HelpersDecodeAheadOfTheInsertsOnOtherThreads) {
  if (HelpersWanted(2) == 0) GTEST_SKIP() << "one core: no helper thread is started";
  Decoder d(400);
  DraftPipeline p(400, d.Fn(), Name, {.run_items = 10, .items_for_threads = 20});
  std::string label;
  ASSERT_TRUE(p.At(0, label).ok());
  // The helpers take the runs in order; without a single At past the first run they decode
  // the rest.
  for (int tries = 0; tries < 500 && d.calls[399].load() == 0; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(d.calls[399].load(), 1);
  std::lock_guard<std::mutex> lock(d.mu);
  EXPECT_GE(d.threads.size(), 2u);
}

// A server taking many bulk adds at once starts no more than kMaxHelpers helper threads.
TEST(DraftPipeline, HelperThreadsAreCappedForTheWholeProcess) {
  unsigned wanted = HelpersWanted(2);
  if (wanted == 0) GTEST_SKIP() << "one core: no helper thread is started";
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
  for (int i = 0; i < 6; ++i) {
    pipelines.push_back(std::make_unique<DraftPipeline>(
        100, decode, Name,
        DraftPipeline::Options{.run_items = 10, .items_for_threads = 20, .max_threads = 2}));
    helpers += pipelines.back()->helpers();
  }
  EXPECT_EQ(helpers, std::min<std::size_t>(6 * wanted, DraftPipeline::kMaxHelpers));
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  std::string label;
  for (auto& p : pipelines) EXPECT_TRUE(p->At(99, label).ok());
  pipelines.clear();
  // All ended: a new pipeline gets its helpers again.
  DraftPipeline again(100, decode, Name, {.run_items = 10, .items_for_threads = 20});
  EXPECT_EQ(again.helpers(), wanted);
}

}  // namespace
}  // namespace tx::service
