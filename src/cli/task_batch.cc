#include "cli/task_batch.h"

#include <nlohmann/json.hpp>

#include "api/new_task.h"
#include "core/validation.h"

namespace tx::cli {

namespace {

Error AtLine(std::size_t n, const Error& e) {
  return Error(e.code(), "line " + std::to_string(n) + ": " + e.message());
}

}  // namespace

Result<BatchDrafts> ReadTaskBatch(std::istream& in, const worker::WorkerConfig& config) {
  BatchDrafts out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json body = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return AtLine(n, Error::InvalidArgument("malformed JSON"));
    if (NestsDeeperThan(line, kMaxJsonDepth)) {
      return AtLine(n, Error::InvalidArgument("nests deeper than " + std::to_string(kMaxJsonDepth) +
                                              " levels"));
    }
    if (!body.is_object()) {
      return AtLine(n, Error::InvalidArgument("a task is a JSON object, one a line"));
    }
    Result<Task> t = api::DecodeAndPrepareNewTask(body, config);
    if (!t.ok()) return AtLine(n, t.error());
    out.tasks.push_back(std::move(*t));
    out.lines.push_back("line " + std::to_string(n));
  }
  if (in.bad()) return Error::Unavailable("the batch could not be read");
  if (out.tasks.empty()) return Error::InvalidArgument("the batch holds no task");
  return out;
}

}  // namespace tx::cli
