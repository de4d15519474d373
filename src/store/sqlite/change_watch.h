#pragma once
// ChangeWatch for a SQLite file: inotify on the database's directory. Every commit writes the
// write-ahead log (<db>-wal), and a checkpoint writes <db>, so a modification of either is a
// possible change. Other files in the directory are ignored.

#include <memory>
#include <string>

#include "core/error.h"
#include "store/store.h"

namespace tx::store::sqlite {

// `db_path` ":memory:" gives a watch with no fd.
Result<std::unique_ptr<ChangeWatch>> WatchFile(const std::string& db_path);

}  // namespace tx::store::sqlite
