#pragma once
// The PostgreSQL schema, as numbered migrations applied at open (one transaction, under an
// advisory lock so that processes opening the store at once migrate it once).

#include "core/error.h"
#include "store/postgres/pg_conn.h"

namespace tx::store::postgres {

int LatestSchemaVersion();
// Applies the migrations this database lacks; refuses a schema newer than this binary knows.
// Without `create`, a database with no tx schema is refused (tx init applies it).
Status Migrate(Conn& conn, bool create);

}  // namespace tx::store::postgres
