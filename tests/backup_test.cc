// tx backup and tx restore end to end (issue 24): the real binary on a real SQLite store — a
// backup taken while an orchestrator runs many tasks and tasks keep arriving, checked with
// PRAGMA integrity_check and task by task; --force and the refusals; a restore refused while an
// orchestrator, a worker or any other process has the store, and refused for a file that is no
// tx store, leaving the store as it was; a round trip that brings the tasks back as they were.

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator_fixture.h"
#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;
using Args = std::vector<std::string>;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// The refusals are one line on stderr.
bool OneLine(const std::string& err) { return !err.empty() && err.find('\n') == err.size() - 1; }

// Runs `sql` on the database file at `path` (read-only) and returns every row's first column.
std::vector<std::string> Sql(const std::string& path, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10'000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char* t = sqlite3_column_text(st, 0);
        out.push_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
      }
    } else {
      out.push_back(std::string("error: ") + sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

std::string IntegrityCheck(const std::string& path) {
  std::vector<std::string> rows = Sql(path, "PRAGMA integrity_check");
  return rows.empty() ? "(no answer)" : rows[0];
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Backup : public OrchestratorTest {
 protected:
  std::string AddTask(const std::string& title, Args extra = {}) {
    Args args = {"--json", "task", "add", title};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  }

  // id → status of every task, as tx task list says.
  std::map<std::string, std::string> TaskStates() {
    std::map<std::string, std::string> out;
    for (const auto& t : Tasks()) out[t["id"]] = t["status"];
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// tx backup

TEST_F(Backup, ABackupWhileABusyOrchestratorRunsIsSoundAndHoldsEveryTaskAddedBefore_Issue24) {
  StartOrchestrator({"--workers", "3"});
  // Tasks keep arriving while the pool runs them (each a quick command) and the backups are taken.
  std::mutex mu;
  std::vector<std::string> added;
  std::atomic<bool> stop{false};
  std::thread adder([&] {
    for (int i = 0; !stop; ++i) {
      RunResult r = Tx({"--json", "task", "add", "job " + std::to_string(i), "--command", "true"});
      if (r.exit_code != 0) continue;
      std::lock_guard<std::mutex> lock(mu);
      added.push_back(json::parse(r.out)["id"]);
    }
  });
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return added.size();
  };
  ASSERT_TRUE(WaitFor([&] { return count() >= 100 && CountTasks("done") >= 50; }, 120s))
      << count() << " added\n"
      << Log();
  const std::size_t added_before_backups = count();
  for (int n = 0; n < 3; ++n) {
    std::vector<std::string> before;
    {
      std::lock_guard<std::mutex> lock(mu);
      before = added;  // each added (its tx task add returned) before the backup starts
    }
    std::string path = Path("backup-" + std::to_string(n) + ".db");
    RunResult r = Tx({"backup", path});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(IntegrityCheck(path), "ok") << path;
    std::vector<std::string> ids = Sql(path, "SELECT id FROM tasks");
    std::set<std::string> in_backup(ids.begin(), ids.end());
    for (const std::string& id : before) {
      EXPECT_TRUE(in_backup.contains(id)) << id << " is missing from backup " << n;
    }
    // What it says it copied is what the file holds.
    EXPECT_TRUE(Contains(r.out, ": " + std::to_string(ids.size()) + " tasks, ")) << r.out;
    EXPECT_TRUE(Contains(r.out, "backed up ")) << r.out;
    EXPECT_EQ(Sql(path, "PRAGMA journal_mode"), std::vector<std::string>{"delete"})
        << "a backup is one file";
    EXPECT_FALSE(fs::exists(path + "-wal"));
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_GT(count(), added_before_backups) << "tasks went on arriving during the backups";
  stop = true;
  adder.join();
  // The pool went on: the backups blocked nothing for long.
  std::size_t total = count();
  EXPECT_TRUE(WaitFor([&] { return CountTasks("done") == static_cast<int>(total); }, 120s))
      << CountTasks("done") << " of " << total << " done\n"
      << Log();
  // No temporary file is left beside the backups.
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    EXPECT_FALSE(Contains(e.path().filename().string(), ".tx-backup-")) << e.path();
  }
}

TEST_F(Backup, JsonSaysWhatWasCopied) {
  AddTask("one");
  AddTask("two");
  RunResult r = Tx({"--json", "backup", Path("b.db")});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json j = json::parse(r.out);
  EXPECT_EQ(j["tasks"], 2);
  EXPECT_EQ(j["path"], Path("b.db"));
  EXPECT_EQ(j["bytes"], static_cast<std::int64_t>(fs::file_size(Path("b.db"))));
  EXPECT_GT(j["schema_version"].get<int>(), 0);
}

TEST_F(Backup, AnExistingFileIsRefusedUnlessForce) {
  AddTask("one");
  std::string path = Path("exists.db");
  std::ofstream(path) << "precious\n";
  RunResult r = Tx({"backup", path});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_TRUE(Contains(r.err, path + " exists: pass --force to replace it")) << r.err;
  EXPECT_EQ(Slurp(path), "precious\n") << "left as it was";

  RunResult forced = Tx({"backup", path, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << Describe(forced);
  EXPECT_EQ(IntegrityCheck(path), "ok");
  EXPECT_EQ(Sql(path, "SELECT count(*) FROM tasks"), std::vector<std::string>{"1"});
}

TEST_F(Backup, ADirectoryOrAMissingParentIsRefusedInOneLine) {
  fs::create_directories(Path("adir"));
  RunResult dir = Tx({"backup", Path("adir")});
  EXPECT_EQ(dir.exit_code, 2) << Describe(dir);
  EXPECT_TRUE(OneLine(dir.err)) << dir.err;
  EXPECT_TRUE(Contains(dir.err, Path("adir") + " is a directory")) << dir.err;

  RunResult missing = Tx({"backup", Path("no/such/dir/b.db")});
  EXPECT_EQ(missing.exit_code, 3) << Describe(missing);
  EXPECT_TRUE(OneLine(missing.err)) << missing.err;
  EXPECT_TRUE(Contains(missing.err, "no directory " + Path("no/such/dir"))) << missing.err;

  RunResult itself = Tx({"backup", "--force", db_});
  EXPECT_EQ(itself.exit_code, 2) << Describe(itself);
  EXPECT_TRUE(Contains(itself.err, "is the store itself")) << itself.err;
  EXPECT_EQ(IntegrityCheck(db_), "ok");
}

TEST_F(Backup, AKilledBackupLeavesNoPartialFile) {
  for (int i = 0; i < 200; ++i)
    AddTask("task " + std::to_string(i), {"--description", std::string(2000, 'x')});
  for (int round = 0; round < 16; ++round) {
    std::string path = Path("killed-" + std::to_string(round) + ".db");
    BackgroundProcess b(TX_BINARY, {"backup", path}, {}, dir_.str(), Path("killed.out"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * round));
    b.Signal(SIGKILL);
    b.Wait(10s);
    // Either no file at all, or the whole backup.
    if (fs::exists(path)) {
      EXPECT_EQ(IntegrityCheck(path), "ok") << "round " << round;
      EXPECT_EQ(Sql(path, "SELECT count(*) FROM tasks"), std::vector<std::string>{"200"});
    }
    // What a killed backup leaves beside PATH goes with the next backup to PATH.
    ASSERT_EQ(Tx({"backup", "--force", path}).exit_code, 0);
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      EXPECT_FALSE(Contains(e.path().filename().string(), ".tx-backup-")) << e.path();
    }
  }
}

TEST(BackupOnPostgres, IsRefusedPointingToPgDump) {
  TempDir dir;
  RunResult r =
      RunTx({"--db", "postgresql://tx@127.0.0.1:1/none", "backup", "x.db"}, {}, dir.str());
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_TRUE(Contains(r.err, "pg_dump -Fc")) << r.err;
  EXPECT_TRUE(Contains(r.err, "docs/operations.md")) << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "x.db"));

  std::ofstream(dir.path() / "y.db") << "";
  RunResult restore =
      RunTx({"--db", "postgresql://tx@127.0.0.1:1/none", "restore", "y.db"}, {}, dir.str());
  EXPECT_EQ(restore.exit_code, 2) << Describe(restore);
  EXPECT_TRUE(Contains(restore.err, "pg_restore")) << restore.err;
}

// ---------------------------------------------------------------------------------------------
// tx restore

TEST_F(Backup, ARestoreBringsTheTasksBackAsTheyWere) {
  std::string kept = AddTask("kept", {"--priority", "5"});
  std::string done = AddTask("done");
  std::string cancelled = AddTask("cancelled");
  ASSERT_EQ(Tx({"claim", done, "--worker", "alice"}).exit_code, 0);
  ASSERT_EQ(Tx({"task", "done", done, "--force", "--result", "it worked"}).exit_code, 0);
  ASSERT_EQ(Tx({"task", "cancel", cancelled}).exit_code, 0);
  std::map<std::string, std::string> before = TaskStates();
  json kept_before = Show(kept);
  std::string events_before = Sql(db_, "SELECT count(*) FROM events")[0];
  ASSERT_EQ(Tx({"backup", Path("b.db")}).exit_code, 0);

  // Afterwards: a task added, one retried, one cancelled.
  std::string later = AddTask("later");
  ASSERT_EQ(Tx({"task", "retry", cancelled}).exit_code, 0);
  ASSERT_EQ(Tx({"task", "cancel", kept}).exit_code, 0);
  ASSERT_NE(TaskStates(), before);

  RunResult r = Tx({"restore", Path("b.db")});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "restored ")) << r.out;
  EXPECT_TRUE(Contains(r.out, ": 3 tasks, ")) << r.out;
  EXPECT_EQ(TaskStates(), before);
  EXPECT_EQ(Show(kept), kept_before);
  EXPECT_EQ(Show(done)["result"], "it worked");
  EXPECT_EQ(Tx({"task", "show", later}).exit_code, 3) << "added after the backup: gone";
  EXPECT_EQ(Sql(db_, "SELECT count(*) FROM events")[0], events_before);
  EXPECT_EQ(IntegrityCheck(db_), "ok");
  EXPECT_EQ(Sql(db_, "PRAGMA journal_mode"), std::vector<std::string>{"wal"});
  EXPECT_FALSE(fs::exists(db_ + "-journal"));
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid"))) << "the restore's lock is let go";
  // The store works on: a task added and run by a pool.
  std::string after = AddShellTask("true");
  StartOrchestrator({"--workers", "1"});
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(after) == "done"; })) << Log();
}

TEST_F(Backup, ARestoreIntoAStoreThatDoesNotExistYetMakesIt) {
  std::string id = AddTask("carried over");
  ASSERT_EQ(Tx({"backup", Path("b.db")}).exit_code, 0);
  TempDir elsewhere;
  RunResult r = RunTx({"restore", Path("b.db")}, {}, elsewhere.str());
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  fs::path store = elsewhere.path() / ".tx" / "tx.db";
  EXPECT_EQ((fs::status(store).permissions() & fs::perms::all),
            fs::perms::owner_read | fs::perms::owner_write);
  RunResult show = RunTx({"--json", "task", "show", id}, {}, elsewhere.str());
  ASSERT_EQ(show.exit_code, 0) << Describe(show);
  EXPECT_EQ(json::parse(show.out)["title"], "carried over");
}

TEST_F(Backup, ARestoreIsRefusedWhileAnOrchestratorRuns_AndForceIsNoWayAround) {
  AddTask("first");
  ASSERT_EQ(Tx({"backup", Path("b.db")}).exit_code, 0);
  StartOrchestrator({"--workers", "1"});
  std::string later = AddTask("added while it runs");
  RunResult r = Tx({"restore", Path("b.db")});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_TRUE(Contains(r.err, "an orchestrator is already running on this store")) << r.err;
  RunResult forced = Tx({"restore", Path("b.db"), "--force"});
  EXPECT_EQ(forced.exit_code, 2) << "restore has no --force: " << Describe(forced);
  EXPECT_EQ(Show(later)["title"], "added while it runs") << "the store is as it was";
  EXPECT_TRUE(fs::exists(Path(".tx/orchestrator.pid"))) << "the orchestrator's lock is its own";
}

TEST_F(Backup, ARestoreIsRefusedWhileAWorkerRuns) {
  AddTask("first");
  ASSERT_EQ(Tx({"backup", Path("b.db")}).exit_code, 0);
  std::unique_ptr<BackgroundProcess> worker = StartHandWorker();
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().size() == 1; })) << worker->Output();
  std::string later = AddTask("added while it runs");
  RunResult r = Tx({"restore", Path("b.db")});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_TRUE(Contains(r.err, "1 workers still run on")) << r.err;
  EXPECT_TRUE(Contains(r.err, LiveWorkers()[0]["id"].get<std::string>())) << r.err;
  EXPECT_EQ(Show(later)["title"], "added while it runs") << "the store is as it was";

  // Gone (kill -9, before any reconcile): its row still says idle, its process is no more.
  worker->Signal(SIGKILL);
  worker->Wait(10s);
  RunResult after = Tx({"restore", Path("b.db")});
  EXPECT_EQ(after.exit_code, 0) << Describe(after);
}

TEST_F(Backup, ARestoreIsRefusedWhileAnotherProcessHasTheStoreOpen) {
  AddTask("first");
  ASSERT_EQ(Tx({"backup", Path("b.db")}).exit_code, 0);
  std::string later = AddTask("added after");
  // A reader that stays (tx serve, tx events --follow, a sqlite3 shell ...): this test's own.
  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "SELECT count(*) FROM tasks", nullptr, nullptr, nullptr),
            SQLITE_OK);
  RunResult r = Tx({"restore", Path("b.db")});
  EXPECT_EQ(r.exit_code, 4) << Describe(r);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_TRUE(Contains(r.err, "is open in another process")) << r.err;
  sqlite3_close(reader);
  EXPECT_EQ(TaskStatus(later), "ready") << "the store is as it was";
  EXPECT_EQ(Sql(db_, "PRAGMA journal_mode"), std::vector<std::string>{"wal"});
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
}

TEST_F(Backup, ARestoreOfAFileThatIsNoTxStoreIsRefusedInOneLineAndTheStoreIsUntouched) {
  std::string id = AddTask("precious");
  std::map<std::string, std::string> before = TaskStates();
  std::string text = Path("notes.txt");
  std::ofstream(text) << "these are not the tasks you are looking for\n" << std::string(4096, 'x');
  std::string empty_db = Path("empty.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(empty_db.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  std::string newer = Path("newer.db");
  ASSERT_EQ(Tx({"backup", newer}).exit_code, 0);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 999", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  const std::pair<std::string, std::string> cases[] = {
      {text, text + " is not a tx store: file is not a database"},
      {empty_db, empty_db + " is not a tx store: it has no tx schema"},
      {newer, newer + " has schema version 999, newer than this tx knows"},
      {Path("adir"), Path("adir") + " is a directory, not a tx store"},
  };
  fs::create_directories(Path("adir"));
  for (const auto& [file, says] : cases) {
    RunResult r = Tx({"restore", file});
    EXPECT_EQ(r.exit_code, 2) << file << ": " << Describe(r);
    EXPECT_TRUE(OneLine(r.err)) << r.err;
    EXPECT_TRUE(Contains(r.err, says)) << r.err;
  }
  RunResult missing = Tx({"restore", Path("nothing.db")});
  EXPECT_EQ(missing.exit_code, 3) << Describe(missing);
  EXPECT_TRUE(Contains(missing.err, "no file at " + Path("nothing.db"))) << missing.err;

  EXPECT_EQ(TaskStates(), before);
  EXPECT_EQ(Show(id)["title"], "precious");
  EXPECT_EQ(IntegrityCheck(db_), "ok");
  EXPECT_FALSE(fs::exists(Path(".tx/orchestrator.pid")));
}

TEST(BackupCompletion, TheNewCommandsAreCompleted) {
  TempDir dir;
  RunResult r = RunTx({"completion", "bash"}, {}, dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"backup", "restore"}) {
    EXPECT_TRUE(Contains(r.out, word)) << word;
  }
}

}  // namespace
