#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace tx::store {

Result<std::unique_ptr<Store>> Open(const OpenOptions& options) {
  if (options.url.rfind("postgres://", 0) == 0 || options.url.rfind("postgresql://", 0) == 0) {
    return Error::Unavailable("the PostgreSQL backend is not built yet; use a SQLite path");
  }
  if (options.url.empty()) return Error::InvalidArgument("empty store path");
  return sqlite::OpenSqlite(options);
}

int SchemaVersion() { return sqlite::LatestSchemaVersion(); }

}  // namespace tx::store
