#pragma once
// `tx task add --batch FILE|-`: many tasks in one transaction. Each non-blank line is one JSON
// object with the fields of POST /api/tasks (api/new_task.h); all are added or none. A line
// that does not decode, or a task the config or the service refuses, is named by its line number
// ("line 7: field 'title' is required"), and nothing is written. A big batch's lines are decoded
// on the machine's other cores while the transaction inserts the ones before them
// (service::DraftPipeline); a batch with git work (a "repo": git runs for each) is decoded whole
// first, so that git never runs under the store's write lock.

#include <cstddef>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/task.h"
#include "service/draft_pipeline.h"
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

  // The task of the i-th line with a task, decoded and prepared as POST /api/tasks prepares one
  // (the config's git isolation, known agent profiles), and its label ("line 7"); nullptr after
  // the last; the line's error, named, if it does not decode. TaskService::AddEach's DraftAt.
  Result<Task*> At(std::size_t i, std::string& label) { return pipeline_->At(i, label); }
  // How many lines hold a task.
  std::size_t size() const { return lines_.size(); }
  // With no helper thread (a small batch, one with git work, one core), decodes every line
  // now, before the transaction: none of it then runs under the store's write lock.
  void DecodeNowIfUnhelped() {
    if (pipeline_->helpers() == 0) pipeline_->DecodeAll();
  }

 private:
  Result<Task> Decode(std::size_t i) const;

  const std::vector<Line> lines_;
  const worker::WorkerConfig& config_;
  std::optional<service::DraftPipeline> pipeline_;  // last: its helpers read the lines
};

}  // namespace tx::cli
