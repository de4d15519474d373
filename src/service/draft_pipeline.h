#pragma once
// The drafts of a bulk add (TaskService::AddEach), decoded while the transaction inserts the
// ones before them: decoding is a fifth to a quarter of a task's work and the inserts run on one
// thread, so helper threads decode runs of items, in any order, and hand them over in order. The
// inserting thread decodes a run itself when it reaches one no helper has started. The first
// item that does not decode, in order, ends the add with its error.
//
// Helper threads are capped for the whole process (kMaxHelpers): a server taking many bulk adds
// at once decodes the rest on their own threads rather than start more.

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

class DraftPipeline {
 public:
  struct Options {
    std::size_t run_items = 500;           // items a run holds
    std::size_t items_for_threads = 2000;  // fewer items than this: no helper thread
    unsigned max_threads = 2;              // helpers, at most one fewer than the cores
  };
  // Helper threads of every pipeline of the process at once.
  static constexpr int kMaxHelpers = 4;

  // Item i as a task, or why it cannot be one (the error names the item: "line 7: ...").
  // Called on any thread, each item once.
  using Decode = std::function<Result<Task>(std::size_t i)>;
  // Item i's name for the errors of its insert ("line 7").
  using Label = std::function<std::string(std::size_t i)>;

  DraftPipeline(std::size_t items, Decode decode, Label label, Options options);
  // Stops the helpers and waits for them.
  ~DraftPipeline();
  DraftPipeline(const DraftPipeline&) = delete;
  DraftPipeline& operator=(const DraftPipeline&) = delete;

  // TaskService::AddEach's DraftAt: item i decoded and its label, nullptr after the last, or the
  // error of the first item of its run that does not decode. Waits for i's run, or decodes it
  // here when no helper has started it. The task may be changed in place and read again later.
  Result<Task*> At(std::size_t i, std::string& label);

  // Helper threads this pipeline started (for tests).
  std::size_t helpers() const { return threads_.size(); }

 private:
  struct Run {
    std::vector<Task> tasks;
    std::optional<Error> error;  // the run's first item that does not decode
  };
  enum class RunState { kWaiting, kDecoding, kDone };

  std::size_t runs() const;
  std::optional<std::size_t> TakeRun();  // the first run no one has started, if any
  void DecodeRun(std::size_t r);
  void DecodeRuns();  // a helper's loop

  const std::size_t items_;
  const Decode decode_;
  const Label label_;
  const Options options_;
  std::vector<Run> decoded_;  // a run's entry is written by its decoder before it is kDone
  Mutex mu_;
  CondVar done_;
  std::vector<RunState> state_ TX_GUARDED_BY(mu_);
  bool stopping_ TX_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;

  static std::atomic<int> helpers_in_process_;
};

}  // namespace tx::service
