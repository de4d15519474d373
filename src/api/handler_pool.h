#pragma once
// HandlerPool: the HTTP server's request handlers. A posted job runs on an idle thread of the
// pool; when none is idle, a new thread starts for it, up to `max_threads` (past that, jobs wait
// and run in the order posted). A thread that finds no job for `idle_timeout` ends, down to
// `min_threads`, which stay. So an idle server holds `min_threads` threads, not `max_threads`
// (256 stacks and kernel threads doing nothing), and a burst gets its threads at once.
//
// The thread woken for a job is the one that went idle last: under a steady load the same few
// threads take the jobs and the others reach their timeout, so the pool shrinks to what the load
// keeps busy rather than staying as large as its last burst.
//
// Every thread starts with the process's signals blocked, its faults not (exec/signals.h): a
// process that runs a server reads its signals elsewhere. A std::exception a job throws ends that
// job only.
//
// Join runs every job posted, those posted while it waits included, then ends every thread; a job
// posted after Join has returned is dropped unrun. The destructor joins.
//
// Thread safety: Post from any thread, a job's included; Join from one thread, not from a job.

#include <chrono>
#include <deque>
#include <functional>
#include <list>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace tx::api {

class HandlerPool {
 public:
  struct Options {
    int max_threads = 256;
    int min_threads = 1;  // at least 1 (so a posted job always has a thread to run it)
    std::chrono::milliseconds idle_timeout{10'000};
  };

  // Starts `min_threads` threads; throws std::system_error when one cannot start (after ending
  // those that did).
  explicit HandlerPool(Options options);
  ~HandlerPool();
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  void Post(std::function<void()> job) TX_EXCLUDES(mu_);
  void Join() TX_EXCLUDES(mu_);

  // Threads started and not yet ended.
  int threads() const TX_EXCLUDES(mu_);

 private:
  using Thread = std::list<std::thread>::iterator;
  // An idle thread's wait: woken alone, by the job it is to take or by Join.
  struct Waiter {
    CondVar wake;
    bool woken = false;
  };

  void Spawn() TX_REQUIRES(mu_);
  void Run(Thread self) TX_EXCLUDES(mu_);
  // The next job for the thread `self` (back from running one when `after_job`), waiting for
  // one; empty when `self` is to end (it is then off the list of threads and on the list to be
  // joined).
  std::function<void()> NextJob(Thread self, bool after_job) TX_EXCLUDES(mu_);
  // Joins the threads that have ended since the last call.
  void JoinEnded() TX_EXCLUDES(mu_);

  const Options options_;  // min_threads >= 1, max_threads >= min_threads
  mutable Mutex mu_;
  CondVar ended_one_;  // Join waits on it for the last thread
  std::deque<std::function<void()>> jobs_ TX_GUARDED_BY(mu_);
  std::list<std::thread> threads_ TX_GUARDED_BY(mu_);
  std::vector<std::thread> ended_ TX_GUARDED_BY(mu_);
  std::vector<Waiter*> waiting_ TX_GUARDED_BY(mu_);  // the last to go idle at the back
  int idle_ TX_GUARDED_BY(mu_) = 0;                  // threads not running a job
  bool joining_ TX_GUARDED_BY(mu_) = false;
  bool joined_ TX_GUARDED_BY(mu_) = false;
};

}  // namespace tx::api
