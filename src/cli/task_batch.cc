#include "cli/task_batch.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "api/new_task.h"
#include "core/validation.h"

namespace tx::cli {

namespace {

// Below this many lines one thread decodes them all: a thread costs more than it saves.
constexpr std::size_t kLinesPerThread = 2'000;
constexpr unsigned kMaxThreads = 4;

Error AtLine(std::size_t n, const Error& e) {
  return Error(e.code(), "line " + std::to_string(n) + ": " + e.message());
}

struct Line {
  std::size_t number;
  std::string text;
};

// The decoded tasks of a run of lines, or the error of the first that does not decode.
struct Decoded {
  BatchDrafts drafts;
  std::optional<Error> error;
};

Decoded DecodeLines(const std::vector<Line>& lines, std::size_t begin, std::size_t end,
                    const worker::WorkerConfig& config) {
  Decoded out;
  out.drafts.tasks.reserve(end - begin);
  out.drafts.lines.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    const Line& line = lines[i];
    nlohmann::json body = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      out.error = AtLine(line.number, Error::InvalidArgument("malformed JSON"));
      return out;
    }
    if (NestsDeeperThan(line.text, kMaxJsonDepth)) {
      out.error = AtLine(
          line.number,
          Error::InvalidArgument("nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
      return out;
    }
    if (!body.is_object()) {
      out.error =
          AtLine(line.number, Error::InvalidArgument("a task is a JSON object, one a line"));
      return out;
    }
    Result<Task> t = api::DecodeAndPrepareNewTask(body, config);
    if (!t.ok()) {
      out.error = AtLine(line.number, t.error());
      return out;
    }
    out.drafts.tasks.push_back(std::move(*t));
    out.drafts.lines.push_back("line " + std::to_string(line.number));
  }
  return out;
}

}  // namespace

Result<BatchDrafts> ReadTaskBatch(std::istream& in, const worker::WorkerConfig& config) {
  std::vector<Line> lines;
  std::string text;
  for (std::size_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back({n, std::move(text)});
  }
  if (in.bad()) return Error::Unavailable("the batch could not be read");
  if (lines.empty()) return Error::InvalidArgument("the batch holds no task");
  // Decoding is a quarter of a big batch's time: its runs of lines are decoded on the machine's
  // cores at once, before the one transaction that adds them.
  unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, kMaxThreads);
  std::size_t parts = std::clamp<std::size_t>(lines.size() / kLinesPerThread, 1, threads);
  std::vector<Decoded> decoded(parts);
  std::vector<std::thread> workers;
  for (std::size_t p = 1; p < parts; ++p) {
    workers.emplace_back([&, p] {
      decoded[p] =
          DecodeLines(lines, lines.size() * p / parts, lines.size() * (p + 1) / parts, config);
    });
  }
  decoded[0] = DecodeLines(lines, 0, lines.size() / parts, config);
  for (auto& w : workers) w.join();
  BatchDrafts out;
  out.tasks.reserve(lines.size());
  out.lines.reserve(lines.size());
  for (auto& d : decoded) {
    if (d.error) return *d.error;  // the first bad line, as one thread would have found it
    std::move(d.drafts.tasks.begin(), d.drafts.tasks.end(), std::back_inserter(out.tasks));
    std::move(d.drafts.lines.begin(), d.drafts.lines.end(), std::back_inserter(out.lines));
  }
  return out;
}

}  // namespace tx::cli
