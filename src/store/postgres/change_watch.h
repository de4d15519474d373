#pragma once
// ChangeWatch for PostgreSQL: a connection of its own that LISTENs on kWakeChannel. A
// transaction that makes a task ready calls pg_notify(kWakeChannel) before it commits;
// PostgreSQL delivers the notification at the commit, and only if it commits, so a woken worker
// sees the task. Workers on every host that shares the database hear it.
//
// If the connection drops, fd() becomes a timer that fires after a short backoff; Drain() then
// connects again (and reports a change, since notifications may have been missed meanwhile).

#include <memory>
#include <string>

#include "core/error.h"
#include "store/store.h"

namespace tx::store::postgres {

inline constexpr const char* kWakeChannel = "tx_wake";

Result<std::unique_ptr<ChangeWatch>> WatchNotifications(const std::string& url);

}  // namespace tx::store::postgres
