#pragma once
// The PostgreSQL Store: one libpq connection per Store object, READ COMMITTED write transactions
// that lock the rows they read (REPEATABLE READ for reads), run again on a serialization failure
// or a dropped connection, FOR UPDATE SKIP LOCKED claims,
// LISTEN/NOTIFY wake-ups, and the database server's clock. Private to store/: callers use
// store::Open() with a postgresql:// URL.

#include <memory>

#include "store/store.h"

namespace tx::store::postgres {

Result<std::unique_ptr<Store>> OpenPostgres(const OpenOptions& options);

}  // namespace tx::store::postgres
