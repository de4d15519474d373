#include "exec/capped_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace tx::exec {

namespace {

std::size_t PreadAll(int fd, char* data, std::size_t n, off_t at) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, data + done, n - done, at + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

}  // namespace

int AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

std::size_t WriteAll(int fd, const char* data, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  return done;
}

Result<CappedLog> CappedLog::Open(const std::string& path, std::uint64_t cap) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return Error::Unavailable("log directory '" + dir.string() + "': " + ec.message());
  CappedLog log;
  log.fd_.Reset(
      AboveStdio(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600)));
  if (!log.fd_.valid()) {
    return PosixError("log '" + path + "'", errno);
  }
  struct stat st {};
  if (::fstat(log.fd_.get(), &st) == 0) log.size_ = static_cast<std::uint64_t>(st.st_size);
  log.cap_ = cap;
  return log;
}

Result<CappedLog> CappedLog::OpenOnFirstWrite(const std::string& path, std::uint64_t cap) {
  namespace fs = std::filesystem;
  // The nearest ancestor that exists must be a directory this process may create entries in.
  fs::path dir = fs::path(path).parent_path();
  struct stat st {};
  while (!dir.empty() && ::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return PosixError("log directory '" + dir.string() + "'", errno);
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  if (!dir.empty()) {
    const fs::path asked = fs::path(path).parent_path();
    if (!S_ISDIR(st.st_mode)) return PosixError("log directory '" + asked.string() + "'", ENOTDIR);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return PosixError("log directory '" + dir.string() + "'", errno);
    }
  }
  CappedLog log;
  log.deferred_path_ = path;
  log.cap_ = cap;
  return log;
}

void CappedLog::Append(std::string_view data) {
  if (data.empty()) return;
  if (!fd_.valid() && !deferred_path_.empty()) {
    Result<CappedLog> opened = Open(deferred_path_, cap_);
    deferred_path_.clear();
    if (opened.ok()) *this = std::move(*opened);
  }
  if (!fd_.valid()) return;
  size_ += WriteAll(fd_.get(), data.data(), data.size());
  if (cap_ > 0 && size_ > cap_) DropHead();
}

// Rewrites the log as a marker line and the newest ~cap/2 bytes.
void CappedLog::DropHead() {
  const std::uint64_t keep = cap_ / 2;
  if (size_ <= marker_size_ + keep) return;  // a cap smaller than the marker itself
  std::string tail(keep, '\0');
  if (PreadAll(fd_.get(), tail.data(), keep, static_cast<off_t>(size_ - keep)) != keep) {
    // Someone else changed the file; follow its real size and try again later.
    struct stat st {};
    if (::fstat(fd_.get(), &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
    return;
  }
  // Start at a line when one begins soon, so the log does not open with half a line.
  const std::size_t nl = tail.find('\n');
  if (nl != std::string::npos && nl < tail.size() / 4) tail.erase(0, nl + 1);
  dropped_ += size_ - marker_size_ - tail.size();
  const std::string marker = "[tx: " + std::to_string(dropped_) + " earlier bytes dropped]\n";
  if (::ftruncate(fd_.get(), 0) != 0) return;
  size_ = WriteAll(fd_.get(), marker.data(), marker.size());
  size_ += WriteAll(fd_.get(), tail.data(), tail.size());
  marker_size_ = marker.size();
}

}  // namespace tx::exec
