#include "store/sqlite/change_watch.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>

namespace tx::store::sqlite {
namespace {

// Watches <db>-wake for writes, first making it (as the first Notify would, 0600) if missing.
Status WatchWakeFile(int inotify_fd, const std::string& wake_path) {
  if (inotify_add_watch(inotify_fd, wake_path.c_str(), IN_MODIFY) >= 0) return Ok();
  if (errno != ENOENT) return PosixError("watch " + wake_path, errno);
  int f = ::open(wake_path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (f < 0) return PosixError("create " + wake_path, errno);
  ::close(f);
  if (inotify_add_watch(inotify_fd, wake_path.c_str(), IN_MODIFY) < 0) {
    return PosixError("watch " + wake_path, errno);
  }
  return Ok();
}

class NoWatch final : public ChangeWatch {
 public:
  int fd() const override { return -1; }
  bool Drain() override { return false; }
};

// Watches <db>-wake itself, so that the write-ahead log's writes (every commit's) wake no one.
// Were the file removed, its watch ends with IN_IGNORED: that counts as a change, and the
// file is made again and watched anew.
class InotifyWatch final : public ChangeWatch {
 public:
  InotifyWatch(int fd, std::string wake_path) : fd_(fd), wake_path_(std::move(wake_path)) {}
  ~InotifyWatch() override { ::close(fd_); }
  InotifyWatch(const InotifyWatch&) = delete;
  InotifyWatch& operator=(const InotifyWatch&) = delete;

  int fd() const override { return fd_; }

  bool Drain() override {
    bool relevant = false;
    bool lost = false;
    alignas(inotify_event) std::array<char, 4096> buf;
    for (;;) {
      ssize_t n = ::read(fd_, buf.data(), buf.size());
      if (n <= 0) break;  // EAGAIN: drained
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
        // A write, or the queue overflowed (something may have changed).
        if ((ev->mask & (IN_MODIFY | IN_Q_OVERFLOW)) != 0) relevant = true;
        if ((ev->mask & IN_IGNORED) != 0) lost = true;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    // Best effort: if the file cannot be made again, the caller's poll fallback still runs.
    if (lost) (void)WatchWakeFile(fd_, wake_path_);
    return relevant || lost;
  }

 private:
  int fd_;
  std::string wake_path_;  // "<db>-wake"
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchFile(const std::string& db_path) {
  if (db_path == ":memory:") return std::unique_ptr<ChangeWatch>(new NoWatch());
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return PosixError("inotify_init1", errno, ErrorCode::kInternal);
  std::string wake = std::filesystem::absolute(db_path).string() + "-wake";
  if (Status s = WatchWakeFile(fd, wake); !s.ok()) {
    ::close(fd);
    return s.error();
  }
  return std::unique_ptr<ChangeWatch>(new InotifyWatch(fd, std::move(wake)));
}

WakeNotifier::~WakeNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

void WakeNotifier::Notify() {
  if (path_ == ":memory:") return;
  if (fd_ < 0) {
    fd_ = ::open((path_ + "-wake").c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
  }
  (void)!::pwrite(fd_, "w", 1, 0);
}

}  // namespace tx::store::sqlite
