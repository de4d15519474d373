#include "store/sqlite/change_watch.h"

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
  InotifyWatch(int fd, std::string base) : fd_(fd), base_(std::move(base)) {}
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
        if (ev->len > 0 && std::strncmp(ev->name, base_.c_str(), base_.size()) == 0) {
          relevant = true;
        }
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    return relevant;
  }

 private:
  int fd_;
  std::string base_;  // the database's file name; <base>-wal and <base>-shm share the prefix
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchFile(const std::string& db_path) {
  if (db_path == ":memory:") return std::unique_ptr<ChangeWatch>(new NoWatch());
  std::filesystem::path p = std::filesystem::absolute(db_path);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return Error::Unavailable(std::string("inotify_init1: ") + std::strerror(errno));
  std::string dir = p.parent_path().string();
  if (inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0) {
    int e = errno;
    ::close(fd);
    return Error::Unavailable("watch " + dir + ": " + std::strerror(e));
  }
  return std::unique_ptr<ChangeWatch>(new InotifyWatch(fd, p.filename().string()));
}

}  // namespace tx::store::sqlite
