#include "api/handler_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include "core/mutex.h"

namespace tx::api {
namespace {

using namespace std::chrono_literals;

// Polls `pred` for up to 10 s (the machine may be busy; nothing here needs nearly that long).
bool Eventually(const std::function<bool()>& pred) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Jobs that wait until the gate opens, counting how many run now and how many ran.
class Gate {
 public:
  std::function<void()> Job() {
    return [this] {
      ++running_;
      {
        MutexLock lock(mu_);
        opened_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return open_; });
      }
      --running_;
      ++done_;
    };
  }
  void Open() {
    MutexLock lock(mu_);
    open_ = true;
    opened_.NotifyAll();
  }
  int running() const { return running_; }
  int done() const { return done_; }

 private:
  Mutex mu_;
  CondVar opened_;
  bool open_ TX_GUARDED_BY(mu_) = false;
  std::atomic<int> running_{0};
  std::atomic<int> done_{0};
};

// Opens the gate when the test ends, however it ends: a failed assertion leaves no job waiting
// for the pool's join. Declared after the pool, so it runs before the pool's destructor.
class OpenAtEnd {
 public:
  explicit OpenAtEnd(Gate& gate) : gate_(gate) {}
  ~OpenAtEnd() { gate_.Open(); }
  OpenAtEnd(const OpenAtEnd&) = delete;
  OpenAtEnd& operator=(const OpenAtEnd&) = delete;

 private:
  Gate& gate_;
};

TEST(HandlerPool, EveryJobPostedRunsOnce) {
  std::atomic<int> ran{0};
  HandlerPool pool({.max_threads = 8});
  for (int i = 0; i < 2000; ++i) pool.Post([&] { ++ran; });
  pool.Join();
  EXPECT_EQ(ran, 2000);
  EXPECT_EQ(pool.threads(), 0);
}

TEST(HandlerPool, AnIdlePoolHoldsItsMinimumOfThreadsNotItsMaximum) {
  HandlerPool pool({.max_threads = 256, .min_threads = 2});
  EXPECT_EQ(pool.threads(), 2);
  std::atomic<int> ran{0};
  pool.Post([&] { ++ran; });
  ASSERT_TRUE(Eventually([&] { return ran == 1; }));
  EXPECT_EQ(pool.threads(), 2);  // an idle thread took it: none started
}

TEST(HandlerPool, BlockedJobsGrowThePoolToItsMaximumAndTheRestWaitTheirTurn) {
  Gate gate;
  HandlerPool pool({.max_threads = 4});
  OpenAtEnd open_at_end(gate);
  for (int i = 0; i < 7; ++i) pool.Post(gate.Job());
  ASSERT_TRUE(Eventually([&] { return gate.running() == 4; }));
  std::this_thread::sleep_for(50ms);  // time for a fifth to start, were the pool to start one
  EXPECT_EQ(gate.running(), 4);
  EXPECT_EQ(pool.threads(), 4);
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return gate.done() == 7; }));
  EXPECT_EQ(pool.threads(), 4);
}

TEST(HandlerPool, ThreadsIdleForTheTimeoutEndDownToTheMinimum) {
  Gate gate;
  Gate second;  // (the gates outlive the pool, which joins their jobs)
  HandlerPool pool({.max_threads = 8, .min_threads = 2, .idle_timeout = 50ms});
  OpenAtEnd open_first_at_end(gate);
  OpenAtEnd open_second_at_end(second);
  for (int i = 0; i < 8; ++i) pool.Post(gate.Job());
  ASSERT_TRUE(Eventually([&] { return gate.running() == 8; }));
  EXPECT_EQ(pool.threads(), 8);
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return pool.threads() == 2; }));
  std::this_thread::sleep_for(200ms);  // four idle timeouts: the minimum stays
  EXPECT_EQ(pool.threads(), 2);
  // And grows again for the next burst.
  for (int i = 0; i < 5; ++i) pool.Post(second.Job());
  ASSERT_TRUE(Eventually([&] { return second.running() == 5; }));
  second.Open();
}

// Under a steady trickle of jobs, the thread that went idle last takes the next one, so the
// threads a burst started reach their timeout instead of each being kept alive by a share of it.
TEST(HandlerPool, AfterABurstASteadyTrickleOfJobsKeepsOnlyTheThreadsItNeeds) {
  Gate gate;
  HandlerPool pool({.max_threads = 8, .min_threads = 1, .idle_timeout = 150ms});
  OpenAtEnd open_at_end(gate);
  for (int i = 0; i < 8; ++i) pool.Post(gate.Job());
  ASSERT_TRUE(Eventually([&] { return gate.running() == 8; }));
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return gate.done() == 8; }));
  std::atomic<int> ran{0};
  auto until = std::chrono::steady_clock::now() + 10s;
  int posted = 0;
  // A job every 10 ms: each of 8 threads taking them in turn would see one every 80 ms, well
  // inside its 150 ms timeout.
  while (pool.threads() > 2 && std::chrono::steady_clock::now() < until) {
    pool.Post([&] { ++ran; });
    ++posted;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_LE(pool.threads(), 2);
  EXPECT_TRUE(Eventually([&] { return ran == posted; }));
}

TEST(HandlerPool, JoinRunsTheJobsPostedWhileItWaits) {
  std::atomic<int> ran{0};
  HandlerPool pool({.max_threads = 2});
  std::atomic<bool> started{false};
  pool.Post([&] {
    started = true;
    std::this_thread::sleep_for(100ms);  // Join waits by now
    pool.Post([&] { ++ran; });
    ++ran;
  });
  ASSERT_TRUE(Eventually([&] { return started.load(); }));
  pool.Join();
  EXPECT_EQ(ran, 2);
  pool.Post([&] { ++ran; });  // after Join: dropped
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(pool.threads(), 0);
}

// A fault still reaches its handler (a sanitizer's report); the process's signals do not.
TEST(HandlerPool, ItsThreadsStartWithTheAsynchronousSignalsBlocked) {
  sigset_t none;
  sigemptyset(&none);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &none, &old), 0);  // the poster blocks nothing
  Gate gate;
  HandlerPool pool({.max_threads = 4});
  OpenAtEnd open_at_end(gate);
  std::atomic<int> blocked{0};
  auto check = [&] {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    if (sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1 &&
        sigismember(&mask, SIGHUP) == 1 && sigismember(&mask, SIGCHLD) == 1 &&
        sigismember(&mask, SIGSEGV) == 0 && sigismember(&mask, SIGBUS) == 0 &&
        sigismember(&mask, SIGABRT) == 0) {
      ++blocked;
    }
  };
  pool.Post(gate.Job());  // holds the first thread, so the next job starts a thread of its own
  ASSERT_TRUE(Eventually([&] { return gate.running() == 1; }));
  pool.Post(check);
  pool.Post(check);
  gate.Open();
  pool.Join();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(blocked, 2);
}

TEST(HandlerPool, AJobThatThrowsEndsOnlyItself) {
  std::atomic<int> ran{0};
  HandlerPool pool({.max_threads = 1});
  pool.Post([] { throw std::runtime_error("a handler's bug"); });
  pool.Post([&] { ++ran; });
  pool.Join();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace tx::api
