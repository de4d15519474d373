#pragma once
// `tx task add --batch FILE|-`: many tasks in one transaction. Each non-blank line is one JSON
// object with the fields of POST /api/tasks (api/new_task.h); all are added or none. A line
// that does not decode, or a task the config or the service refuses, is named by its line number
// ("line 7: field 'title' is required"), and nothing is written.
//
// A big batch's lines are decoded on the machine's other cores while the transaction inserts
// the ones already decoded (decoding is a quarter of the work; the inserts run on one thread):
// runs of lines are decoded in any order and handed over in line order.

#include <cstddef>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "core/task.h"
#include "core/thread_annotations.h"
#include "worker/config.h"

namespace tx::cli {

class TaskBatch {
  struct Line {
    std::size_t number;
    std::string text;
  };
  struct Key {};  // only Read makes one

 public:
  // Reads every line of `in` (an empty input is refused) and starts decoding them.
  static Result<std::unique_ptr<TaskBatch>> Read(std::istream& in,
                                                 const worker::WorkerConfig& config);
  TaskBatch(Key, std::vector<Line> lines, const worker::WorkerConfig& config);
  // Stops the decoding threads and waits for them.
  ~TaskBatch();
  TaskBatch(const TaskBatch&) = delete;
  TaskBatch& operator=(const TaskBatch&) = delete;

  // The task of the i-th line with a task, decoded and prepared as POST /api/tasks prepares one
  // (the config's git isolation, known agent profiles), and its label ("line 7"); nullptr after
  // the last; the line's error, named, if it does not decode. Waits for its run of lines, or
  // decodes it here when no thread has started it. TaskService::AddEach's DraftAt; the task may
  // be changed in place.
  Result<Task*> At(std::size_t i, std::string& label);

 private:
  // A run of lines decoded: its tasks, or the error of the first that does not decode.
  struct Run {
    std::vector<Task> tasks;
    std::optional<Error> error;
  };
  enum class RunState { kWaiting, kDecoding, kDone };

  std::size_t runs() const;
  // Takes the first run no one has started, if any.
  std::optional<std::size_t> TakeRun();
  void DecodeRun(std::size_t r);
  void DecodeRuns();  // a thread's loop

  const std::vector<Line> lines_;
  const worker::WorkerConfig& config_;
  std::vector<Run> decoded_;  // a run's entry is written by its decoder before it is kDone
  Mutex mu_;
  CondVar done_;
  std::vector<RunState> state_ TX_GUARDED_BY(mu_);
  bool stopping_ TX_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tx::cli
