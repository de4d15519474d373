#include "cli/task_batch.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "api/new_task.h"
#include "core/validation.h"

namespace tx::cli {

namespace {

// Lines a run holds: small enough that the inserts start soon, big enough that handing a run
// over costs nothing beside decoding it. Below 2,000 lines no thread is started: one costs more
// than it saves. The inserts cost about three times the decoding: two threads keep ahead.
constexpr service::DraftPipeline::Options kPipeline{
    .run_items = 500, .items_for_threads = 2'000, .max_threads = 2};

Error AtLine(std::size_t n, const Error& e) {
  return Error(e.code(), "line " + std::to_string(n) + ": " + e.message());
}

}  // namespace

Result<std::unique_ptr<TaskBatch>> TaskBatch::Read(std::istream& in,
                                                   const worker::WorkerConfig& config) {
  std::vector<Line> lines;
  std::string text;
  for (std::size_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back({n, std::move(text)});
  }
  if (in.bad()) return Error::Unavailable("the batch could not be read");
  if (lines.empty()) return Error::InvalidArgument("the batch holds no task");
  return std::make_unique<TaskBatch>(Key{}, std::move(lines), config);
}

TaskBatch::TaskBatch(Key, std::vector<Line> lines, const worker::WorkerConfig& config)
    : lines_(std::move(lines)), config_(config) {
  // A line that may name a repo (a title may say "repo" too: then only the helpers are lost).
  bool git = std::any_of(lines_.begin(), lines_.end(), [](const Line& l) {
    return l.text.find("\"repo\"") != std::string::npos;
  });
  service::DraftPipeline::Options options = kPipeline;
  if (git) options.items_for_threads = SIZE_MAX;
  pipeline_.emplace(
      lines_.size(), [this](std::size_t i) { return Decode(i); },
      [this](std::size_t i) { return "line " + std::to_string(lines_[i].number); }, options);
}

Result<Task> TaskBatch::Decode(std::size_t i) const {
  const Line& line = lines_[i];
  nlohmann::json body = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return AtLine(line.number, Error::InvalidArgument("malformed JSON"));
  if (NestsDeeperThan(line.text, kMaxJsonDepth)) {
    return AtLine(line.number, Error::InvalidArgument("nests deeper than " +
                                                      std::to_string(kMaxJsonDepth) + " levels"));
  }
  if (!body.is_object()) {
    return AtLine(line.number, Error::InvalidArgument("a task is a JSON object, one a line"));
  }
  Result<Task> t = api::DecodeAndPrepareNewTask(body, config_);
  if (!t.ok()) return AtLine(line.number, t.error());
  return t;
}

}  // namespace tx::cli
