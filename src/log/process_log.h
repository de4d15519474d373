#pragma once
// ProcessLog: the log of one of tx's own long-running processes — the orchestrator's
// (.tx/orchestrator.log when it runs as a daemon) or a worker's (.tx/logs/workers/slot-K.log,
// which its orchestrator names with --log-file) — written through spdlog's default logger
// (docs/operations.md, "Logs and signals").
//
// Lines are text, "2026-11-27T09:14:03.512Z info slot-1: worker started (pid 4122)", or JSON, one
// object a line: {"ts":"2026-11-27T09:14:03.512Z","level":"info","msg":"…", <fields>}. Times are
// UTC with milliseconds. A JSON line is valid whatever the message holds: quotes, newlines and
// control characters are escaped, invalid UTF-8 becomes U+FFFD. Its fields are the process's
// (SetField: a worker's id and slot) and the logging thread's (ScopedLogField: the task or slot a
// line is about); text lines carry them in their words already.
//
// With a file: it is opened for appending (created 0600, with its directory) and, when asked,
// stdout and stderr are made to point at it too, so that whatever else the process prints lands
// there. Reopen() opens the path again: after logrotate or an operator moved the file away, the
// next lines go to a fresh file (SIGHUP). Past max_bytes (0 = never) the file is rotated: NAME.1
// becomes NAME.2, NAME becomes NAME.1 (kKeptGenerations old files; the oldest is dropped), and a
// fresh NAME is opened. Without a file, lines go to stderr as the process has it.
//
// Thread-safe: any thread may log while the owner reopens or changes the format and cap. Writes
// are best effort: a full disk loses lines and never stops the process.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace spdlog {
class logger;
}

namespace tx::log {

enum class LogFormat { kText, kJson };
// "text" or "json"; invalid_argument naming `what` (a flag or key) otherwise.
Result<LogFormat> ParseLogFormat(std::string_view text, std::string_view what);
const char* LogFormatName(LogFormat format);

// The size cap of a log file when none is configured, in MB, and how many rotated files are
// kept beside it (NAME.1 the newer).
inline constexpr double kDefaultMaxMb = 64;
inline constexpr int kKeptGenerations = 2;
// A cap in MB (decimals allowed: 0.5 = 512 KiB) as bytes: 0 (no rotation) or from 0.001 (about
// 1 KiB) to 1,000,000. invalid_argument naming `what` otherwise.
Result<std::uint64_t> MaxBytesOfMb(double mb, std::string_view what);
// The same from text ("64", "0.01").
Result<double> ParseMaxMb(std::string_view text, std::string_view what);
// The shortest text that reads back as `mb` ("64", "0.01").
std::string FormatMb(double mb);

// "2026-11-27T09:14:03.512Z".
std::string UtcTimestamp(std::chrono::system_clock::time_point t);
// One line of the log in `format`, with its newline. `level` as spdlog names it ("info",
// "warning", "error", …); `fields` an object whose members join ts, level and msg (JSON only;
// keys named ts, level or msg are left out).
std::string FormatLine(LogFormat format, std::chrono::system_clock::time_point t,
                       std::string_view level, std::string_view msg, const nlohmann::json& fields);

// Renames `path`.(keep-1) to `path`.keep, …, `path` to `path`.1; files missing are skipped. An
// error names the rename that failed.
Status RotateFiles(const std::string& path, int keep);

class ProcessLog : public std::enable_shared_from_this<ProcessLog> {
 public:
  struct Options {
    LogFormat format = LogFormat::kText;
    std::string path;  // empty: stderr as it is, never reopened or rotated
    std::uint64_t max_bytes = 0;
    bool redirect_stdio = false;  // point stdout and stderr at the file too
  };

  // Opens the file, if any. unavailable naming the path when it cannot be opened.
  static Result<std::shared_ptr<ProcessLog>> Open(Options options);
  ~ProcessLog();
  ProcessLog(const ProcessLog&) = delete;
  ProcessLog& operator=(const ProcessLog&) = delete;

  // A logger writing through this log (every level), named `name`.
  std::shared_ptr<spdlog::logger> Logger(const std::string& name);
  // Makes Logger(name) spdlog's default logger.
  void InstallAsDefault(const std::string& name);

  // Opens the path again and writes there from now on (stdout and stderr too when redirected);
  // no-op without a file. On failure (unavailable, naming the path) the old file is kept.
  Status Reopen();
  void SetFormat(LogFormat format);
  void SetMaxBytes(std::uint64_t max_bytes);
  // A field of every JSON line from now on (`value` empty: removed).
  void SetField(const std::string& key, const std::string& value);

  LogFormat format() const;
  std::uint64_t max_bytes() const;
  const std::string& path() const { return path_; }

  // For the sink: formats and writes one record, then rotates if the cap is passed.
  void Write(std::chrono::system_clock::time_point t, std::string_view level, std::string_view msg);

 private:
  explicit ProcessLog(Options options);
  // Opens path_ (creating its directory) and makes it the file written to.
  Status OpenFile() TX_REQUIRES(mu_);
  void Rotate() TX_REQUIRES(mu_);
  void WriteRaw(std::string_view line) TX_REQUIRES(mu_);

  const std::string path_;
  const bool redirect_stdio_;
  mutable Mutex mu_;
  LogFormat format_ TX_GUARDED_BY(mu_);
  std::uint64_t max_bytes_ TX_GUARDED_BY(mu_);
  int fd_ TX_GUARDED_BY(mu_) = -1;             // the file; -1: stderr
  std::uint64_t size_ TX_GUARDED_BY(mu_) = 0;  // of the file, as far as this process knows
  nlohmann::json fields_ TX_GUARDED_BY(mu_) = nlohmann::json::object();
};

// Adds `key`: `value` to the JSON lines this thread logs while it lives (the innermost wins).
class ScopedLogField {
 public:
  ScopedLogField(std::string key, std::string value);
  ~ScopedLogField();
  ScopedLogField(const ScopedLogField&) = delete;
  ScopedLogField& operator=(const ScopedLogField&) = delete;
};

}  // namespace tx::log
