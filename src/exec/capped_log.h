#pragma once
// CappedLog: an append-only log file with a size cap. Past the cap its head is dropped and the
// newest half kept, after a one-line marker "[tx: N earlier bytes dropped]", so a runaway agent
// never fills the disk and the end of its log — what tells how it ended — is always there.
// Writes are best effort: a full disk must not stop an agent, so bytes that cannot be written
// are dropped. Not thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "exec/unique_fd.h"

namespace tx::exec {

class CappedLog {
 public:
  // Opens (creating, 0600) `path` for appending, after creating its directory. `cap` 0 = no cap.
  // unavailable naming the path when it cannot be opened.
  static Result<CappedLog> Open(const std::string& path, std::uint64_t cap);

  // Like Open, but the file and its directory are made at the first byte appended, so an attempt
  // that prints nothing leaves no file behind: creating a folder and a file for every silent task
  // was most of a busy queue's spawn cost (docs/performance.md). Fails now, as Open would, when
  // the path could not be made: its nearest existing ancestor is not a writable directory. A
  // failure at the first write itself drops the bytes, as a full disk does.
  static Result<CappedLog> OpenOnFirstWrite(const std::string& path, std::uint64_t cap);

  CappedLog() = default;  // discards everything
  CappedLog(CappedLog&&) noexcept = default;
  CappedLog& operator=(CappedLog&&) noexcept = default;

  void Append(std::string_view data);
  bool valid() const { return fd_.valid(); }  // open now (not waiting for its first byte)
  int fd() const { return fd_.get(); }

 private:
  void DropHead();

  UniqueFd fd_;                // O_RDWR | O_APPEND: the cap reads the tail back
  std::string deferred_path_;  // OpenOnFirstWrite's path until its first byte
  std::uint64_t cap_ = 0;
  std::uint64_t size_ = 0;         // bytes in the file now
  std::uint64_t marker_size_ = 0;  // of the "[tx: ...]" line heading it, 0 when none
  std::uint64_t dropped_ = 0;      // bytes cut from the head so far
};

// Writes all of `data` unless the file refuses (EINTR retried); returns the bytes written.
std::size_t WriteAll(int fd, const char* data, std::size_t n);

// A descriptor moved above 0-2 (a child's stdio slots), or -1.
int AboveStdio(int fd);

}  // namespace tx::exec
