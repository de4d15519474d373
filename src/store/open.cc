#include "store/location.h"
#include "store/postgres/pg_store.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

namespace tx::store {

Result<std::unique_ptr<Store>> Open(const OpenOptions& options) {
  if (IsPostgresUrl(options.url)) {
    return postgres::OpenPostgres(options);
  }
  if (options.url.empty()) return Error::InvalidArgument("empty store path");
  return sqlite::OpenSqlite(options);
}

int SchemaVersion() { return sqlite::LatestSchemaVersion(); }

}  // namespace tx::store
