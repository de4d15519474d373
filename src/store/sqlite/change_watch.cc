#include "store/sqlite/change_watch.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tx::store::sqlite {
namespace {

class NoWatch final : public ChangeWatch {
 public:
  int fd() const override { return -1; }
  bool Drain() override { return false; }
};

class InotifyWatch final : public ChangeWatch {
 public:
  InotifyWatch(int fd, std::string wake_name) : fd_(fd), wake_name_(std::move(wake_name)) {}
  ~InotifyWatch() override { ::close(fd_); }
  InotifyWatch(const InotifyWatch&) = delete;
  InotifyWatch& operator=(const InotifyWatch&) = delete;

  int fd() const override { return fd_; }

  bool Drain() override {
    bool relevant = false;
    alignas(inotify_event) std::array<char, 4096> buf;
    for (;;) {
      ssize_t n = ::read(fd_, buf.data(), buf.size());
      if (n <= 0) break;  // EAGAIN: drained
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
        // The queue overflowed: something may have changed.
        if ((ev->mask & IN_Q_OVERFLOW) != 0) relevant = true;
        if (ev->len > 0 && std::strcmp(ev->name, wake_name_.c_str()) == 0) relevant = true;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    return relevant;
  }

 private:
  int fd_;
  std::string wake_name_;  // "<db file name>-wake"
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchFile(const std::string& db_path) {
  if (db_path == ":memory:") return std::unique_ptr<ChangeWatch>(new NoWatch());
  std::filesystem::path p = std::filesystem::absolute(db_path);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return Error::Unavailable(std::string("inotify_init1: ") + std::strerror(errno));
  std::string dir = p.parent_path().string();
  if (inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE) < 0) {
    int e = errno;
    ::close(fd);
    return Error::Unavailable("watch " + dir + ": " + std::strerror(e));
  }
  return std::unique_ptr<ChangeWatch>(new InotifyWatch(fd, p.filename().string() + "-wake"));
}

WakeNotifier::~WakeNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

void WakeNotifier::Notify() {
  if (path_ == ":memory:") return;
  if (fd_ < 0) {
    fd_ = ::open((path_ + "-wake").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
  }
  (void)!::pwrite(fd_, "w", 1, 0);
}

}  // namespace tx::store::sqlite
