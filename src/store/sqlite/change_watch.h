#pragma once
// ChangeWatch for a SQLite file. A transaction that makes a task ready writes one byte to
// <db>-wake after its commit (WakeNotifier); watchers wait for that with inotify on that file
// alone (made by the first watcher if missing). Watching the write-ahead log instead would wake a
// reader while the commit is being written, before it is visible: the reader would find nothing
// on its stale snapshot and go back to sleep, and the wake-up would be lost. Watching the
// directory woke every watcher at each commit's log write (a thousand heartbeats a second woke
// the API server's event hub a thousand times).

#include <memory>
#include <string>

#include "core/error.h"
#include "store/store.h"

namespace tx::store::sqlite {

// `db_path` ":memory:" gives a watch with no fd.
Result<std::unique_ptr<ChangeWatch>> WatchFile(const std::string& db_path);

// The writer's side: Notify() after a commit. Best effort: if the wake file cannot be written,
// idle workers find the task at their poll fallback instead. Nothing for ":memory:".
class WakeNotifier {
 public:
  explicit WakeNotifier(std::string db_path) : path_(std::move(db_path)) {}
  ~WakeNotifier();
  WakeNotifier(const WakeNotifier&) = delete;
  WakeNotifier& operator=(const WakeNotifier&) = delete;
  void Notify();

 private:
  std::string path_;
  int fd_ = -1;  // <db>-wake, opened on the first Notify
};

}  // namespace tx::store::sqlite
