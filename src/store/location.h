#pragma once
// Where a store is, and where this machine keeps the files that go with it (config.toml, logs/,
// the API token, the orchestrator's pid file). A SQLite store keeps them beside its file, in
// .tx/; a PostgreSQL store is shared by many machines, so each keeps its own in the .tx/ of the
// directory it runs in.

#include <string>
#include <string_view>

namespace tx::store {

// "postgresql://…" or "postgres://…".
bool IsPostgresUrl(std::string_view db);

// The store for messages: a path as it is, a URL without its password.
std::string Describe(const std::string& db);

// A path made absolute (so that children started elsewhere find it); a URL as it is.
std::string AbsoluteLocation(const std::string& db);

// The absolute directory of this machine's files for the store `db`: beside a SQLite file; for a
// PostgreSQL store, $TX_DIR if set (an orchestrator sets it for its workers), else .tx here.
std::string LocalDir(const std::string& db);

// The logs of one attempt under `logs_dir` (LocalDir's logs/ where the server keeps them): the
// readable one (tx task log), and a structured agent's raw output.
std::string AttemptLogPath(const std::string& logs_dir, const std::string& task_id, int attempt);
std::string AttemptRawLogPath(const std::string& logs_dir, const std::string& task_id, int attempt);

}  // namespace tx::store
