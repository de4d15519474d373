#pragma once
// tx migrate: a SQLite store copied into PostgreSQL, for a team that outgrows one machine.
// Everything is copied as it is — tasks (their order), dependencies, workers, claims (their
// fencing tokens), events (their numbers) and the reconciler's record — so attempts and the
// event log read the same afterwards; new tokens, task numbers and event numbers continue after
// the copied ones. The orchestrators' rows are not copied: each host starts its own.

#include <cstdint>
#include <string>

#include "core/error.h"

namespace tx::store {

struct MigrateReport {
  std::int64_t tasks = 0;
  std::int64_t dependencies = 0;
  std::int64_t workers = 0;
  std::int64_t claims = 0;
  std::int64_t events = 0;
  std::int64_t usage = 0;   // the usage ledger's rows
  std::int64_t limits = 0;  // agent limits
  std::int64_t notices = 0;
  std::int64_t deliveries = 0;  // notifications' deliveries (the outbox's cursor goes along)
};

// Copies the SQLite store at `from` (brought to the current schema first) into the PostgreSQL
// store at `to` (created if it has no schema yet). The source is read in one transaction, a
// consistent snapshot; the destination is written in one transaction: on any failure nothing is
// written. conflict when the destination already holds tasks, workers or events;
// invalid_argument when `from` is not a SQLite store or `to` not a postgresql:// URL.
Result<MigrateReport> CopySqliteToPostgres(const std::string& from, const std::string& to);

}  // namespace tx::store
