#pragma once
// `tx task add --batch FILE|-`: many tasks in one transaction. Each non-blank line is one JSON
// object with the fields of POST /api/tasks (api/new_task.h); all are added or none. A line
// that does not decode, or a task the config or the service refuses, is named by its line number
// ("line 7: field 'title' is required"), and nothing is written.

#include <istream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/task.h"
#include "worker/config.h"

namespace tx::cli {

// The tasks of `in`, decoded and prepared as POST /api/tasks prepares one (the config's git
// isolation and agent profiles), with the line each came from. An empty input is refused.
struct BatchDrafts {
  std::vector<Task> tasks;
  std::vector<std::string> lines;  // "line 7", for each task
};
Result<BatchDrafts> ReadTaskBatch(std::istream& in, const worker::WorkerConfig& config);

}  // namespace tx::cli
