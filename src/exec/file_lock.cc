#include "exec/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <filesystem>

namespace tx::exec {
namespace {

Result<UniqueFd> Open(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Not through a symlink planted at its name; the owner's alone, as everything under .tx.
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return PosixError("cannot open " + path, errno);
  return fd;
}

// flock, again after a signal: 0, or the errno that stopped it.
int Flock(int fd, int op) {
  while (::flock(fd, op) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

}  // namespace

Result<UniqueFd> LockFile(const std::string& path) {
  TX_ASSIGN_OR_RETURN(UniqueFd fd, Open(path));
  if (int e = Flock(fd.get(), LOCK_EX); e != 0) {
    return PosixError("cannot lock " + path, e);
  }
  return fd;
}

Result<std::optional<UniqueFd>> TryLockFile(const std::string& path) {
  TX_ASSIGN_OR_RETURN(UniqueFd fd, Open(path));
  int e = Flock(fd.get(), LOCK_EX | LOCK_NB);
  if (e == EWOULDBLOCK) return std::optional<UniqueFd>();
  if (e != 0) return PosixError("cannot lock " + path, e);
  return std::optional<UniqueFd>(std::move(fd));
}

}  // namespace tx::exec
