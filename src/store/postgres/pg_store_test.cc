// What only the PostgreSQL store does: its schema's own guards, LISTEN/NOTIFY wake-ups, row locks
// under concurrent writers, reconnecting, and the server's clock. Each test has a database of its
// own on the server of the ctest fixture `pg` (tests/pg_test_db.h); the tests that stop a server
// start one of their own (scripts/pg_server), so that they never disturb the others.

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pg_test_db.h"
#include "store/store.h"

namespace tx::store {
namespace {

namespace fs = std::filesystem;
using testing::PgConnect;
using testing::PgTestDb;

std::unique_ptr<Store> OpenOrDie(const std::string& url, bool create = false) {
  auto s = Open({url, create});
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? std::move(*s) : nullptr;
}

Task ReadyTask(const std::string& id, std::int64_t priority = 0) {
  Task t;
  t.id = id;
  t.title = "title of " + id;
  t.priority = priority;
  t.status = TaskStatus::kReady;
  t.created_at = t.updated_at = 1000;
  return t;
}

Worker NewWorker(const std::string& id) {
  Worker w;
  w.id = id;
  w.name = id;
  w.status = WorkerStatus::kIdle;
  w.registered_at = w.last_heartbeat_at = 1000;
  return w;
}

// Runs `sql` on `url`; the first value of the first row, or "ERROR: message".
std::string Query(const std::string& url, const std::string& sql) {
  std::string error;
  testing::PgConnPtr c = PgConnect(url, &error);
  if (!c) return "ERROR: " + error;
  testing::PgResultPtr r(PQexec(c.get(), sql.c_str()));
  ExecStatusType st = PQresultStatus(r.get());
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    return std::string("ERROR: ") + PQerrorMessage(c.get());
  }
  return st == PGRES_TUPLES_OK && PQntuples(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
}

// A PostgreSQL server of the test's own (scripts/pg_server), for tests that stop or restart it.
class PrivateServer {
 public:
  PrivateServer() {
    char tmpl[] = "/tmp/tx-pgtest-XXXXXX";
    dir_ = std::string(mkdtemp(tmpl)) + "/pg";
    ok_ = Run("start") == 0;
    std::ifstream in(dir_ + "/url");
    std::getline(in, url_);
  }
  ~PrivateServer() {
    Run("stop");
    fs::remove_all(fs::path(dir_).parent_path());
  }
  bool ok() const { return ok_ && !url_.empty(); }
  const std::string& url() const { return url_; }
  int Run(const std::string& verb) {
    std::string cmd = std::string(TX_SOURCE_DIR) + "/scripts/pg_server " + verb + " " + dir_ +
                      " >/dev/null 2>" + dir_ + ".err";
    return std::system(cmd.c_str());
  }

 private:
  std::string dir_;
  std::string url_;
  bool ok_ = false;
};

TEST(PostgresStore, OpeningADatabaseWithoutTheSchemaSaysToRunInit) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto s = Open({db.url(), /*create=*/false});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("tx init"), std::string::npos) << s.error().message();
  EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0")
      << "a refused open wrote something";
}

TEST(PostgresStore, RefusesASchemaNewerThanItKnowsAndMigratesOnlyOnce) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  ASSERT_TRUE(OpenOrDie(db.url(), true));
  std::string applied = Query(db.url(), "SELECT count(*) FROM tx_schema");
  ASSERT_TRUE(OpenOrDie(db.url()));  // opening again applies nothing
  EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM tx_schema"), applied);
  EXPECT_EQ(Query(db.url(), "SELECT max(version) FROM tx_schema"), std::to_string(SchemaVersion()));
  Query(db.url(), "INSERT INTO tx_schema VALUES (99)");
  auto s = Open({db.url(), false});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("schema version 99, newer than this tx knows"),
            std::string::npos)
      << s.error().message();
}

TEST(PostgresStore, ManyProcessesOpeningAFreshDatabaseAtOnceMigrateItOnce) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      if (!Open({db.url(), true}).ok()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM tx_schema"), std::to_string(SchemaVersion()));
}

TEST(PostgresStore, ClaimsTheirTasksAndTheirWorkersAreNeverDeleted) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = OpenOrDie(db.url(), true);
  Task t = ReadyTask("task-aaaaaaa1");
  Worker w = NewWorker("worker-aaaaaaaa");
  Claim c{0, t.id, w.id, 1, 1, 100, 101};
  ASSERT_TRUE(store
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.InsertTask(t));
                    TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                    return txn.InsertClaim(c);
                  })
                  .ok());
  std::string refused = Query(db.url(), "DELETE FROM claims");
  EXPECT_NE(refused.find("claims are never deleted"), std::string::npos) << refused;
  EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM claims"), "1");
  // Nor the task or worker a claim refers to (the rule that stands in for foreign keys).
  for (std::string table : {"tasks", "workers"}) {
    refused = Query(db.url(), "DELETE FROM " + table);
    EXPECT_NE(refused.find(table + " are never deleted"), std::string::npos) << refused;
    EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM " + table), "1");
  }
  // Nor emptied by TRUNCATE, which row triggers do not see.
  for (std::string table : {"claims", "tasks", "workers"}) {
    refused = Query(db.url(), "TRUNCATE " + table + " CASCADE");
    EXPECT_NE(refused.find(table + " are never deleted"), std::string::npos) << refused;
    EXPECT_EQ(Query(db.url(), "SELECT count(*) FROM " + table), "1");
  }
}

// A write transaction locks the rows it reads: read-modify-writes of one row from many
// connections at once lose no update (READ COMMITTED alone would).
TEST(PostgresStore, ConcurrentReadModifyWritesOfOneRowLoseNoUpdate) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto setup = OpenOrDie(db.url(), true);
  Worker w = NewWorker("worker-aaaaaaaa");
  ASSERT_TRUE(setup->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  constexpr int kThreads = 6, kEach = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      auto store = Open({db.url(), false});
      if (!store.ok()) {
        ++failures;
        return;
      }
      for (int n = 0; n < kEach; ++n) {
        Status s = (*store)->Write([&](Txn& txn) -> Status {
          TX_ASSIGN_OR_RETURN(std::optional<Worker> got, txn.GetWorker(w.id));
          if (!got) return Error::NotFound("gone");
          got->metadata["n"] = got->metadata.value("n", 0) + 1;
          return txn.UpdateWorker(*got);
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  ASSERT_TRUE(setup
                  ->Read([&](Txn& txn) -> Status {
                    auto got = txn.GetWorker(w.id);
                    EXPECT_TRUE(got.ok() && *got);
                    EXPECT_EQ((**got).metadata.value("n", 0), kThreads * kEach);
                    return Ok();
                  })
                  .ok());
}

// Claimers skip each other's locked rows instead of waiting or failing: every task is picked by
// exactly one of them.
TEST(PostgresStore, ConcurrentPicksNeverTakeOneTaskTwice) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto setup = OpenOrDie(db.url(), true);
  constexpr int kTasks = 200, kThreads = 8;
  ASSERT_TRUE(setup
                  ->Write([&](Txn& txn) -> Status {
                    for (int i = 0; i < kTasks; ++i) {
                      char id[16];
                      std::snprintf(id, sizeof id, "task-%08d", i);
                      Task t = ReadyTask(id);
                      TX_RETURN_IF_ERROR(txn.InsertTask(t));
                    }
                    for (int i = 0; i < kThreads; ++i) {
                      TX_RETURN_IF_ERROR(
                          txn.InsertWorker(NewWorker("worker-0000000" + std::to_string(i))));
                    }
                    return Ok();
                  })
                  .ok());
  std::vector<std::vector<std::string>> taken(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto store = Open({db.url(), false});
      if (!store.ok()) {
        ++failures;
        return;
      }
      for (;;) {
        std::optional<std::string> got;
        Status s = (*store)->Write([&](Txn& txn) -> Status {
          got.reset();
          TX_ASSIGN_OR_RETURN(std::optional<Task> t,
                              txn.PickNextReady(PickCriteria{{"default"}, {}, "w", "", 5000}));
          if (!t) return Ok();
          t->status = TaskStatus::kRunning;
          TX_RETURN_IF_ERROR(txn.UpdateTaskState(*t));
          Claim c{0, t->id, "worker-0000000" + std::to_string(i), 1, 1, 100, 101};
          TX_RETURN_IF_ERROR(txn.InsertClaim(c));
          got = t->id;
          return Ok();
        });
        if (!s.ok()) {
          ++failures;
          return;
        }
        if (!got) return;
        taken[static_cast<std::size_t>(i)].push_back(*got);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  std::set<std::string> all;
  std::size_t total = 0;
  for (const auto& v : taken) {
    total += v.size();
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kTasks));
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kTasks)) << "a task was taken twice";
}

TEST(PostgresStore, ACommitThatMakesATaskReadyWakesTheWatchAndOthersDoNot) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto watcher = OpenOrDie(db.url(), true);
  auto watch = watcher->Watch();
  ASSERT_TRUE(watch.ok()) << watch.error().message();
  ASSERT_GE((*watch)->fd(), 0);
  pollfd quiet{(*watch)->fd(), POLLIN, 0};
  EXPECT_EQ(poll(&quiet, 1, 50), 0) << "woken with nothing written";

  auto writer = OpenOrDie(db.url());
  Event e{0, "x", 1, "", "", {}};
  ASSERT_TRUE(writer->Write([&](Txn& txn) { return txn.AppendEvent(e); }).ok());
  EXPECT_EQ(poll(&quiet, 1, 100), 0) << "woken by a commit that made no task ready";

  // A rolled-back transaction that made a task ready wakes no one.
  Status rolled_back = writer->Write([&](Txn& txn) -> Status {
    Task t = ReadyTask("task-aaaaaaa0");
    TX_RETURN_IF_ERROR(txn.InsertTask(t));
    return Error::Conflict("changed my mind");
  });
  ASSERT_FALSE(rolled_back.ok());
  EXPECT_EQ(poll(&quiet, 1, 100), 0) << "woken by a transaction that rolled back";

  Task t = ReadyTask("task-aaaaaaa1");
  ASSERT_TRUE(writer->Write([&](Txn& txn) { return txn.InsertTask(t); }).ok());
  pollfd woken{(*watch)->fd(), POLLIN, 0};
  ASSERT_EQ(poll(&woken, 1, 5000), 1);
  EXPECT_TRUE((*watch)->Drain());
  EXPECT_FALSE((*watch)->Drain()) << "one commit, one wake-up";
}

// The watch's connection killed by the server: it says a change may have been missed, listens
// again on its own, and hears the next commit.
TEST(PostgresStore, TheWatchListensAgainAfterItsConnectionIsTerminated) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = OpenOrDie(db.url(), true);
  auto watch = store->Watch();
  ASSERT_TRUE(watch.ok());
  ASSERT_GE(db.TerminateBackends(), 1) << db.error();
  auto wait_and_drain = [&](int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{(*watch)->fd(), POLLIN, 0};
      if (poll(&p, 1, 100) == 1 && (*watch)->Drain()) return true;
    }
    return false;
  };
  EXPECT_TRUE(wait_and_drain(10'000)) << "the lost connection was not reported as a change";
  // The store's own connection was terminated too: the next write reconnects by itself.
  Task t = ReadyTask("task-aaaaaaa1");
  Status s = store->Write([&](Txn& txn) { return txn.InsertTask(t); });
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(wait_and_drain(10'000)) << "the watch did not hear a commit after listening again";
}

// Event 1 is written by a transaction that commits after the one writing event 2: a follower
// that read 2 first would never see 1. So neither is listed until both have committed — also
// when the transaction of event 2 began (took its transaction id) before that of event 1, so
// that transaction ids and event ids disagree on the order.
TEST(PostgresStore, AnEventIsListedOnlyOnceEveryEarlierIdHasCommitted) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto reader = OpenOrDie(db.url(), true);
  Worker w = NewWorker("worker-aaaaaaaa");
  ASSERT_TRUE(reader->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  std::atomic<int> stage{0};
  auto wait_for = [&](int n) {
    while (stage.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  // E: begins first (a row lock gives it its transaction id), writes its event last, commits first.
  std::thread early([&] {
    auto store = Open({db.url(), false});
    ASSERT_TRUE(store.ok());
    Status s = (*store)->Write([&](Txn& txn) -> Status {
      TX_RETURN_IF_ERROR(txn.GetWorker(w.id).ok() ? Ok() : Status(Error::Internal("read")));
      stage = 1;
      wait_for(2);  // F has written event 1 and waits
      TX_RETURN_IF_ERROR(txn.AppendEventData("second", 2, "", "", "{}"));
      return Ok();
    });
    EXPECT_TRUE(s.ok()) << s.error().message();
    stage = 3;
  });
  // F: begins second, writes event 1, commits last.
  std::thread late([&] {
    wait_for(1);
    auto store = Open({db.url(), false});
    ASSERT_TRUE(store.ok());
    Status s = (*store)->Write([&](Txn& txn) -> Status {
      TX_RETURN_IF_ERROR(txn.AppendEventData("first", 1, "", "", "{}"));
      TX_RETURN_IF_ERROR(txn.LastEventId().ok() ? Ok() : Status(Error::Internal("read")));
      stage = 2;  // event 1 has its id; the transaction stays open
      wait_for(4);
      return Ok();
    });
    EXPECT_TRUE(s.ok()) << s.error().message();
  });
  auto list = [&] {
    std::vector<std::string> types;
    EXPECT_TRUE(reader
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(std::vector<Event> events, txn.ListEvents(0, 0));
                      for (const auto& e : events) types.push_back(e.type);
                      return Ok();
                    })
                    .ok());
    return types;
  };
  wait_for(3);  // E committed event 2; F still holds event 1
  EXPECT_EQ(list(), std::vector<std::string>{}) << "event 2 listed before event 1 committed";
  ASSERT_TRUE(reader
                  ->Read([&](Txn& txn) -> Status {
                    EXPECT_EQ(txn.LastEventId().value(), 0);
                    return Ok();
                  })
                  .ok());
  std::int64_t counter = reader->ChangeCounter().value();
  stage = 4;
  late.join();
  early.join();
  EXPECT_EQ(list(), (std::vector<std::string>{"first", "second"}));
  EXPECT_NE(reader->ChangeCounter().value(), counter)
      << "the change counter did not move when the events became visible";
  ASSERT_TRUE(reader
                  ->Read([&](Txn& txn) -> Status {
                    EXPECT_EQ(txn.LastEventId().value(), 2);
                    return Ok();
                  })
                  .ok());
}

TEST(PostgresStore, AWriteAfterTheServerRestartedReconnectsAndSucceeds) {
  PrivateServer server;
  ASSERT_TRUE(server.ok());
  auto store = OpenOrDie(server.url(), true);
  Task a = ReadyTask("task-aaaaaaa1");
  ASSERT_TRUE(store->Write([&](Txn& txn) { return txn.InsertTask(a); }).ok());
  ASSERT_EQ(server.Run("restart"), 0);
  Task b = ReadyTask("task-aaaaaaa2");
  Status s = store->Write([&](Txn& txn) { return txn.InsertTask(b); });
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(Query(server.url(), "SELECT count(*) FROM tasks"), "2");
}

TEST(PostgresStore, AServerGoneLongerThanTheReconnectTimeoutIsAClearError) {
  PrivateServer server;
  ASSERT_TRUE(server.ok());
  setenv("TX_PG_RECONNECT_TIMEOUT", "1s", 1);
  auto store = OpenOrDie(server.url(), true);
  unsetenv("TX_PG_RECONNECT_TIMEOUT");
  ASSERT_EQ(server.Run("stop"), 0);
  auto start = std::chrono::steady_clock::now();
  Task t = ReadyTask("task-aaaaaaa1");
  Status s = store->Write([&](Txn& txn) { return txn.InsertTask(t); });
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(s.error().message().find("unreachable for"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("TX_PG_RECONNECT_TIMEOUT"), std::string::npos)
      << s.error().message();
  EXPECT_LT(took, std::chrono::seconds(20));
}

// Lease and heartbeat times are the server's: the store's clock agrees with clock_timestamp().
TEST(PostgresStore, TheClockIsTheServersClock) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = OpenOrDie(db.url(), true);
  Millis ours = store->clock().NowMs();
  Millis server =
      std::stoll(Query(db.url(), "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"));
  EXPECT_LT(std::llabs(server - ours), 1000) << "store clock " << ours << ", server " << server;
}

TEST(PostgresStore, DescribeHidesThePassword) {
  PgTestDb db;
  ASSERT_TRUE(db.ok()) << db.error();
  auto store = OpenOrDie(db.url(), true);
  EXPECT_EQ(store->Describe(), db.url());
  auto s = Open({"postgresql://tx:secret@127.0.0.1:1/none", false});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message().find("secret"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace tx::store
