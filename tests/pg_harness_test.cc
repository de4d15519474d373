// The PostgreSQL harness itself (tests/pg_test_db.h, scripts/pg_server): every test here runs
// against the server of the ctest fixture `pg` — a fresh database each, dropped afterwards.

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "pg_test_db.h"

namespace tx::testing {
namespace {

// Runs `sql` on `conn`; the first column of its first row, or nullopt when it fails.
std::optional<std::string> QueryValue(PGconn* conn, const std::string& sql) {
  PgResultPtr result(PQexec(conn, sql.c_str()));
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) < 1) {
    return std::nullopt;
  }
  return std::string(PQgetvalue(result.get(), 0, 0));
}

// How many of the databases named exist on the server, asked over a connection of its own.
std::string CountDatabases(const std::string& a, const std::string& b) {
  std::optional<std::string> admin = PgTestDb::AdminUrl();
  if (!admin) return "no server";
  std::string error;
  PgConnPtr conn = PgConnect(*admin, &error);
  if (!conn) return error;
  return QueryValue(conn.get(),
                    "SELECT count(*) FROM pg_database WHERE datname IN ('" + a + "', '" + b + "')")
      .value_or("query failed");
}

TEST(PgTestDb, CreatesAFreshDatabaseThatAcceptsConnections) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  EXPECT_EQ(db.name().rfind("tx_t_", 0), 0u) << db.name();
  EXPECT_EQ(db.url(), PgTestDb::DatabaseUrl(db.admin_url(), db.name()));

  std::string error;
  PgConnPtr conn = PgConnect(db.url(), &error);
  ASSERT_TRUE(conn) << error;
  EXPECT_EQ(QueryValue(conn.get(), "select 1"), "1");
  EXPECT_EQ(QueryValue(conn.get(), "select current_database()"), db.name());
  EXPECT_EQ(QueryValue(conn.get(), "select count(*) from pg_tables where schemaname = 'public'"),
            "0");
}

TEST(PgTestDb, EachDatabaseIsDistinctAndBothAreDroppedEvenWithConnectionsOpen) {
  std::string a_name, b_name;
  PgConnPtr still_open;  // outlives the databases: the drop must not wait for it
  {
    PgTestDb a, b;
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    a_name = a.name();
    b_name = b.name();
    EXPECT_NE(a.name(), b.name());
    EXPECT_NE(a.url(), b.url());

    std::string error;
    PgConnPtr to_a = PgConnect(a.url(), &error);
    ASSERT_TRUE(to_a) << error;
    PgConnPtr to_b = PgConnect(b.url(), &error);
    ASSERT_TRUE(to_b) << error;
    ASSERT_EQ(QueryValue(to_a.get(),
                         "create table t(x int); insert into t values (7); "
                         "select x from t"),
              "7");
    EXPECT_EQ(QueryValue(to_a.get(), "select count(*) from t"), "1");
    EXPECT_EQ(QueryValue(to_b.get(), "select count(*) from pg_tables where tablename = 't'"), "0");
    EXPECT_EQ(CountDatabases(a_name, b_name), "2");
    still_open = std::move(to_a);
  }
  EXPECT_EQ(CountDatabases(a_name, b_name), "0");
  EXPECT_EQ(QueryValue(still_open.get(), "select 1"), std::nullopt);
}

TEST(PgTestDb, TerminateBackendsDropsTheDatabasesConnectionsAndANewOneWorks) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  std::string error;
  PgConnPtr conn = PgConnect(db.url(), &error);
  ASSERT_TRUE(conn) << error;
  ASSERT_EQ(QueryValue(conn.get(), "select 1"), "1");

  EXPECT_EQ(db.TerminateBackends(), 1) << db.error();
  EXPECT_EQ(QueryValue(conn.get(), "select 1"), std::nullopt);
  EXPECT_EQ(PQstatus(conn.get()), CONNECTION_BAD);

  PgConnPtr again = PgConnect(db.url(), &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(QueryValue(again.get(), "select 1"), "1");
  EXPECT_EQ(db.Exec("select 1; select 2"), "");
  EXPECT_NE(db.Exec("select * from no_such_table"), "");
  EXPECT_NE(db.error().find("no_such_table"), std::string::npos) << db.error();
}

// Restores an environment variable on destruction.
class ScopedUnsetEnv {
 public:
  explicit ScopedUnsetEnv(const char* name) : name_(name) {
    if (const char* value = std::getenv(name)) saved_ = value;
    unsetenv(name);
  }
  ~ScopedUnsetEnv() {
    if (saved_) setenv(name_, saved_->c_str(), 1);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

void MakeADatabaseWithoutAServer() {
  PgTestDb db;
  EXPECT_FALSE(db.ok());
  EXPECT_NE(db.error().find("TX_TEST_PG_URL_FILE"), std::string::npos) << db.error();
}

TEST(PgTestDb, WithoutAServerTheTestFailsInsteadOfSkipping) {
  ScopedUnsetEnv url("TX_TEST_PG_URL"), url_file("TX_TEST_PG_URL_FILE");
  EXPECT_EQ(PgTestDb::AdminUrl(), std::nullopt);
  EXPECT_NONFATAL_FAILURE(MakeADatabaseWithoutAServer(), "neither TX_TEST_PG_URL nor");
}

TEST(PgTestDb, DatabaseUrlReplacesOnlyTheDatabase) {
  EXPECT_EQ(PgTestDb::DatabaseUrl("postgresql://tx@127.0.0.1:5432/postgres", "d"),
            "postgresql://tx@127.0.0.1:5432/d");
  EXPECT_EQ(PgTestDb::DatabaseUrl("postgres://h:1", "d"), "postgres://h:1/d");
  EXPECT_EQ(PgTestDb::DatabaseUrl("postgresql://h/postgres?sslmode=disable", "d"),
            "postgresql://h/d?sslmode=disable");
  EXPECT_EQ(PgTestDb::DatabaseUrl("postgresql://h?sslmode=disable", "d"),
            "postgresql://h/d?sslmode=disable");
  EXPECT_EQ(PgTestDb::DatabaseUrl("host=h dbname=postgres", "d"), "");
}

}  // namespace
}  // namespace tx::testing
