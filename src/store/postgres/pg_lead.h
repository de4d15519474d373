#pragma once
// The reconciler's lead on PostgreSQL (Store::TryLead): a session-level advisory lock, asked for
// on a connection of its own, outside the store's transactions, which the server drops when that
// session ends, however its holder died.

#include <memory>
#include <string>

#include "core/error.h"
#include "store/postgres/pg_conn.h"
#include "store/store.h"

namespace tx::store::postgres {

// Asks once for the lock, on `lead_conn`: the connection kept between tries (a standby asks every
// second), connected to `url` first when there is none or it is broken. Granted: the Leadership,
// which takes the connection. Held by another session: null, and the connection is kept.
// Unavailable when the server cannot be reached or asked (the connection is dropped, to be made
// again at the next try).
Result<std::unique_ptr<Leadership>> TryAdvisoryLead(PgConnPtr& lead_conn, const std::string& url);

}  // namespace tx::store::postgres
