#pragma once
// PidFileLock: the first guard of "one orchestrator per store" on a machine — an exclusive
// flock on `<store dir>/orchestrator.pid`, holding "<pid> <host>". The kernel drops the lock when
// its holder dies, however it dies, so a stale file (kill -9, power loss) is simply taken over.
// The store's orchestrator row (OrchestratorService::Acquire) is the second guard, for holders
// this file cannot see.
//
// The lock belongs to the open file description: it survives fork (daemon mode takes it in the
// parent, then detaches) and is released when the last descriptor closes.

#include <string>

#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::orchestrator {

class PidFileLock {
 public:
  // Takes the lock and writes this process's pid and host. conflict, naming the holder's pid
  // and host from the file, when another live process holds it; unavailable when the file
  // cannot be opened.
  static Result<PidFileLock> Acquire(const std::string& path);

  PidFileLock(PidFileLock&&) noexcept = default;
  PidFileLock& operator=(PidFileLock&&) noexcept = default;
  ~PidFileLock();

  // Rewrites the file with this process's pid (after the daemon's fork).
  Status Rewrite();
  // Removes the file and drops the lock (a clean stop).
  void Release();

  const std::string& path() const { return path_; }

 private:
  static Result<PidFileLock> TryAcquire(const std::string& path);
  bool LocksPath() const;
  PidFileLock(std::string path, exec::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  std::string path_;
  exec::UniqueFd fd_;
};

// "<pid> <host>" as found in a pid file, for messages; empty if unreadable.
std::string ReadPidFile(const std::string& path);

}  // namespace tx::orchestrator
