#include "orchestrator/singleton.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "exec/file_lock.h"
#include "exec/process_info.h"

namespace tx::orchestrator {

std::string ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  std::string pid, host;
  in >> pid >> host;
  if (pid.empty()) return {};
  return "pid " + pid + (host.empty() ? "" : " on " + host);
}

Result<PidFileLock> PidFileLock::Acquire(const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    Result<PidFileLock> lock = TryAcquire(path);
    // A holder that stopped cleanly unlinks the file; if we locked the unlinked inode, the lock
    // guards nothing: open the path again.
    if (!lock.ok() || lock->LocksPath() || attempt >= 3) return lock;
  }
}

bool PidFileLock::LocksPath() const {
  struct stat by_fd {
  }, by_path{};
  return ::fstat(fd_.get(), &by_fd) == 0 && ::stat(path_.c_str(), &by_path) == 0 &&
         by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev;
}

Result<PidFileLock> PidFileLock::TryAcquire(const std::string& path) {
  TX_ASSIGN_OR_RETURN(std::optional<exec::UniqueFd> fd, exec::TryLockFile(path));
  if (!fd) {
    std::string holder = ReadPidFile(path);
    return Error::Conflict("an orchestrator is already running on this store (" +
                           (holder.empty() ? std::string("holder unknown") : holder) +
                           "); stop it with tx orchestrator stop");
  }
  PidFileLock lock(path, std::move(*fd));
  TX_RETURN_IF_ERROR(lock.Rewrite());
  return lock;
}

Status PidFileLock::Rewrite() {
  std::string text = std::to_string(::getpid()) + " " + exec::Hostname() + "\n";
  if (::ftruncate(fd_.get(), 0) != 0 ||
      ::pwrite(fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return PosixError("cannot write " + path_, errno);
  }
  return Ok();
}

void PidFileLock::Release() {
  if (!fd_.valid()) return;
  ::unlink(path_.c_str());
  fd_.Reset();
}

PidFileLock::~PidFileLock() = default;

}  // namespace tx::orchestrator
