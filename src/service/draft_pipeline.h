#pragma once
// The drafts of a bulk add (TaskService::AddEach), decoded while the transaction inserts the
// ones before them: decoding is a fifth to a quarter of a task's work and the inserts run on one
// thread, so helper threads decode runs of items, in any order, and hand them over in order. The
// inserting thread decodes a run itself when it reaches one no helper has started. The first
// item that does not decode, in order, ends the add with its error.
//
// Helper threads are taken from a HelperBudget the caller owns: a server taking many bulk adds
// at once shares one, so a burst of them cannot multiply its threads. A pipeline that got no
// helper should be decoded whole before the transaction (DecodeAll), not under its write lock.

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "core/task.h"
#include "core/thread_annotations.h"

namespace tx::service {

// At most `max` helper threads at once among the pipelines that share it. Thread-safe.
class HelperBudget {
 public:
  explicit HelperBudget(int max) : max_(max) {}
  bool TryTake() {
    if (taken_.fetch_add(1) < max_) return true;
    taken_.fetch_sub(1);
    return false;
  }
  void Give() { taken_.fetch_sub(1); }

 private:
  const int max_;
  std::atomic<int> taken_{0};
};

class DraftPipeline {
 public:
  struct Options {
    std::size_t run_items = 500;           // items a run holds; at least 1
    std::size_t items_for_threads = 2000;  // fewer items than this: no helper thread
    unsigned max_threads = 2;              // helpers, and never more than the cores less one
  };

  // Item i as a task, or why it cannot be one (the error names the item: "line 7: ..."). Called
  // at most once an item, on any thread; an exception it throws becomes that item's error.
  using Decode = std::function<Result<Task>(std::size_t i)>;
  // Item i's name for the errors of its insert ("line 7").
  using Label = std::function<std::string(std::size_t i)>;

  // `decode`, `label`, what they read and `budget` (null: no cap) must outlive the pipeline.
  DraftPipeline(std::size_t items, Decode decode, Label label, Options options,
                HelperBudget* budget = nullptr);
  // Stops the helpers and waits for them (a run a helper has begun is finished first).
  ~DraftPipeline();
  DraftPipeline(const DraftPipeline&) = delete;
  DraftPipeline& operator=(const DraftPipeline&) = delete;

  // TaskService::AddEach's DraftAt, called from one thread: item i decoded and its label, nullptr
  // after the last, or the error of the first item of its run that does not decode. Waits for
  // i's run, or decodes it here when no helper has started it. The task may be changed in place;
  // asked for again (a transaction run again), the same task is handed over.
  Result<Task*> At(std::size_t i, std::string& label);

  // Decodes here every run no helper has started, and waits for the others: afterwards At only
  // hands over. For a pipeline without helpers, before the transaction begins.
  void DecodeAll();

  // Helper threads this pipeline got (0 when it decodes on the caller's thread alone).
  std::size_t helpers() const { return threads_.size(); }

 private:
  struct Run {
    std::vector<Task> tasks;
    std::optional<Error> error;  // the run's first item that does not decode
  };
  enum class RunState { kWaiting, kDecoding, kDone };

  std::size_t runs() const;
  std::optional<std::size_t> TakeRun();  // the first run no one has started, if any
  // Decodes run r if no one has started it (then true), else waits for it to be done.
  bool DecodeOrWait(std::size_t r);
  void DecodeRun(std::size_t r);
  void DecodeRuns();  // a helper's loop

  const std::size_t items_;
  const Decode decode_;
  const Label label_;
  const Options options_;
  HelperBudget* const budget_;
  std::vector<Run> decoded_;  // a run's entry is written by its decoder before it is kDone
  Mutex mu_;
  CondVar done_;
  std::vector<RunState> state_ TX_GUARDED_BY(mu_);
  bool stopping_ TX_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tx::service
