#include "cli/task_batch.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/new_task.h"
#include "core/validation.h"

namespace tx::cli {

namespace {

// Lines a run holds: small enough that the inserts start soon, big enough that handing a run
// over costs nothing beside decoding it.
constexpr std::size_t kRunLines = 500;
// Below this many lines no thread is started: one costs more than it saves.
constexpr std::size_t kLinesForThreads = 2'000;
// The inserts run on one thread and cost about three times the decoding: two threads decoding
// keep ahead of them.
constexpr unsigned kMaxThreads = 2;

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
    : lines_(std::move(lines)), config_(config), decoded_(runs()) {
  {
    MutexLock lock(mu_);
    state_.assign(runs(), RunState::kWaiting);
  }
  if (lines_.size() < kLinesForThreads) return;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned threads = std::min(cores - 1, kMaxThreads);
  for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { DecodeRuns(); });
}

TaskBatch::~TaskBatch() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

std::size_t TaskBatch::runs() const { return (lines_.size() + kRunLines - 1) / kRunLines; }

std::optional<std::size_t> TaskBatch::TakeRun() {
  MutexLock lock(mu_);
  if (stopping_) return std::nullopt;
  auto it = std::find(state_.begin(), state_.end(), RunState::kWaiting);
  if (it == state_.end()) return std::nullopt;
  *it = RunState::kDecoding;
  return static_cast<std::size_t>(it - state_.begin());
}

void TaskBatch::DecodeRuns() {
  while (std::optional<std::size_t> r = TakeRun()) DecodeRun(*r);
}

void TaskBatch::DecodeRun(std::size_t r) {
  Run& out = decoded_[r];
  std::size_t end = std::min(lines_.size(), (r + 1) * kRunLines);
  out.tasks.reserve(end - r * kRunLines);
  for (std::size_t i = r * kRunLines; i < end; ++i) {
    const Line& line = lines_[i];
    nlohmann::json body = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      out.error = AtLine(line.number, Error::InvalidArgument("malformed JSON"));
      break;
    }
    if (NestsDeeperThan(line.text, kMaxJsonDepth)) {
      out.error = AtLine(
          line.number,
          Error::InvalidArgument("nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
      break;
    }
    if (!body.is_object()) {
      out.error =
          AtLine(line.number, Error::InvalidArgument("a task is a JSON object, one a line"));
      break;
    }
    Result<Task> t = api::DecodeAndPrepareNewTask(body, config_);
    if (!t.ok()) {
      out.error = AtLine(line.number, t.error());
      break;
    }
    out.tasks.push_back(std::move(*t));
  }
  MutexLock lock(mu_);
  state_[r] = RunState::kDone;
  done_.NotifyAll();
}

Result<Task*> TaskBatch::At(std::size_t i, std::string& label) {
  if (i >= lines_.size()) return nullptr;
  std::size_t r = i / kRunLines;
  bool mine = false;
  {
    MutexLock lock(mu_);
    if (state_[r] == RunState::kWaiting) {
      state_[r] = RunState::kDecoding;
      mine = true;
    } else {
      done_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return state_[r] == RunState::kDone; });
    }
  }
  if (mine) DecodeRun(r);
  Run& run = decoded_[r];
  std::size_t k = i % kRunLines;
  if (k >= run.tasks.size()) return *run.error;  // the run's first bad line
  label = "line " + std::to_string(lines_[i].number);
  return &run.tasks[k];
}

}  // namespace tx::cli
