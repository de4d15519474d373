#pragma once
// PgTestDb: a fresh PostgreSQL database for one test, on the server of the ctest fixture `pg`
// (scripts/pg_server, tests/pg.cmake), dropped when the object goes.
//
// The server's URL is $TX_TEST_PG_URL, else the first line of the file $TX_TEST_PG_URL_FILE
// names (ctest sets that for every test that requires the fixture). Without either, or when the
// database cannot be made, the constructor records a gtest failure — a test that needs
// PostgreSQL fails, it is never skipped — and ok() is false with the reason in error(). So:
//
//   tx::testing::PgTestDb db;
//   ASSERT_TRUE(db.ok()) << db.error();
//   ... open the store at db.url() ...
//
// The database is tx_t_<pid>_<counter>_<random>, so tests running in parallel processes never
// share one. The destructor drops it WITH (FORCE), connections still open to it included, and
// records a gtest failure when it cannot.
//
// The object holds one connection to the server's admin database (superuser tx): Exec() and
// TerminateBackends() run there, for tests that break the store's connections. A lost admin
// connection (scripts/pg_server restart) is reopened once, then the statement is run again.
// Not thread-safe: one object per thread.

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tx::testing {

struct PgConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgResultClearer {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgConnPtr = std::unique_ptr<PGconn, PgConnCloser>;
using PgResultPtr = std::unique_ptr<PGresult, PgResultClearer>;

namespace pg_detail {

inline std::string TrimmedMessage(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace pg_detail

// Connects to `url`. Returns null on failure, with the reason in *error when error is given.
inline PgConnPtr PgConnect(const std::string& url, std::string* error = nullptr) {
  PgConnPtr conn(PQconnectdb(url.c_str()));
  if (conn && PQstatus(conn.get()) == CONNECTION_OK) return conn;
  if (error) {
    *error = "connect to " + url + ": " +
             (conn ? pg_detail::TrimmedMessage(PQerrorMessage(conn.get())) : "out of memory");
  }
  return nullptr;
}

class PgTestDb {
 public:
  // The server's URL from the environment (see above); nullopt when neither variable gives one.
  static std::optional<std::string> AdminUrl() {
    std::string ignored;
    return ReadAdminUrl(&ignored);
  }

  // `server_url` (a postgresql:// or postgres:// URL) with its database replaced by `dbname`,
  // query parameters kept; "" when server_url is not such a URL.
  static std::string DatabaseUrl(std::string_view server_url, std::string_view dbname) {
    std::string_view rest;
    for (std::string_view scheme : {"postgresql://", "postgres://"}) {
      if (server_url.substr(0, scheme.size()) == scheme) rest = server_url.substr(scheme.size());
    }
    if (rest.empty()) return "";
    size_t authority_end = rest.find_first_of("/?");
    if (authority_end == std::string_view::npos) authority_end = rest.size();
    size_t base = server_url.size() - rest.size() + authority_end;  // at '/', '?' or the end
    size_t query = server_url.find('?', base);
    if (query == std::string_view::npos) query = server_url.size();
    return std::string(server_url.substr(0, base)) + "/" + std::string(dbname) +
           std::string(server_url.substr(query));
  }

  PgTestDb() {
    std::string error = Create();
    if (!error.empty()) {
      error_ = "PgTestDb: " + error;
      ADD_FAILURE() << error_;
    }
  }

  ~PgTestDb() {
    if (!ok_) return;
    if (std::string e = Exec("DROP DATABASE IF EXISTS \"" + name_ + "\" WITH (FORCE)");
        !e.empty()) {
      ADD_FAILURE() << "PgTestDb: could not drop the test database: " << e;
    }
  }

  PgTestDb(const PgTestDb&) = delete;
  PgTestDb& operator=(const PgTestDb&) = delete;

  // True once the database exists; otherwise error() says why and a failure is recorded.
  bool ok() const { return ok_; }
  // The last failure: of the constructor, of Exec or of TerminateBackends.
  const std::string& error() const { return error_; }
  // postgresql://tx@127.0.0.1:PORT/tx_t_... — the test's own database.
  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  // The server's URL, to its admin database.
  const std::string& admin_url() const { return admin_url_; }

  // Runs `sql` (statements without parameters) on the admin connection. Returns "" on success,
  // else the server's message (also in error()).
  std::string Exec(std::string_view sql) {
    std::string error;
    Run(std::string(sql), {}, &error);
    return error;
  }

  // Terminates every backend connected to `dbname` (this test's database when empty) but the
  // admin connection's own — pg_terminate_backend, waiting up to 5 s for each to exit. Returns
  // how many were terminated, or -1 with the message in error().
  int TerminateBackends(std::string_view dbname = {}) {
    std::string error;
    PgResultPtr result =
        Run("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            {std::string(dbname.empty() ? std::string_view(name_) : dbname)}, &error);
    if (!result) return -1;
    int terminated = 0;
    for (int row = 0; row < PQntuples(result.get()); ++row) {
      if (std::string_view(PQgetvalue(result.get(), row, 0)) == "t") ++terminated;
    }
    return terminated;
  }

 private:
  static std::optional<std::string> ReadAdminUrl(std::string* error) {
    if (const char* url = std::getenv("TX_TEST_PG_URL"); url && *url) return std::string(url);
    const char* file = std::getenv("TX_TEST_PG_URL_FILE");
    if (!file || !*file) {
      *error =
          "this test needs PostgreSQL and neither TX_TEST_PG_URL nor TX_TEST_PG_URL_FILE is set. "
          "Run it through ctest, which starts the server (fixture pg, tests/pg.cmake), or start "
          "one with `scripts/pg_server start DIR` and set TX_TEST_PG_URL_FILE=DIR/url";
      return std::nullopt;
    }
    std::ifstream in(file);
    std::string url;
    std::getline(in, url);
    while (!url.empty() && (url.back() == '\r' || url.back() == ' ')) url.pop_back();
    if (url.empty()) {
      *error = std::string("no URL in TX_TEST_PG_URL_FILE=") + file +
               " (did the ctest fixture pg_server_start fail? see its output)";
      return std::nullopt;
    }
    return url;
  }

  static std::string NewName() {
    static std::atomic<unsigned> counter{0};
    char random[9];
    std::snprintf(random, sizeof random, "%08x", static_cast<unsigned>(std::random_device{}()));
    return "tx_t_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + random;
  }

  // Makes the database; returns "" or why it could not.
  std::string Create() {
    std::string error;
    std::optional<std::string> admin = ReadAdminUrl(&error);
    if (!admin) return error;
    admin_url_ = *admin;
    std::string name = NewName();
    url_ = DatabaseUrl(admin_url_, name);
    if (url_.empty()) return "the server's URL is not a postgresql:// URL: " + admin_url_;
    admin_ = PgConnect(admin_url_, &error);
    if (!admin_) return error + " (is the server of the ctest fixture pg_server_start running?)";
    error = Exec("CREATE DATABASE \"" + name + "\"");
    if (!error.empty()) return error;
    name_ = name;
    ok_ = true;
    return "";
  }

  // Runs `sql` on the admin connection, reopening it once when it was lost. Returns the result
  // of a successful statement, else null with the message in *error and error_.
  PgResultPtr Run(const std::string& sql, const std::vector<std::string>& params,
                  std::string* error) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    for (int attempt = 0;; ++attempt) {
      if (!admin_ || PQstatus(admin_.get()) != CONNECTION_OK) {
        admin_ = PgConnect(admin_url_, error);
        if (!admin_) break;
      }
      PgResultPtr result(values.empty() ? PQexec(admin_.get(), sql.c_str())
                                        : PQexecParams(admin_.get(), sql.c_str(),
                                                       static_cast<int>(values.size()), nullptr,
                                                       values.data(), nullptr, nullptr, 0));
      ExecStatusType status = PQresultStatus(result.get());
      if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
      if (attempt == 0 && PQstatus(admin_.get()) == CONNECTION_BAD) continue;
      *error = sql + ": " + pg_detail::TrimmedMessage(PQerrorMessage(admin_.get()));
      break;
    }
    error_ = *error;
    return nullptr;
  }

  bool ok_ = false;
  std::string error_;
  std::string admin_url_;
  std::string name_;
  std::string url_;
  PgConnPtr admin_;
};

}  // namespace tx::testing
