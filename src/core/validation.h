#pragma once
// Input validation shared by the CLI and the API. Each check returns an invalid-argument error
// that names the field and quotes the offending value.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/task.h"

namespace tx {

struct Limits {
  Millis max_task_timeout_ms = 2 * 3'600'000;
  int max_attempts_cap = 100;
  std::size_t max_title = 500;
  std::size_t max_text = 256 * 1024;  // description, instructions, deliverables, result, error
};

// The shortest intervals that make sense: shorter ones only spin (a heartbeat every millisecond
// wrote 19,228 events in ten minutes), and a worker's lease must outlast the interval at which it
// is renewed.
inline constexpr Millis kMinHeartbeatIntervalMs = 100;
inline constexpr Millis kMaxHeartbeatIntervalMs = 24 * 3'600'000;
inline constexpr Millis kMinLeaseMs = 100;
inline constexpr Millis kMinPollIntervalMs = 50;

// A name for a queue, capability, worker name or slot: 1-64 of [A-Za-z0-9_.:-].
Status ValidateName(std::string_view field, std::string_view value);
// JSON nested deeper than this is refused wherever it enters (the CLI, the API, an agent's
// output): parsing and destroying a value take no stack per level, but copying, comparing and
// dumping one recurse, and 100,000 levels overflowed a stack.
inline constexpr int kMaxJsonDepth = 128;
// True when the valid JSON `text` nests arrays and objects deeper than `max`.
bool NestsDeeperThan(std::string_view text, int max = kMaxJsonDepth);
// Parses a JSON object (metadata). Anything but an object, or nested deeper than kMaxJsonDepth,
// is refused.
Result<nlohmann::json> ParseJsonObject(std::string_view field, std::string_view text);
// Parses a decimal integer; "3x", "", "1.5" are refused.
Result<std::int64_t> ParseInteger(std::string_view field, std::string_view text);
// Parses a positive count such as --limit: 1 .. max.
Result<int> ParseCount(std::string_view field, std::string_view text, int max = 1'000'000'000);

// Splits "HOST:PORT" ("127.0.0.1:8787", "[::1]:8787", ":8787" = loopback; port 0 = any free).
// Invalid argument naming the text otherwise.
Result<std::pair<std::string, int>> ParseListenAddress(std::string_view text);
// Splits repeated and comma-separated values: {"a,b", "c"} → {a, b, c}; empty items are dropped.
std::vector<std::string> SplitCommas(const std::vector<std::string>& values);
// Resource limits a task asks for its agent, from metadata.limits: {"memory_mb", "cpu_percent",
// "cpu_seconds", "open_files", "processes", "address_space_mb"}, each a positive integer. They
// override the worker's limits for that task.
struct TaskLimits {
  std::optional<std::uint64_t> memory_mb, cpu_seconds, open_files, processes, address_space_mb;
  std::optional<int> cpu_percent;
};
// An absent metadata.limits gives no limits; anything malformed is refused, naming the key.
Result<TaskLimits> ParseTaskLimits(const nlohmann::json& metadata);

// Checks every field of a new task (ids of after[] are checked against the store by the service).
Status ValidateNewTask(const Task& t, const Limits& limits);

}  // namespace tx
