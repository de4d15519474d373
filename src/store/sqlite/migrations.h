#pragma once
// Numbered schema migrations for SQLite. The version lives in PRAGMA user_version; each
// migration runs in its own transaction together with the version bump.

#include "core/error.h"
#include "store/sqlite/db.h"

namespace tx::store::sqlite {

int LatestSchemaVersion();
// Applies every migration newer than the file's version. Refuses a file whose version is newer
// than this binary knows, naming both versions.
Status Migrate(Db& db, const std::string& path);

}  // namespace tx::store::sqlite
