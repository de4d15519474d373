#include "log/process_log.h"

#include <fcntl.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

namespace tx::log {

namespace {

// The fields of the lines this thread logs (ScopedLogField), innermost last.
thread_local std::vector<std::pair<std::string, std::string>> t_fields;

// Best effort, as every log write: EINTR is retried, anything else drops the rest.
std::size_t WriteAll(int fd, std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  return done;
}

class Sink : public spdlog::sinks::sink {
 public:
  explicit Sink(std::shared_ptr<ProcessLog> log) : log_(std::move(log)) {}
  void log(const spdlog::details::log_msg& msg) override {
    spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    log_->Write(msg.time, std::string_view(level.data(), level.size()),
                std::string_view(msg.payload.data(), msg.payload.size()));
  }
  void flush() override {}  // every line is written at once
  // The line's form is the ProcessLog's (text or JSON), not a pattern's.
  void set_pattern(const std::string&) override {}
  void set_formatter(std::unique_ptr<spdlog::formatter>) override {}

 private:
  std::shared_ptr<ProcessLog> log_;
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view text, std::string_view what) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return Error::InvalidArgument(std::string(what) + " must be text or json, not '" +
                                std::string(text) + "'");
}

const char* LogFormatName(LogFormat format) { return format == LogFormat::kJson ? "json" : "text"; }

Result<std::uint64_t> MaxBytesOfMb(double mb, std::string_view what) {
  if (mb == 0) return std::uint64_t{0};
  if (!std::isfinite(mb) || mb < 0.001 || mb > 1'000'000) {
    return Error::InvalidArgument(std::string(what) +
                                  " must be 0 (no rotation) or a number of MB from 0.001 to "
                                  "1000000");
  }
  return static_cast<std::uint64_t>(std::llround(mb * 1024 * 1024));
}

Result<double> ParseMaxMb(std::string_view text, std::string_view what) {
  double mb = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mb);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Error::InvalidArgument(std::string(what) + " must be a number of MB, not '" +
                                  std::string(text) + "'");
  }
  TX_RETURN_IF_ERROR(MaxBytesOfMb(mb, what));
  return mb;
}

std::string FormatMb(double mb) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, mb);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(mb);
}

std::string UtcTimestamp(std::chrono::system_clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  int milli = static_cast<int>(ms % 1000);
  if (milli < 0) {
    milli += 1000;
    --secs;
  }
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[96];  // room for any int the format could print
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
  return buf;
}

std::string FormatLine(LogFormat format, std::chrono::system_clock::time_point t,
                       std::string_view level, std::string_view msg, const nlohmann::json& fields) {
  if (format == LogFormat::kText) {
    std::string line = UtcTimestamp(t);
    line.append(" ").append(level).append(" ").append(msg).append("\n");
    return line;
  }
  nlohmann::ordered_json j;
  j["ts"] = UtcTimestamp(t);
  j["level"] = std::string(level);
  j["msg"] = std::string(msg);
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) {
      if (key != "ts" && key != "level" && key != "msg") j[key] = value;
    }
  }
  // Replaced, not thrown: a message may carry any bytes an agent printed.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Status RotateFiles(const std::string& path, int keep) {
  auto name = [&](int n) { return n == 0 ? path : path + "." + std::to_string(n); };
  for (int n = keep - 1; n >= 0; --n) {
    if (::rename(name(n).c_str(), name(n + 1).c_str()) != 0 && errno != ENOENT) {
      return PosixError("cannot rename " + name(n) + " to " + name(n + 1), errno);
    }
  }
  return Ok();
}

ProcessLog::ProcessLog(Options options)
    : path_(std::move(options.path)),
      redirect_stdio_(options.redirect_stdio),
      format_(options.format),
      max_bytes_(options.max_bytes) {}

ProcessLog::~ProcessLog() {
  MutexLock lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

Result<std::shared_ptr<ProcessLog>> ProcessLog::Open(Options options) {
  std::shared_ptr<ProcessLog> log(new ProcessLog(std::move(options)));
  if (!log->path_.empty()) {
    MutexLock lock(log->mu_);
    TX_RETURN_IF_ERROR(log->OpenFile());
  }
  return log;
}

Status ProcessLog::OpenFile() {
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return PosixError("cannot open the log " + path_, errno);
  // Kept above stdio, which it may be made to replace.
  if (fd <= STDERR_FILENO) {
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    ::close(fd);
    if (moved < 0) return PosixError("cannot open the log " + path_, errno);
    fd = moved;
  }
  if (redirect_stdio_) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
  }
  struct stat st {};
  size_ = ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return Ok();
}

std::shared_ptr<spdlog::logger> ProcessLog::Logger(const std::string& name) {
  auto logger = std::make_shared<spdlog::logger>(name, std::make_shared<Sink>(shared_from_this()));
  logger->set_level(spdlog::level::trace);
  return logger;
}

void ProcessLog::InstallAsDefault(const std::string& name) {
  spdlog::set_default_logger(Logger(name));
}

Status ProcessLog::Reopen() {
  if (path_.empty()) return Ok();
  MutexLock lock(mu_);
  return OpenFile();
}

void ProcessLog::SetFormat(LogFormat format) {
  MutexLock lock(mu_);
  format_ = format;
}

void ProcessLog::SetMaxBytes(std::uint64_t max_bytes) {
  MutexLock lock(mu_);
  max_bytes_ = max_bytes;
}

void ProcessLog::SetField(const std::string& key, const std::string& value) {
  MutexLock lock(mu_);
  if (value.empty()) {
    fields_.erase(key);
  } else {
    fields_[key] = value;
  }
}

LogFormat ProcessLog::format() const {
  MutexLock lock(mu_);
  return format_;
}

std::uint64_t ProcessLog::max_bytes() const {
  MutexLock lock(mu_);
  return max_bytes_;
}

void ProcessLog::Write(std::chrono::system_clock::time_point t, std::string_view level,
                       std::string_view msg) {
  MutexLock lock(mu_);
  nlohmann::json fields;
  if (format_ == LogFormat::kJson) {
    fields = fields_;
    for (const auto& [key, value] : t_fields) fields[key] = value;
  }
  WriteRaw(FormatLine(format_, t, level, msg, fields));
  if (fd_ < 0 || max_bytes_ == 0 || size_ < max_bytes_) return;
  // Past the cap as counted here; the file itself says for sure (another writer, a truncation).
  struct stat st {};
  if (::fstat(fd_, &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
  if (size_ >= max_bytes_) Rotate();
}

void ProcessLog::WriteRaw(std::string_view line) {
  size_ += WriteAll(fd_ >= 0 ? fd_ : STDERR_FILENO, line);
}

void ProcessLog::Rotate() {
  Status rotated = RotateFiles(path_, kKeptGenerations);
  if (rotated.ok()) rotated = OpenFile();
  if (rotated.ok()) return;
  // Written on: the cap is looked at again once as much more has been written.
  size_ = 0;
  nlohmann::json fields = nlohmann::json::object();
  WriteRaw(FormatLine(format_, std::chrono::system_clock::now(), "error",
                      "cannot rotate the log: " + rotated.error().message(), fields));
}

ScopedLogField::ScopedLogField(std::string key, std::string value) {
  t_fields.emplace_back(std::move(key), std::move(value));
}

ScopedLogField::~ScopedLogField() { t_fields.pop_back(); }

}  // namespace tx::log
