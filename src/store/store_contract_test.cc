// The store contract suite: one parameterised suite that every backend must pass (a SQLite
// file, SQLite :memory:, and PostgreSQL — a fresh database on the server of the ctest fixture
// `pg` for each test); then what only one backend does.

#include <gtest/gtest.h>
#include <poll.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pg_test_db.h"
#include "store/store.h"

namespace tx::store {
namespace {

namespace fs = std::filesystem;

enum class Kind { kFile, kMemory, kPostgres };

struct Backend {
  std::string name;
  Kind kind;
};
// Names the backend in test output (gtest would print the struct's bytes).
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

class StoreContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam().kind == Kind::kFile) {
      char tmpl[] = "/tmp/tx-store-XXXXXX";
      dir_ = mkdtemp(tmpl);
      url_ = dir_ + "/tx.db";
    } else if (GetParam().kind == Kind::kPostgres) {
      pg_ = std::make_unique<testing::PgTestDb>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url_ = pg_->url();
    } else {
      url_ = ":memory:";
    }
    auto s = Open({url_, /*create=*/true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
    pg_.reset();
  }

  Task NewTask(const std::string& id, std::int64_t priority = 0, std::string queue = "default") {
    Task t;
    t.id = id;
    t.title = "title of " + id;
    t.priority = priority;
    t.queue = std::move(queue);
    t.status = TaskStatus::kReady;
    t.created_at = t.updated_at = 1000;
    return t;
  }

  void Insert(Task t) {
    ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertTask(t); }).ok());
  }

  std::optional<Task> Pick(PickCriteria c) {
    std::optional<Task> out;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      auto r = txn.PickNextReady(c);
                      if (!r.ok()) return r.error();
                      out = *r;
                      return Ok();
                    })
                    .ok());
    return out;
  }

  PickCriteria Default() { return PickCriteria{{"default"}, {}, "w", "slot-1", 5000}; }

  std::unique_ptr<testing::PgTestDb> pg_;
  std::string dir_;
  std::string url_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreContract, TaskRoundTripsEveryField) {
  Task t = NewTask("task-aaaaaaaa", -3, "q1");
  t.description = "d";
  t.instructions = "i";
  t.deliverables = "x";
  t.steps = {"one", "two"};
  t.requires_caps = {"gpu"};
  t.owner = "slot-2";
  t.workdir = "/w";
  t.command = {"echo", "a b"};
  t.timeout_ms = 1234;
  t.max_attempts = 5;
  t.review = true;
  t.repo = "/repo";
  t.base_branch = "main";
  t.metadata = {{"k", {1, 2}}};
  t.attempt = 2;
  t.run_after = 77;
  Insert(t);
  std::optional<Task> got;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto r = txn.GetTask("task-aaaaaaaa");
                    if (!r.ok()) return r.error();
                    got = *r;
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(got);
  EXPECT_GT(got->seq, 0);
  EXPECT_EQ(got->steps, t.steps);
  EXPECT_EQ(got->requires_caps, t.requires_caps);
  EXPECT_EQ(got->command, t.command);
  EXPECT_EQ(got->metadata, t.metadata);
  EXPECT_EQ(got->priority, -3);
  EXPECT_EQ(got->queue, "q1");
  EXPECT_EQ(got->owner, "slot-2");
  EXPECT_EQ(got->timeout_ms, 1234);
  EXPECT_EQ(got->max_attempts, 5);
  EXPECT_TRUE(got->review);
  EXPECT_EQ(got->base_branch, "main");
  EXPECT_EQ(got->attempt, 2);
  EXPECT_EQ(got->run_after, 77);
}

// A task whose id is taken is not inserted: InsertNewTask says so and writes nothing (the
// service then draws another id), InsertTask calls it a conflict; the first task is untouched.
TEST_P(StoreContract, AnIdAlreadyTakenInsertsNothing) {
  Insert(NewTask("task-aaaaaaaa"));
  Task again = NewTask("task-aaaaaaaa");
  again.title = "another";
  again.after = {"task-bbbbbbbb"};
  bool inserted = true;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(inserted, txn.InsertNewTask(again));
                    return Ok();
                  })
                  .ok());
  EXPECT_FALSE(inserted);
  Status s = store_->Write([&](Txn& txn) { return txn.InsertTask(again); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kConflict);
  std::optional<Task> got;
  std::vector<std::string> dependents;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(got, txn.GetTask("task-aaaaaaaa"));
                    TX_ASSIGN_OR_RETURN(dependents, txn.ListDependents("task-bbbbbbbb"));
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->title, "title of task-aaaaaaaa");
  EXPECT_TRUE(dependents.empty());
}

// Listing filters by status, queue and owner, in insertion order, and pages by the last seq seen.
TEST_P(StoreContract, ListTasksFiltersAndPagesInInsertionOrder) {
  for (int i = 0; i < 5; ++i) {
    Task t = NewTask("task-0000000" + std::to_string(i), 10 - i, i % 2 ? "odd" : "even");
    if (i == 4) t.owner = "slot-9";
    Insert(t);
  }
  auto list = [&](TaskFilter f) {
    std::vector<std::string> ids;
    std::vector<Task> tasks;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(tasks, txn.ListTasks(f));
                      return Ok();
                    })
                    .ok());
    for (const auto& t : tasks) ids.push_back(t.id);
    return std::pair{ids, tasks};
  };
  TaskFilter even;
  even.queue = "even";
  EXPECT_EQ(list(even).first,
            (std::vector<std::string>{"task-00000000", "task-00000002", "task-00000004"}));
  TaskFilter owned;
  owned.owner = "slot-9";
  EXPECT_EQ(list(owned).first, std::vector<std::string>{"task-00000004"});
  TaskFilter page;
  page.limit = 2;
  auto [first, first_tasks] = list(page);
  EXPECT_EQ(first, (std::vector<std::string>{"task-00000000", "task-00000001"}));
  page.cursor = first_tasks.back().seq;
  EXPECT_EQ(list(page).first, (std::vector<std::string>{"task-00000002", "task-00000003"}));
  page.queue = "even";
  EXPECT_EQ(list(page).first, (std::vector<std::string>{"task-00000002", "task-00000004"}));
  TaskFilter newest;
  newest.newest_first = true;
  newest.limit = 2;
  auto [latest, latest_tasks] = list(newest);
  EXPECT_EQ(latest, (std::vector<std::string>{"task-00000004", "task-00000003"}));
  newest.cursor = latest_tasks.back().seq;
  EXPECT_EQ(list(newest).first, (std::vector<std::string>{"task-00000002", "task-00000001"}));
}

// Issue 24: the dashboard's search and filters. A search matches an id exactly or by prefix, or
// a title's substring without regard to case; the agent and the created time narrow further, and
// paging goes on under every filter.
TEST_P(StoreContract, ListTasksSearchesIdsAndTitlesAndFiltersByAgentAndCreatedTime) {
  const char* titles[] = {"Fix the LOGIN test", "Port the parser", "login page", "Write docs"};
  for (int i = 0; i < 4; ++i) {
    Task t = NewTask("task-abc0000" + std::to_string(i));
    t.title = titles[i];
    t.agent = i % 2 ? "codex" : "claude";
    t.created_at = t.updated_at = 1'795'567'504'000 + i * 1000;  // past 32 bits
    Insert(t);
  }
  Task other = NewTask("task-ffff0000");
  other.title = "unrelated";
  Insert(other);
  auto ids = [&](TaskFilter f) {
    std::vector<std::string> out;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(std::vector<Task> tasks, txn.ListTasks(f));
                      for (const auto& t : tasks) out.push_back(t.id);
                      return Ok();
                    })
                    .ok());
    return out;
  };
  TaskFilter f;
  f.search = "login";
  EXPECT_EQ(ids(f), (std::vector<std::string>{"task-abc00000", "task-abc00002"}));
  f.search = "task-abc0000";  // an id's prefix
  EXPECT_EQ(ids(f).size(), 4u);
  f.search = "task-ffff0000";  // an id whole
  EXPECT_EQ(ids(f), std::vector<std::string>{"task-ffff0000"});
  f.search = "abc0000";  // inside an id, not at its start: no match
  EXPECT_TRUE(ids(f).empty());
  f.search = "%";  // no pattern characters
  EXPECT_TRUE(ids(f).empty());
  f.search = "";
  f.agent = "codex";
  EXPECT_EQ(ids(f), (std::vector<std::string>{"task-abc00001", "task-abc00003"}));
  f.agent.reset();
  f.created_since = 1'795'567'505'000;
  f.created_until = 1'795'567'507'000;
  EXPECT_EQ(ids(f), (std::vector<std::string>{"task-abc00001", "task-abc00002"}));
  f.newest_first = true;
  f.limit = 1;
  EXPECT_EQ(ids(f), std::vector<std::string>{"task-abc00002"});
  f.search = "PORT";
  f.agent = "codex";
  EXPECT_EQ(ids(f), std::vector<std::string>{"task-abc00001"});
}

// Issue 22: a task waiting for a person's answer (schema version 8 on both backends) is stored,
// listed and counted under its own status, and never picked.
TEST_P(StoreContract, AWaitingTaskIsStoredListedAndCountedButNeverPicked) {
  Task waiting = NewTask("task-waiting1");
  waiting.status = TaskStatus::kWaiting;
  waiting.metadata = {{"questions", {{{"question", "Which database?"}, {"asked_at", 1000}}}}};
  Insert(waiting);
  Insert(NewTask("task-ready001"));
  Task back = NewTask("task-waiting2");
  Insert(back);
  back.status = TaskStatus::kWaiting;
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateTaskState(back); }).ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto got = txn.GetTask(waiting.id).value().value();
                    EXPECT_EQ(got.status, TaskStatus::kWaiting);
                    EXPECT_EQ(got.metadata, waiting.metadata);
                    TaskFilter f;
                    f.status = TaskStatus::kWaiting;
                    std::vector<std::string> ids;
                    for (const auto& t : txn.ListTasks(f).value()) ids.push_back(t.id);
                    EXPECT_EQ(ids, (std::vector<std::string>{"task-waiting1", "task-waiting2"}));
                    std::int64_t counted = 0;
                    for (const auto& c : txn.CountTasks().value()) {
                      if (c.status == TaskStatus::kWaiting) counted += c.count;
                    }
                    EXPECT_EQ(counted, 2);
                    EXPECT_EQ(txn.CountReadyTasks().value(), 1);
                    auto picked = txn.PickReady(Default(), 10).value();
                    EXPECT_EQ(picked.size(), 1u);
                    if (!picked.empty()) {
                      EXPECT_EQ(picked[0].id, "task-ready001");
                    }
                    return Ok();
                  })
                  .ok());
}

// Plain strings take a fast path in the SQLite store; the rest go through a JSON library.
TEST_P(StoreContract, StringListsRoundTripWhateverTheyHold) {
  Task t = NewTask("task-bbbbbbbb", 0, "default");
  t.steps = {"say \"hi\"", "back\\slash", "tab\there", "caf\u00e9 \u2713", "", "[x]", "a,b"};
  t.command = {"plain", "also-plain"};
  t.requires_caps = {""};
  Insert(t);
  std::optional<Task> got;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto r = txn.GetTask(t.id);
                    if (!r.ok()) return r.error();
                    got = *r;
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->steps, t.steps);
  EXPECT_EQ(got->command, t.command);
  EXPECT_EQ(got->requires_caps, t.requires_caps);
}

TEST_P(StoreContract, UpdateTaskStateWritesOnlyTheStateColumns) {
  Task t = NewTask("task-aaaaaaa9", 4);
  t.metadata = {{"keep", true}};
  Insert(t);
  Task changed = t;
  changed.status = TaskStatus::kRunning;
  changed.attempt = 1;
  changed.started_at = 2000;
  changed.result = "r";
  changed.title = "not written by a state update";
  changed.metadata = nlohmann::json::object();
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateTaskState(changed); }).ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto got = txn.GetTask(t.id).value().value();
                    EXPECT_EQ(got.status, TaskStatus::kRunning);
                    EXPECT_EQ(got.attempt, 1);
                    EXPECT_EQ(got.started_at, 2000);
                    EXPECT_EQ(got.result, "r");
                    EXPECT_EQ(got.title, t.title);
                    EXPECT_EQ(got.metadata, t.metadata);
                    auto ready = txn.PickNextReady(Default());
                    EXPECT_TRUE(ready.ok() && !ready->has_value())
                        << "a running task is still in the ready index";
                    return Ok();
                  })
                  .ok());
  Task missing = NewTask("task-zzzzzzzz");
  Status s = store_->Write([&](Txn& txn) { return txn.UpdateTaskState(missing); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNotFound);
}

TEST_P(StoreContract, AFailedWriteLeavesNoPartialWrite) {
  Status s = store_->Write([&](Txn& txn) -> Status {
    Task t = NewTask("task-bbbbbbbb");
    TX_RETURN_IF_ERROR(txn.InsertTask(t));
    Event e{0, "task.created", 1, t.id, "", {}};
    TX_RETURN_IF_ERROR(txn.AppendEvent(e));
    return Error::Conflict("changed my mind");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "changed my mind");
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto t = txn.GetTask("task-bbbbbbbb");
                    EXPECT_TRUE(t.ok() && !t->has_value());
                    auto ev = txn.ListEvents(0, 0);
                    EXPECT_TRUE(ev.ok() && ev->empty());
                    return Ok();
                  })
                  .ok());
}

// WriteReturning and ReadReturning: the value of the function, or the error of the transaction.
TEST_P(StoreContract, WriteReturningGivesTheCommittedValueAndReadReturningReadsItBack) {
  Result<std::int64_t> seq = store_->WriteReturning([&](Txn& txn) -> Result<std::int64_t> {
    Task t = NewTask("task-cccccccc");
    TX_RETURN_IF_ERROR(txn.InsertTask(t));
    return t.seq;
  });
  ASSERT_TRUE(seq.ok()) << seq.error().message();
  EXPECT_GT(*seq, 0);
  Result<std::optional<Task>> got =
      store_->ReadReturning([](Txn& txn) { return txn.GetTask("task-cccccccc"); });
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->seq, *seq);
}

TEST_P(StoreContract, WriteReturningGivesTheFunctionsErrorAndLeavesNoPartialWrite) {
  Result<Task> r = store_->WriteReturning([&](Txn& txn) -> Result<Task> {
    Task t = NewTask("task-bbbbbbbb");
    TX_RETURN_IF_ERROR(txn.InsertTask(t));
    return Error::Conflict("changed my mind");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kConflict);
  EXPECT_EQ(r.error().message(), "changed my mind");
  Result<std::optional<Task>> got =
      store_->ReadReturning([](Txn& txn) { return txn.GetTask("task-bbbbbbbb"); });
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_FALSE(got->has_value());
  Result<int> read =
      store_->ReadReturning([](Txn&) -> Result<int> { return Error::NotFound("nothing here"); });
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message(), "nothing here");
}

// A store whose commit fails after the function ran (as a dropped connection at COMMIT does),
// and whose reads fail before running it.
class FailingStore final : public Store {
 public:
  explicit FailingStore(Store& inner) : inner_(inner) {}
  Status Write(const TxnFn& fn) override {
    TX_RETURN_IF_ERROR(inner_.Write(fn));
    return Error::Unavailable("the commit was lost");
  }
  Status Read(const TxnFn&) override { return Error::Unavailable("no connection"); }
  Result<std::int64_t> ChangeCounter() override { return inner_.ChangeCounter(); }
  Result<std::unique_ptr<ChangeWatch>> Watch() override { return inner_.Watch(); }
  std::string Describe() const override { return "failing " + inner_.Describe(); }
  const Clock& clock() const override { return inner_.clock(); }
  Result<std::unique_ptr<Leadership>> TryLead() override { return inner_.TryLead(); }
  bool SharedByHosts() const override { return inner_.SharedByHosts(); }

 private:
  Store& inner_;
};

TEST_P(StoreContract, WriteReturningGivesTheStoresErrorWhenTheCommitFailsAfterAValue) {
  FailingStore failing(*store_);
  bool ran = false;
  Result<int> r = failing.WriteReturning([&](Txn&) -> Result<int> {
    ran = true;
    return 7;
  });
  EXPECT_TRUE(ran);
  ASSERT_FALSE(r.ok()) << "the value of a transaction that did not commit";
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(r.error().message(), "the commit was lost");
  Result<int> read = failing.ReadReturning([&](Txn&) -> Result<int> { return 7; });
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message(), "no connection");
}

TEST_P(StoreContract, PicksHighestPriorityThenOldest) {
  Insert(NewTask("task-aaaaaaa1", 0));
  Insert(NewTask("task-aaaaaaa2", 5));
  Insert(NewTask("task-aaaaaaa3", 5));
  Insert(NewTask("task-aaaaaaa4", -1));
  auto t = Pick(Default());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, "task-aaaaaaa2");
}

TEST_P(StoreContract, PickHonoursQueueRunAfterOwnerAndCapabilities) {
  Task other_queue = NewTask("task-aaaaaaa1", 9, "other");
  Task later = NewTask("task-aaaaaaa2", 8);
  later.run_after = 6000;
  Task pinned = NewTask("task-aaaaaaa3", 7);
  pinned.owner = "someone-else";
  Task needs_gpu = NewTask("task-aaaaaaa4", 6);
  needs_gpu.requires_caps = {"gpu", "linux"};
  Task blocked = NewTask("task-aaaaaaa5", 5);
  blocked.status = TaskStatus::kBlocked;
  Task mine = NewTask("task-aaaaaaa6", 1);
  mine.owner = "slot-1";
  for (auto& t : {other_queue, later, pinned, needs_gpu, blocked, mine}) Insert(t);

  auto t = Pick(Default());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->id, "task-aaaaaaa6");

  PickCriteria gpu = Default();
  gpu.capabilities = {"linux", "gpu", "docker"};
  EXPECT_EQ(Pick(gpu)->id, "task-aaaaaaa4");

  PickCriteria both = Default();
  both.queues = {"default", "other"};
  EXPECT_EQ(Pick(both)->id, "task-aaaaaaa1");

  PickCriteria later_now = Default();
  later_now.now = 6000;
  EXPECT_EQ(Pick(later_now)->id, "task-aaaaaaa2");

  PickCriteria none = Default();
  none.queues = {"empty"};
  EXPECT_FALSE(Pick(none));
}

TEST_P(StoreContract, NextReadyAtIsTheEarliestBackoffInTheQueues) {
  Task a = NewTask("task-aaaaaaa1");
  a.run_after = 9000;
  Task b = NewTask("task-aaaaaaa2");
  b.run_after = 7000;
  Task other = NewTask("task-aaaaaaa3", 0, "other");
  other.run_after = 6000;
  Task now = NewTask("task-aaaaaaa4");
  now.run_after = 4000;  // already due: not a future wake-up
  for (Task* t : {&a, &b, &other, &now}) Insert(*t);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto at = txn.NextReadyAt(Default());
                    EXPECT_TRUE(at.ok() && *at && **at == 7000);
                    PickCriteria none = Default();
                    none.queues = {"empty"};
                    auto nothing = txn.NextReadyAt(none);
                    EXPECT_TRUE(nothing.ok() && !*nothing);
                    return Ok();
                  })
                  .ok());
}

// A gated pick passes over the agent tasks of blocked profiles (and of blocked queues), never a
// task with a command of its own.
TEST_P(StoreContract, AGatedPickPassesOverTheBlockedAgentsTasks) {
  Task claude = NewTask("task-00000001", 9);
  claude.agent = "claude";
  Task plain_default = NewTask("task-00000002", 8);  // no agent: the worker's default profile
  Task command = NewTask("task-00000003", 7);
  command.agent = "claude";
  command.command = {"make"};
  Task codex = NewTask("task-00000004", 6);
  codex.agent = "codex";
  Task other_queue = NewTask("task-00000005", 10, "nightly");
  other_queue.agent = "codex";
  for (const Task& t : {claude, plain_default, command, codex, other_queue}) Insert(t);
  PickCriteria c = Default();
  c.queues = {"default", "nightly"};
  EXPECT_EQ(Pick(c)->id, "task-00000005");
  c.blocked_agent_queues = {"nightly"};
  EXPECT_EQ(Pick(c)->id, "task-00000001");
  c.blocked_agents = {"claude"};
  EXPECT_EQ(Pick(c)->id, "task-00000002");
  c.blocked_agents = {"claude", ""};
  EXPECT_EQ(Pick(c)->id, "task-00000003");  // a command runs whatever its agent field says
  c.blocked_agents = {"*"};
  c.blocked_agent_queues.clear();
  EXPECT_EQ(Pick(c)->id, "task-00000003");
  c.queues = {"nightly"};
  EXPECT_FALSE(Pick(c).has_value());
  // The same gate holds in a write (the pick that claims).
  c.queues = {"default"};
  c.blocked_agents = {"claude", ""};
  std::optional<Task> picked;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(picked, txn.PickNextReady(c));
                    TX_ASSIGN_OR_RETURN(std::vector<Task> many, txn.PickReady(c, 5));
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(picked);
  EXPECT_EQ(picked->id, "task-00000003");
}

// The usage ledger: a row per attempt, replaced by its token; summed by task and by day.
TEST_P(StoreContract, UsageRowsRoundTripAndSumByTaskQueueAndTime) {
  AttemptUsage u;
  u.token = 7;
  u.task_id = "task-00000001";
  u.attempt = 2;
  u.worker_id = "worker-1";
  u.agent = "claude";
  u.account = "work";
  u.queue = "q";
  u.session_id = "s-1";
  u.model = "claude-sonnet-4-5";
  u.tokens = {100, 20, 30, 40};
  u.cost_usd = 0.123456;
  u.cost_estimated = true;
  u.turns = 3;
  u.denials = nlohmann::json::array({{{"tool", "Bash"}, {"input", "rm -rf \u00e9"}}});
  u.started_at = 1000;
  u.updated_at = 2000;
  AttemptUsage other = u;
  other.token = 8;
  other.task_id = "task-00000002";
  other.queue = "p";
  other.cost_usd = 1.5;
  other.updated_at = 9000;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.PutUsage(u));
                    TX_RETURN_IF_ERROR(txn.PutUsage(u));  // a replace, not a second row
                    return txn.PutUsage(other);
                  })
                  .ok());
  std::optional<AttemptUsage> got;
  std::vector<AttemptUsage> of_task, since, window;
  double cost = 0, day = 0, queue = 0;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(got, txn.GetUsage(7));
                    TX_ASSIGN_OR_RETURN(of_task, txn.ListUsageForTask("task-00000001"));
                    TX_ASSIGN_OR_RETURN(since, txn.ListUsage(1500, 0));
                    // An epoch-milliseconds end, past what a 32-bit integer holds.
                    TX_ASSIGN_OR_RETURN(window, txn.ListUsage(0, 1'795'567'504'981));
                    TX_ASSIGN_OR_RETURN(cost, txn.TaskCost("task-00000001"));
                    TX_ASSIGN_OR_RETURN(day, txn.SumCostSince(1500, ""));
                    TX_ASSIGN_OR_RETURN(queue, txn.SumCostSince(0, "p"));
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, u);
  EXPECT_EQ(of_task.size(), 1u);
  EXPECT_EQ(since.size(), 2u);
  EXPECT_EQ(window.size(), 2u);
  EXPECT_DOUBLE_EQ(cost, 0.123456);
  EXPECT_DOUBLE_EQ(day, 0.123456 + 1.5);
  EXPECT_DOUBLE_EQ(queue, 1.5);
}

// Issue 24: a page of tasks' costs in one query, summed by task; a task without rows is left out.
TEST_P(StoreContract, SumUsageOfTasksSumsEachTasksRows) {
  auto row = [](std::int64_t token, const char* task, double usd, bool estimated) {
    AttemptUsage u;
    u.token = token;
    u.task_id = task;
    u.tokens = {10, 2, 0, 0};
    u.cost_usd = usd;
    u.cost_estimated = estimated;
    u.turns = 1;
    return u;
  };
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.PutUsage(row(1, "task-00000001", 0.25, false)));
                    TX_RETURN_IF_ERROR(txn.PutUsage(row(2, "task-00000001", 0.5, true)));
                    TX_RETURN_IF_ERROR(txn.PutUsage(row(3, "task-00000002", 1, false)));
                    return txn.PutUsage(row(4, "task-00000003", 9, false));
                  })
                  .ok());
  std::vector<std::pair<std::string, UsageTotal>> sums, none;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(sums, txn.SumUsageOfTasks({"task-00000002", "task-00000001",
                                                                   "task-00000009"}));
                    TX_ASSIGN_OR_RETURN(none, txn.SumUsageOfTasks({}));
                    return Ok();
                  })
                  .ok());
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0].first, "task-00000001");
  EXPECT_EQ(sums[0].second.attempts, 2);
  EXPECT_DOUBLE_EQ(sums[0].second.cost_usd, 0.75);
  EXPECT_TRUE(sums[0].second.estimated);
  EXPECT_EQ(sums[0].second.tokens.input, 20);
  EXPECT_EQ(sums[0].second.turns, 2);
  EXPECT_EQ(sums[1].first, "task-00000002");
  EXPECT_DOUBLE_EQ(sums[1].second.cost_usd, 1);
  EXPECT_FALSE(sums[1].second.estimated);
  EXPECT_TRUE(none.empty());
}

TEST_P(StoreContract, AgentLimitsAndNoticesRoundTrip) {
  AgentLimit l{"claude", "work", 5000, 1000, "You've hit your limit", "task-00000001", 2, false};
  AgentLimit m{"codex", "", 7000, 1000, "usage limit", "", 1, true};
  bool first = false, again = true;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.PutAgentLimit(m));
                    TX_RETURN_IF_ERROR(txn.PutAgentLimit(l));
                    l.until = 6000;
                    TX_RETURN_IF_ERROR(txn.PutAgentLimit(l));  // replaced
                    TX_ASSIGN_OR_RETURN(first, txn.NoteOnce("budget:2026-11-26", 1));
                    TX_ASSIGN_OR_RETURN(again, txn.NoteOnce("budget:2026-11-26", 2));
                    return Ok();
                  })
                  .ok());
  EXPECT_TRUE(first);
  EXPECT_FALSE(again);
  std::vector<AgentLimit> limits;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(limits, txn.ListAgentLimits());
                    return Ok();
                  })
                  .ok());
  ASSERT_EQ(limits.size(), 2u);
  EXPECT_EQ(limits[0], l);  // by profile
  EXPECT_EQ(limits[1], m);
}

TEST_P(StoreContract, DeliveriesRoundTripAndAreListedDueAndNewestFirst) {
  auto delivery = [](const std::string& id, std::int64_t event_id, Millis next_at) {
    Delivery d;
    d.id = id;
    d.sink = "http://127.0.0.1:9/hook";
    d.event_id = event_id;
    d.event_type = "task.failed";
    d.task_id = "task-aaaaaaaa";
    d.body = R"({"text":"tx: héllo"})";
    d.created_at = 1000;
    d.next_at = next_at;
    return d;
  };
  Delivery a = delivery("dlv-a", 1, 3000), b = delivery("dlv-b", 2, 2000);
  std::int64_t cursor = -1;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(cursor, txn.GetNotifyCursor());
                    TX_RETURN_IF_ERROR(txn.InsertDelivery(a));
                    TX_RETURN_IF_ERROR(txn.InsertDelivery(b));
                    return txn.SetNotifyCursor(2);
                  })
                  .ok());
  EXPECT_EQ(cursor, 0);  // a new store starts at its first event
  EXPECT_LT(a.seq, b.seq);
  b.status = DeliveryStatus::kFailed;
  b.attempts = 3;
  b.last_at = 2500;
  b.last_error = "connection refused";
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateDelivery(b); }).ok());
  Delivery missing = delivery("dlv-none", 3, 0);
  Status refused = store_->Write([&](Txn& txn) { return txn.UpdateDelivery(missing); });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kNotFound);

  std::vector<Delivery> due_early, due_late, all, failed;
  std::optional<Delivery> got;
  std::optional<Millis> next;
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(cursor, txn.GetNotifyCursor());
                    TX_ASSIGN_OR_RETURN(due_early, txn.ListDueDeliveries(2999, 10));
                    TX_ASSIGN_OR_RETURN(due_late, txn.ListDueDeliveries(3000, 10));
                    TX_ASSIGN_OR_RETURN(all, txn.ListDeliveries(std::nullopt, 0));
                    TX_ASSIGN_OR_RETURN(failed, txn.ListDeliveries(DeliveryStatus::kFailed, 5));
                    TX_ASSIGN_OR_RETURN(got, txn.GetDelivery("dlv-b"));
                    TX_ASSIGN_OR_RETURN(next, txn.NextDeliveryAt());
                    return Ok();
                  })
                  .ok());
  EXPECT_EQ(cursor, 2);
  EXPECT_TRUE(due_early.empty());  // b is failed, a not due yet
  ASSERT_EQ(due_late.size(), 1u);
  EXPECT_EQ(due_late[0].id, "dlv-a");
  EXPECT_EQ(due_late[0].body, a.body);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "dlv-b");  // newest first
  ASSERT_EQ(failed.size(), 1u);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, DeliveryStatus::kFailed);
  EXPECT_EQ(got->attempts, 3);
  EXPECT_EQ(got->last_at, 2500);
  EXPECT_EQ(got->last_error, "connection refused");
  EXPECT_EQ(got->created_at, 1000);
  EXPECT_EQ(got->event_id, 2);
  EXPECT_EQ(next, std::optional<Millis>(3000));
}

// SQLite keeps the steady readings of heartbeats and leases (core/clock.h); PostgreSQL judges on
// its server's clock and keeps none.
TEST_P(StoreContract, SteadyReadingsAreKeptWhereTheStoreJudgesOnThem) {
  bool kept = GetParam().kind != Kind::kPostgres;
  Insert(NewTask("task-aaaaaaa1"));
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  RecordBeat(w, Moment{5'000, 700});
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  Claim c{0, "task-aaaaaaa1", w.id, 1, 1, 100, 0};
  RenewLease(c, Moment{5'000, 700});  // expires at 5'100 wall, 800 steady
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertClaim(c); }).ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto got = txn.GetWorker(w.id);
                    EXPECT_TRUE(got.ok() && *got);
                    EXPECT_EQ((*got)->beat_steady,
                              kept ? std::optional<Millis>(700) : std::nullopt);
                    auto claim = txn.GetClaim(c.token);
                    EXPECT_TRUE(claim.ok() && *claim);
                    EXPECT_EQ((*claim)->lease_expires_steady,
                              kept ? std::optional<Millis>(800) : std::nullopt);
                    // The wall clock stepped ahead a minute; 50 ms passed on the steady one.
                    auto stepped = txn.ListActiveClaimsExpiredAt(Moment{65'000, 750});
                    EXPECT_TRUE(stepped.ok() && stepped->size() == (kept ? 0u : 1u));
                    auto later = txn.ListActiveClaimsExpiredAt(Moment{65'000, 800});
                    EXPECT_TRUE(later.ok() && later->size() == 1u);
                    return Ok();
                  })
                  .ok());
}

// Schema version 9: the interval a worker promises while busy, through every write of a worker.
TEST_P(StoreContract, AWorkersBusyHeartbeatIntervalIsKept) {
  Worker a, b;
  a.id = "worker-aaaaaaaa";
  a.name = "a";
  a.busy_heartbeat_interval_ms = 500;
  b.id = "worker-bbbbbbbb";
  b.name = "b";
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.InsertWorker(a));
                    return txn.InsertWorker(b);
                  })
                  .ok());
  auto busy_of = [&](const std::string& id) {
    Millis out = -1;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker(id));
                      if (w) out = w->busy_heartbeat_interval_ms;
                      return Ok();
                    })
                    .ok());
    return out;
  };
  EXPECT_EQ(busy_of(a.id), 500);
  EXPECT_EQ(busy_of(b.id), 0);
  a.busy_heartbeat_interval_ms = 250;
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateWorker(a); }).ok());
  EXPECT_EQ(busy_of(a.id), 250);
  a.busy_heartbeat_interval_ms = 125;
  b.busy_heartbeat_interval_ms = 750;
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateWorkers({a, b}); }).ok());
  EXPECT_EQ(busy_of(a.id), 125);
  EXPECT_EQ(busy_of(b.id), 750);
}

TEST_P(StoreContract, TokensIncreaseAndOnlyOneClaimPerTaskIsActive) {
  Insert(NewTask("task-aaaaaaa1"));
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  Claim a{0, "task-aaaaaaa1", w.id, 1, 1, 100, 101};
  Claim b = a;
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertClaim(a); }).ok());
  Status dup = store_->Write([&](Txn& txn) { return txn.InsertClaim(b); });
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code(), ErrorCode::kConflict);
  a.status = ClaimStatus::kReleased;
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateClaim(a); }).ok());
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertClaim(b); }).ok());
  EXPECT_GT(b.token, a.token);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto active = txn.GetActiveClaimForTask("task-aaaaaaa1");
                    EXPECT_TRUE(active.ok() && *active && (*active)->token == b.token);
                    auto expired = txn.ListActiveClaimsExpiredAt(Moment{101});
                    EXPECT_TRUE(expired.ok() && expired->size() == 1);
                    auto not_yet = txn.ListActiveClaimsExpiredAt(Moment{100});
                    EXPECT_TRUE(not_yet.ok() && not_yet->empty());
                    auto all = txn.ListClaimsForTask("task-aaaaaaa1");
                    EXPECT_TRUE(all.ok() && all->size() == 2);
                    return Ok();
                  })
                  .ok());
}

// Issue 24: a worker's history, newest first, a page at a time, each attempt with its task's
// title and, when the ledger has its row, its cost; another worker's claims are not in it.
TEST_P(StoreContract, ListAttemptsOfWorkerPagesNewestFirstWithTitlesAndCosts) {
  Worker w, other;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  other.id = "worker-bbbbbbbb";
  other.name = "other";
  for (int i = 1; i <= 3; ++i) {
    Task t = NewTask("task-aaaaaaa" + std::to_string(i));
    t.title = "job " + std::to_string(i);
    Insert(t);
  }
  std::vector<Claim> mine;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                    TX_RETURN_IF_ERROR(txn.InsertWorker(other));
                    for (int i = 1; i <= 3; ++i) {
                      Claim c{0, "task-aaaaaaa" + std::to_string(i), w.id, 1, 1, 100, 101};
                      c.status = ClaimStatus::kCompleted;
                      c.end_reason = EndReason::kExited;
                      c.exit_code = 0;
                      TX_RETURN_IF_ERROR(txn.InsertClaim(c));
                      mine.push_back(c);
                      Claim theirs{0, c.task_id, other.id, 2, 1, 100, 101};
                      theirs.status = ClaimStatus::kReleased;
                      TX_RETURN_IF_ERROR(txn.InsertClaim(theirs));
                    }
                    AttemptUsage u;
                    u.token = mine[1].token;
                    u.task_id = mine[1].task_id;
                    u.cost_usd = 0.42;
                    u.cost_estimated = true;
                    return txn.PutUsage(u);
                  })
                  .ok());
  auto page = [&](std::int64_t before, int limit) {
    std::vector<WorkerAttempt> out;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(out, txn.ListAttemptsOfWorker(w.id, before, limit));
                      return Ok();
                    })
                    .ok());
    return out;
  };
  std::vector<WorkerAttempt> first = page(0, 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].claim.token, mine[2].token);
  EXPECT_EQ(first[0].claim.worker_id, w.id);
  EXPECT_EQ(first[0].claim.end_reason, EndReason::kExited);
  EXPECT_EQ(first[0].task_title, "job 3");
  EXPECT_FALSE(first[0].has_usage);
  EXPECT_EQ(first[1].task_title, "job 2");
  EXPECT_TRUE(first[1].has_usage);
  EXPECT_DOUBLE_EQ(first[1].cost_usd, 0.42);
  EXPECT_TRUE(first[1].cost_estimated);
  std::vector<WorkerAttempt> rest = page(first[1].claim.token, 2);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].claim.token, mine[0].token);
  EXPECT_EQ(page(0, 0).size(), 3u);  // no limit
}

// A batch's pick: the best ready tasks in pick order, each taken out of `ready` before the next
// pick. PostgreSQL hands out the whole batch at once; the default, one at a time.
TEST_P(StoreContract, PickReadyTakesTheBestTasksInPickOrder) {
  Insert(NewTask("task-aaaaaaa1", 0));
  Insert(NewTask("task-aaaaaaa2", 5));
  Insert(NewTask("task-aaaaaaa3", 5));
  Insert(NewTask("task-aaaaaaa4", 9, "other"));
  Task later = NewTask("task-aaaaaaa5", 7);
  later.run_after = 9000;
  Insert(later);
  std::vector<std::string> order;
  std::size_t first_call = 0;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    order.clear();
                    for (int call = 0; order.size() < 5; ++call) {
                      TX_ASSIGN_OR_RETURN(std::vector<Task> got,
                                          txn.PickReady(Default(), 5 - int(order.size())));
                      if (call == 0) first_call = got.size();
                      if (got.empty()) break;
                      for (Task& t : got) {
                        order.push_back(t.id);
                        t.status = TaskStatus::kRunning;
                        TX_RETURN_IF_ERROR(txn.UpdateTaskState(t));
                      }
                    }
                    return Ok();
                  })
                  .ok());
  EXPECT_EQ(order, (std::vector<std::string>{"task-aaaaaaa2", "task-aaaaaaa3", "task-aaaaaaa1"}));
  EXPECT_EQ(first_call, GetParam().kind == Kind::kPostgres ? 3u : 1u);
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    auto none = txn.PickReady(Default(), 0);
                    EXPECT_TRUE(none.ok() && none->empty());
                    return Ok();
                  })
                  .ok());
}

// LockClaims is a hint: GetClaim reads the same claims after it as without it, an unknown token
// is still nullopt, and a claim this transaction changed reads back as changed.
TEST_P(StoreContract, GetClaimAfterLockClaimsSeesTheRowsAndTheTransactionsOwnWrites) {
  Insert(NewTask("task-aaaaaaa1"));
  Insert(NewTask("task-aaaaaaa2"));
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  Claim a{0, "task-aaaaaaa1", w.id, 1, 1, 100, 101};
  Claim b{0, "task-aaaaaaa2", w.id, 1, 1, 100, 101};
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.InsertClaim(a));
                    return txn.InsertClaim(b);
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.LockClaims({b.token, a.token, 999999}));
                    auto got_a = txn.GetClaim(a.token);
                    EXPECT_TRUE(got_a.ok() && *got_a && (*got_a)->task_id == "task-aaaaaaa1");
                    auto missing = txn.GetClaim(999999);
                    EXPECT_TRUE(missing.ok() && !*missing);
                    Claim ended = b;
                    ended.status = ClaimStatus::kCompleted;
                    ended.ended_at = 150;
                    TX_RETURN_IF_ERROR(txn.UpdateClaim(ended));
                    auto got_b = txn.GetClaim(b.token);
                    EXPECT_TRUE(got_b.ok() && *got_b &&
                                (*got_b)->status == ClaimStatus::kCompleted &&
                                (*got_b)->ended_at == 150);
                    auto task = txn.GetTask("task-aaaaaaa2");
                    EXPECT_TRUE(task.ok() && *task && (*task)->title == "title of task-aaaaaaa2");
                    auto worker = txn.GetWorker(w.id);
                    EXPECT_TRUE(worker.ok() && *worker && (*worker)->name == "w");
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto got_b = txn.GetClaim(b.token);
                    EXPECT_TRUE(got_b.ok() && *got_b &&
                                (*got_b)->status == ClaimStatus::kCompleted);
                    return Ok();
                  })
                  .ok());
}

// Many writes of a kind in one transaction (on PostgreSQL kept back and sent as one statement per
// kind): each lands as last written, claims made in the transaction and then changed land
// changed, events keep their order, and one missing row fails them all.
TEST_P(StoreContract, ManyWritesInOneTransactionLandAsLastWrittenAndInOrder) {
  for (const char* id : {"task-aaaaaaa1", "task-aaaaaaa2", "task-aaaaaaa3", "task-aaaaaaa4"}) {
    Insert(NewTask(id));
  }
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  std::vector<Claim> made;
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    made.clear();
                    while (made.size() < 3) {
                      TX_ASSIGN_OR_RETURN(std::vector<Task> got,
                                          txn.PickReady(Default(), 3 - int(made.size())));
                      if (got.empty()) return Error::Internal("ran out of tasks");
                      for (Task& t : got) {
                        t.status = TaskStatus::kRunning;
                        t.attempt = 1;
                        TX_RETURN_IF_ERROR(txn.UpdateTaskState(t));
                        Claim c{0, t.id, w.id, 1, 100, 1000, 1100};
                        TX_RETURN_IF_ERROR(txn.InsertClaim(c));
                        made.push_back(c);
                      }
                    }
                    Claim ended = made[0];
                    ended.status = ClaimStatus::kCompleted;
                    ended.ended_at = 150;
                    ended.exit_code = 3;
                    TX_RETURN_IF_ERROR(txn.UpdateClaim(ended));
                    TX_ASSIGN_OR_RETURN(std::optional<Task> first, txn.GetTask("task-aaaaaaa1"));
                    first->status = TaskStatus::kDone;
                    first->result = "first";
                    TX_RETURN_IF_ERROR(txn.UpdateTaskState(*first));
                    first->result = "second";
                    first->finished_at = 160;
                    TX_RETURN_IF_ERROR(txn.UpdateTaskState(*first));
                    TX_ASSIGN_OR_RETURN(std::optional<Task> fourth, txn.GetTask("task-aaaaaaa4"));
                    fourth->error = "untouched otherwise";
                    TX_RETURN_IF_ERROR(txn.UpdateTaskState(*fourth));
                    for (int n = 1; n <= 4; ++n) {
                      TX_RETURN_IF_ERROR(txn.AppendEventData("e" + std::to_string(n), 200 + n,
                                                             "task-aaaaaaa1", w.id,
                                                             "{\"n\":" + std::to_string(n) + "}"));
                    }
                    return Ok();
                  })
                  .ok());
  ASSERT_EQ(made.size(), 3u);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto first = txn.GetTask("task-aaaaaaa1");
                    EXPECT_TRUE(first.ok() && *first && (*first)->status == TaskStatus::kDone &&
                                (*first)->result == "second" && (*first)->finished_at == 160);
                    auto third = txn.GetTask("task-aaaaaaa3");
                    EXPECT_TRUE(third.ok() && *third && (*third)->status == TaskStatus::kRunning);
                    auto fourth = txn.GetTask("task-aaaaaaa4");
                    EXPECT_TRUE(fourth.ok() && *fourth && (*fourth)->status == TaskStatus::kReady &&
                                (*fourth)->error == "untouched otherwise");
                    auto c0 = txn.GetClaim(made[0].token);
                    EXPECT_TRUE(c0.ok() && *c0 && (*c0)->status == ClaimStatus::kCompleted &&
                                (*c0)->ended_at == 150 && (*c0)->exit_code == 3 &&
                                (*c0)->task_id == made[0].task_id);
                    auto c2 = txn.GetClaim(made[2].token);
                    EXPECT_TRUE(c2.ok() && *c2 && (*c2)->status == ClaimStatus::kActive &&
                                (*c2)->lease_expires_at == 1100);
                    auto events = txn.ListEvents(0, 0);
                    EXPECT_TRUE(events.ok() && events->size() == 4);
                    if (events.ok() && events->size() == 4) {
                      for (int n = 1; n <= 4; ++n) {
                        const Event& e = (*events)[n - 1];
                        EXPECT_EQ(e.type, "e" + std::to_string(n));
                        EXPECT_EQ(e.at, 200 + n);
                        EXPECT_EQ(e.data["n"], n);
                      }
                    }
                    return Ok();
                  })
                  .ok());

  Status s = store_->Write([&](Txn& txn) -> Status {
    for (const char* id : {"task-aaaaaaa4", "task-missing0", "task-aaaaaaa2"}) {
      Task t = NewTask(id);
      t.status = TaskStatus::kFailed;
      TX_RETURN_IF_ERROR(txn.UpdateTaskState(t));
    }
    return Ok();
  });
  EXPECT_FALSE(s.ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto fourth = txn.GetTask("task-aaaaaaa4");
                    EXPECT_TRUE(fourth.ok() && *fourth && (*fourth)->status == TaskStatus::kReady);
                    return Ok();
                  })
                  .ok());
}

TEST_P(StoreContract, EventsAreNumberedInOrder) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    Event e{0, "x", i, "", "", {{"i", i}}};
    ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.AppendEvent(e); }).ok());
    ids.push_back(e.id);
  }
  EXPECT_LT(ids[0], ids[1]);
  EXPECT_LT(ids[1], ids[2]);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto after = txn.ListEvents(ids[0], 0);
                    EXPECT_TRUE(after.ok() && after->size() == 2 && (*after)[0].data["i"] == 1);
                    // Unparsed, the same events with their data as text, limited as asked.
                    auto stored = txn.ListStoredEvents(ids[0], 1);
                    EXPECT_TRUE(stored.ok() && stored->size() == 1);
                    if (stored.ok() && stored->size() == 1) {
                      const StoredEvent& e = (*stored)[0];
                      EXPECT_EQ(e.id, ids[1]);
                      EXPECT_EQ(e.type, "x");
                      EXPECT_EQ(e.at, 1);
                      EXPECT_EQ(e.data, R"({"i":1})");
                    }
                    auto last = txn.LastEventId();
                    EXPECT_TRUE(last.ok() && *last == ids[2]);
                    return Ok();
                  })
                  .ok());
}

TEST_P(StoreContract, DependenciesAreIndexedBothWays) {
  Insert(NewTask("task-aaaaaaa1"));
  Task b = NewTask("task-aaaaaaa2");
  b.after = {"task-aaaaaaa1"};
  b.status = TaskStatus::kBlocked;
  Insert(b);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto deps = txn.ListDependents("task-aaaaaaa1");
                    EXPECT_TRUE(deps.ok() && *deps == std::vector<std::string>{"task-aaaaaaa2"});
                    return Ok();
                  })
                  .ok());
}

TEST_P(StoreContract, WorkersRoundTripAndListByStatus) {
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "the-worker";
  w.slot = "slot-1";
  w.pool = "host-a:/srv/.tx";
  w.capabilities = {"a"};
  w.status = WorkerStatus::kBusy;
  w.metadata = {{"rss_mb", 3}};
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto busy = txn.ListWorkers({WorkerStatus::kBusy});
                    EXPECT_TRUE(
                        busy.ok() && busy->size() == 1 && (*busy)[0].metadata["rss_mb"] == 3 &&
                        (*busy)[0].pool == "host-a:/srv/.tx" && (*busy)[0].slot == "slot-1");
                    auto idle = txn.ListWorkers({WorkerStatus::kIdle});
                    EXPECT_TRUE(idle.ok() && idle->empty());
                    return Ok();
                  })
                  .ok());
}

// Every live status asked for (in any order, as the reconciler and an add ask): every live worker,
// newest registration first, none stopped or dead; four of the five: only those.
TEST_P(StoreContract, ListingEveryLiveStatusGivesEveryLiveWorkerNewestFirst) {
  const WorkerStatus statuses[] = {
      WorkerStatus::kStarting, WorkerStatus::kIdle,    WorkerStatus::kBusy, WorkerStatus::kPaused,
      WorkerStatus::kStopping, WorkerStatus::kStopped, WorkerStatus::kDead};
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    int i = 0;
                    for (WorkerStatus st : statuses) {
                      Worker w;
                      w.id = "worker-aaaaaaa" + std::to_string(i);
                      w.name = w.id;
                      w.status = st;
                      w.registered_at = 1'000 + i++;
                      TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                    }
                    return Ok();
                  })
                  .ok());
  std::vector<WorkerStatus> live(LiveWorkerStatuses().rbegin(), LiveWorkerStatuses().rend());
  std::vector<WorkerStatus> four(live.begin(), live.begin() + 4);
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto all = txn.ListWorkers(live);
                    EXPECT_TRUE(all.ok());
                    std::vector<std::string> ids;
                    for (const auto& w : *all) ids.push_back(w.id);
                    EXPECT_EQ(ids, (std::vector<std::string>{"worker-aaaaaaa4", "worker-aaaaaaa3",
                                                             "worker-aaaaaaa2", "worker-aaaaaaa1",
                                                             "worker-aaaaaaa0"}));
                    auto some = txn.ListWorkers(four);
                    EXPECT_TRUE(some.ok() && some->size() == 4u);
                    for (const auto& w : *some) {
                      EXPECT_NE(std::find(four.begin(), four.end(), w.status), four.end());
                    }
                    return Ok();
                  })
                  .ok());
}

// UpdateWorkers writes every row as given, every column; one missing worker fails the whole
// write with NotFound, and the transaction leaves nothing behind.
TEST_P(StoreContract, UpdateWorkersWritesEachRowOrNoneWhenOneIsMissing) {
  auto worker = [](const char* id) {
    Worker w;
    w.id = id;
    w.name = id;
    w.status = WorkerStatus::kIdle;
    w.last_heartbeat_at = 1'000;
    return w;
  };
  std::vector<Worker> ws = {worker("worker-aaaaaaa1"), worker("worker-aaaaaaa2"),
                            worker("worker-aaaaaaa3")};
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    for (const auto& w : ws) TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                    return Ok();
                  })
                  .ok());
  ws[0].last_heartbeat_at = 2'000;
  ws[0].metadata = {{"rss_mb", 7}, {"quote", "it's \"a\" test"}};
  ws[1].status = WorkerStatus::kBusy;
  ws[1].current_task_id = "task-aaaaaaa1";
  ws[1].request = WorkerRequest::kPause;
  ws[1].slot = "slot-2";
  ASSERT_TRUE(store_->Write([&](Txn& txn) { return txn.UpdateWorkers({ws[0], ws[1]}); }).ok());
  auto get = [&](const std::string& id) {
    std::optional<Worker> out;
    EXPECT_TRUE(store_
                    ->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(out, txn.GetWorker(id));
                      return Ok();
                    })
                    .ok());
    return out.value_or(Worker{});
  };
  Worker a = get("worker-aaaaaaa1");
  EXPECT_EQ(a.last_heartbeat_at, 2'000);
  EXPECT_EQ(a.metadata, ws[0].metadata);
  Worker b = get("worker-aaaaaaa2");
  EXPECT_EQ(b.status, WorkerStatus::kBusy);
  EXPECT_EQ(b.current_task_id, "task-aaaaaaa1");
  EXPECT_EQ(b.request, WorkerRequest::kPause);
  EXPECT_EQ(b.slot, "slot-2");
  EXPECT_EQ(get("worker-aaaaaaa3").last_heartbeat_at, 1'000) << "a worker not in the list";

  ws[2].last_heartbeat_at = 3'000;
  Status missing = store_->Write([&](Txn& txn) {
    return txn.UpdateWorkers({ws[2], worker("worker-aaaaaaa9")});
  });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound) << missing.error().message();
  EXPECT_EQ(get("worker-aaaaaaa3").last_heartbeat_at, 1'000) << "the failed write changed a row";
}

TEST_P(StoreContract, ListLiveWorkersInSlotTakesOnlyThatSlotOfThatPool) {
  auto worker = [](const char* id, const char* pool, const char* slot, WorkerStatus st) {
    Worker w;
    w.id = id;
    w.name = id;
    w.pool = pool;
    w.slot = slot;
    w.status = st;
    return w;
  };
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    for (const Worker& w :
                         {worker("worker-aaaaaaa1", "a", "slot-1", WorkerStatus::kIdle),
                          worker("worker-aaaaaaa2", "b", "slot-1", WorkerStatus::kBusy),
                          worker("worker-aaaaaaa3", "a", "slot-1", WorkerStatus::kDead),
                          worker("worker-aaaaaaa4", "a", "slot-2", WorkerStatus::kIdle)}) {
                      TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                    }
                    return Ok();
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(std::vector<Worker> got,
                                        txn.ListLiveWorkersInSlot("a", "slot-1"));
                    EXPECT_EQ(got.size(), 1u);
                    if (!got.empty()) {
                      EXPECT_EQ(got[0].id, "worker-aaaaaaa1");
                    }
                    TX_ASSIGN_OR_RETURN(got, txn.ListLiveWorkersInSlot("c", "slot-1"));
                    EXPECT_TRUE(got.empty());
                    return Ok();
                  })
                  .ok());
}

// One row per orchestrator, keyed by its pool: Put inserts or replaces; the reconciler's record
// is the store's alone.
TEST_P(StoreContract, OrchestratorRowsAndTheReconcilerRecordRoundTrip) {
  OrchestratorState a;
  a.id = "host-a:/srv/.tx";
  a.dir = "/srv/.tx";
  a.status = "running";
  a.pid = 11;
  a.hostname = "host-a";
  a.config = {{"max_queue_depth", 5}};
  a.pool = {{"desired", 2}};
  OrchestratorState b = a;
  b.id = "host-b:/srv/.tx";
  b.hostname = "host-b";
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.PutOrchestrator(b));
                    return txn.PutOrchestrator(a);
                  })
                  .ok());
  a.status = "stopping";
  a.request = {{"stop", "graceful"}};
  ASSERT_TRUE(store_
                  ->Write([&](Txn& txn) -> Status {
                    TX_RETURN_IF_ERROR(txn.PutOrchestrator(a));
                    TX_ASSIGN_OR_RETURN(ReconcilerRecord r, txn.GetReconcilerRecord());
                    EXPECT_EQ(r.leader, "");
                    EXPECT_EQ(r.last_reconcile_at, 0);
                    r.leader = b.id;
                    r.leader_since = 40;
                    r.last_reconcile_at = 42;
                    r.last_report = {{"runs", 3}};
                    return txn.PutReconcilerRecord(r);
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([&](Txn& txn) -> Status {
                    auto all = txn.ListOrchestrators();
                    EXPECT_TRUE(all.ok() && all->size() == 2);
                    if (all.ok() && all->size() == 2) {
                      EXPECT_EQ((*all)[0].id, a.id);
                      EXPECT_EQ((*all)[0].status, "stopping");
                      EXPECT_EQ((*all)[0].request, a.request);
                      EXPECT_EQ((*all)[0].config, a.config);
                      EXPECT_EQ((*all)[0].dir, "/srv/.tx");
                      EXPECT_EQ((*all)[1].id, b.id);
                      EXPECT_EQ((*all)[1].status, "running");
                    }
                    auto missing = txn.GetOrchestrator("host-c:/x");
                    EXPECT_TRUE(missing.ok() && !*missing);
                    auto got = txn.GetOrchestrator(b.id);
                    EXPECT_TRUE(got.ok() && *got && (*got)->hostname == "host-b");
                    auto r = txn.GetReconcilerRecord();
                    EXPECT_TRUE(r.ok() && r->leader == b.id && r->leader_since == 40 &&
                                r->last_reconcile_at == 42 && r->last_report["runs"] == 3);
                    return Ok();
                  })
                  .ok());
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreContract,
                         ::testing::Values(Backend{"file", Kind::kFile},
                                           Backend{"memory", Kind::kMemory}),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Postgres, StoreContract,
                         ::testing::Values(Backend{"postgres", Kind::kPostgres}),
                         [](const auto& info) { return info.param.name; });

// File-only behaviour.

// A fresh folder for a SQLite store of a test's own, removed with what is in it when the test
// ends, however it ends.
struct ScratchStore {
  ScratchStore() {
    char tmpl[] = "/tmp/tx-store-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/tx.db";
  }
  ~ScratchStore() { fs::remove_all(dir); }
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;
  std::string dir;
  std::string path;
};

TEST(SqliteStore, OpeningAMissingStoreWithoutCreateSaysToRunInit) {
  auto s = Open({"/tmp/tx-definitely-missing/tx.db", false});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("tx init"), std::string::npos);
}

TEST(SqliteStore, RefusesASchemaNewerThanItKnows) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  ASSERT_TRUE(Open({path, true}).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto s = Open({path, false});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("schema version 99, newer than this tx knows"),
            std::string::npos)
      << s.error().message();
}

TEST(SqliteStore, ReopeningKeepsDataAndAppliesNoMigrationTwice) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  {
    auto s = Open({path, true});
    ASSERT_TRUE(s.ok());
    Event e{0, "x", 1, "", "", {}};
    ASSERT_TRUE((*s)->Write([&](Txn& txn) { return txn.AppendEvent(e); }).ok());
  }
  auto s = Open({path, false});
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE((*s)->Read([&](Txn& txn) -> Status {
                    auto last = txn.LastEventId();
                    EXPECT_TRUE(last.ok() && *last == 1);
                    return Ok();
                  })
                  .ok());
}

// A one-transaction command leaves the WAL for the next process (no checkpoint's fsyncs at
// exit); a connection that grew the WAL past 500 frames still checkpoints and removes it.
TEST(SqliteStore, ClosingLeavesASmallWalAndCheckpointsABigOne) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  auto append = [&](int events, std::size_t bytes) {
    auto s = Open({path, true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    ASSERT_TRUE((*s)->Write([&](Txn& txn) -> Status {
                      for (int i = 0; i < events; ++i) {
                        Event e{0, "x", 1, "", "", {{"pad", std::string(bytes, 'x')}}};
                        TX_RETURN_IF_ERROR(txn.AppendEvent(e));
                      }
                      return Ok();
                    })
                    .ok());
  };
  auto events = [&] {
    auto s = Open({path, false});
    std::int64_t last = -1;
    EXPECT_TRUE(s.ok() && (*s)->Read([&](Txn& txn) -> Status {
                                TX_ASSIGN_OR_RETURN(last, txn.LastEventId());
                                return Ok();
                              })
                              .ok());
    return last;
  };
  append(1, 10);
  ASSERT_TRUE(fs::exists(path + "-wal"));
  EXPECT_GT(fs::file_size(path + "-wal"), 0u) << "the commit is still in the WAL";
  EXPECT_EQ(events(), 1) << "the next opener reads it from there";
  append(2'000, 1'000);  // a page an event at least: past 500 frames
  EXPECT_FALSE(fs::exists(path + "-wal")) << "checkpointed into the store and removed";
  EXPECT_EQ(events(), 2'001);
}

// The read system calls this process has made (/proc/self/io's syscr counts read and pread).
std::int64_t ReadCalls() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::int64_t value = -1;
  while (io >> key >> value) {
    if (key == "syscr:") return value;
  }
  return -1;
}

// The first opener of a store rebuilds the WAL index from the WAL it finds, reading it ahead in
// large pieces rather than a read a frame; what it read ahead never serves a later read, which
// another connection's writes (over a restarted WAL) may have changed.
TEST(SqliteStore, TheFirstOpenerReadsTheWalBackInFewReadsAndSeesLaterWrites) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  auto append = [&](Store& s, int transactions) {
    for (int i = 0; i < transactions; ++i) {
      Event e{0, "x", 1, "", "", {{"i", std::to_string(i)}}};
      ASSERT_TRUE(s.Write([&](Txn& txn) { return txn.AppendEvent(e); }).ok());
    }
  };
  auto last_event = [&](Store& s) {
    std::int64_t last = -1;
    EXPECT_TRUE(s.Read([&](Txn& txn) -> Status {
                   TX_ASSIGN_OR_RETURN(last, txn.LastEventId());
                   return Ok();
                 }).ok());
    return last;
  };
  {
    auto s = Open({path, true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    append(**s, 150);
  }
  ASSERT_TRUE(fs::exists(path + "-wal"));
  auto frames = static_cast<std::int64_t>((fs::file_size(path + "-wal") - 32) / (1024 + 24));
  ASSERT_GE(frames, 200) << "150 commits left in the WAL, a frame or two each";

  std::int64_t before = ReadCalls();
  ASSERT_GE(before, 0) << "no /proc/self/io";
  auto first = Open({path, false});
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(last_event(**first), 150);
  std::int64_t reads = ReadCalls() - before;
  EXPECT_LT(reads, frames / 4) << reads << " reads to open a store and read back " << frames
                               << " WAL frames";
  first->reset();

  // A WAL of one read-ahead's length, read back by a first opener; then another connection
  // restarts the WAL and writes new frames over the bytes that were read ahead: the first reads
  // them from the file.
  auto checkpoint = [&](const char* mode) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    std::string sql = std::string("PRAGMA wal_checkpoint(") + mode + ")";
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  };
  checkpoint("TRUNCATE");
  {
    auto s = Open({path, false});
    ASSERT_TRUE(s.ok()) << s.error().message();
    append(**s, 20);
  }
  first = Open({path, false});
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(last_event(**first), 170);
  checkpoint("RESTART");
  auto second = Open({path, false});
  ASSERT_TRUE(second.ok()) << second.error().message();
  append(**second, 10);
  EXPECT_EQ(last_event(**first), 180);
  append(**second, 30);
  EXPECT_EQ(last_event(**first), 210);
  first->reset();
  second->reset();
  auto third = Open({path, false});
  ASSERT_TRUE(third.ok()) << third.error().message();
  EXPECT_EQ(last_event(**third), 210);
}

// A worker update that leaves the status as this transaction read it does not set it (SQLite
// would rewrite workers_live's entry, a page more in the WAL: a beat, or a report and the next
// claim); every status a transaction gives a worker is kept, and the index stays whole.
TEST(SqliteStore, AWorkerUpdateThatKeepsItsStatusWritesNoIndexPageAndEveryChangeIsKept) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  auto s = Open({path, true});
  ASSERT_TRUE(s.ok()) << s.error().message();
  Worker w;
  w.id = "worker-aaaaaaaa";
  w.name = "w";
  w.status = WorkerStatus::kIdle;
  ASSERT_TRUE((*s)->Write([&](Txn& txn) { return txn.InsertWorker(w); }).ok());
  auto frames = [&] {
    return static_cast<std::int64_t>(fs::file_size(path + "-wal") / (1024 + 24));
  };
  // update(status, beat): reads the worker, sets the two, writes it back; returns the frames the
  // commit wrote.
  auto update = [&](WorkerStatus status, Millis beat) {
    std::int64_t before = frames();
    EXPECT_TRUE((*s)->Write([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(std::optional<Worker> got, txn.GetWorker(w.id));
                      if (!got) return Error::NotFound("no worker");
                      got->status = status;
                      got->last_heartbeat_at = beat;
                      return txn.UpdateWorker(*got);
                    })
                    .ok());
    return frames() - before;
  };
  auto listed = [&](WorkerStatus status) {
    std::size_t n = 0;
    EXPECT_TRUE((*s)->Read([&](Txn& txn) -> Status {
                      TX_ASSIGN_OR_RETURN(std::vector<Worker> ws, txn.ListWorkers({status}));
                      n = ws.size();
                      return Ok();
                    })
                    .ok());
    return n;
  };
  std::int64_t changed = update(WorkerStatus::kBusy, 1'000);
  std::int64_t kept = update(WorkerStatus::kBusy, 2'000);
  EXPECT_EQ(kept, changed - 1) << "a beat that keeps the status writes the worker's page only";
  EXPECT_EQ(listed(WorkerStatus::kBusy), 1u);
  EXPECT_EQ(update(WorkerStatus::kIdle, 3'000), changed);
  EXPECT_EQ(listed(WorkerStatus::kIdle), 1u);
  EXPECT_EQ(listed(WorkerStatus::kBusy), 0u);

  // Within one transaction: read idle, set busy, set busy again, then stopped: the last holds.
  ASSERT_TRUE((*s)->Write([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(std::optional<Worker> got, txn.GetWorker(w.id));
                    if (!got) return Error::NotFound("no worker");
                    got->status = WorkerStatus::kBusy;
                    TX_RETURN_IF_ERROR(txn.UpdateWorker(*got));
                    got->current_task_id = "task-aaaaaaaa";
                    TX_RETURN_IF_ERROR(txn.UpdateWorker(*got));
                    got->status = WorkerStatus::kStopped;
                    return txn.UpdateWorker(*got);
                  })
                  .ok());
  ASSERT_TRUE((*s)->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(std::optional<Worker> got, txn.GetWorker(w.id));
                    EXPECT_TRUE(got && got->status == WorkerStatus::kStopped &&
                                got->current_task_id == "task-aaaaaaaa");
                    return Ok();
                  })
                  .ok());
  EXPECT_EQ(listed(WorkerStatus::kBusy), 0u);
  EXPECT_EQ(listed(WorkerStatus::kStopped), 1u);
  s->reset();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::string check;
  sqlite3_exec(
      raw, "PRAGMA integrity_check",
      [](void* out, int, char** row, char**) {
        *static_cast<std::string*>(out) += row[0] != nullptr ? row[0] : "";
        return 0;
      },
      &check, nullptr);
  sqlite3_close(raw);
  EXPECT_EQ(check, "ok");
}

// A new SQLite store in a fresh folder, taken back to an older schema by `undo` (SQL run on it):
// how the migration tests make a store an older tx wrote. Returns the store's path.
std::string StoreUndoneBy(const char* undo) {
  char tmpl[] = "/tmp/tx-store-XXXXXX";
  std::string path = std::string(mkdtemp(tmpl)) + "/tx.db";
  EXPECT_TRUE(Open({path, true}).ok());
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, undo, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  return path;
}

// A store of schema version 7 (made here by undoing version 8 on a new one) keeps its rows, takes
// 'waiting' tasks and starts its notification cursor at its newest event (issue 22).
TEST(SqliteStore, VersionEightWidensTheTaskStatusesAndStartsTheCursorAtTheNewestEvent) {
  std::string path = StoreUndoneBy(R"sql(
    ALTER TABLE workers DROP COLUMN busy_heartbeat_interval_ms;
    DROP TABLE notify_deliveries; DROP TABLE notify_cursor;
    PRAGMA writable_schema = ON;
    UPDATE sqlite_schema SET sql = replace(sql, ' OR status = ''waiting''', '')
     WHERE type = 'table' AND name = 'tasks';
    PRAGMA writable_schema = RESET;
    PRAGMA user_version = 7;
    INSERT INTO events (type, at) VALUES ('task.created', 1), ('task.done', 2);
  )sql");
  std::string dir = fs::path(path).parent_path();
  sqlite3* db = nullptr;
  auto s = Open({path, false});
  ASSERT_TRUE(s.ok()) << s.error().message();
  Task t;
  t.id = "task-aaaaaaaa";
  t.title = "asks";
  t.status = TaskStatus::kReady;
  ASSERT_TRUE((*s)->Write([&](Txn& txn) { return txn.InsertTask(t); }).ok());
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "UPDATE tasks SET status = 'waiting'", nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  EXPECT_NE(sqlite3_exec(db, "UPDATE tasks SET status = 'bogus'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::int64_t cursor = -1;
  ASSERT_TRUE((*s)->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(cursor, txn.GetNotifyCursor());
                    return Ok();
                  })
                  .ok());
  EXPECT_EQ(cursor, 2);
  fs::remove_all(dir);
}

// A store of schema version 8 (made here by undoing version 9 on a new one) keeps its workers,
// which promise their heartbeat interval while busy as they did.
TEST(SqliteStore, VersionNineGivesOlderWorkersNoBusyInterval) {
  std::string path = StoreUndoneBy(R"sql(
    ALTER TABLE workers DROP COLUMN busy_heartbeat_interval_ms;
    PRAGMA user_version = 8;
    INSERT INTO workers (id, name, slot, hostname, pid, capabilities, queues, status,
                         heartbeat_interval_ms, registered_at, last_heartbeat_at,
                         current_task_id, reason, metadata, request, pool)
    VALUES ('worker-aaaaaaaa', 'old', '', 'h', 1, '[]', '["default"]', 'busy', 1000, 1, 1, '',
            '', '{}', '', '');
  )sql");
  std::string dir = fs::path(path).parent_path();
  auto s = Open({path, false});
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE((*s)->Read([&](Txn& txn) -> Status {
                    TX_ASSIGN_OR_RETURN(std::optional<Worker> w, txn.GetWorker("worker-aaaaaaaa"));
                    EXPECT_TRUE(w.has_value());
                    if (w) {
                      EXPECT_EQ(w->busy_heartbeat_interval_ms, 0);
                      EXPECT_EQ(StaleAfterMs(*w), 2'000);
                    }
                    return Ok();
                  })
                  .ok());
  fs::remove_all(dir);
}

// Tokens are the claims' rowids: deleting the newest claim would hand its token out again, so the
// schema refuses any delete. A new store also gets small pages (less WAL written per claim).
TEST(SqliteStore, RefusesToDeleteAClaimItsTaskOrItsWorker) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  {
    auto s = Open({path, true});
    ASSERT_TRUE(s.ok());
    Task t;
    t.id = "task-aaaaaaa1";
    t.title = "t";
    t.status = TaskStatus::kRunning;
    Worker w;
    w.id = "worker-aaaaaaaa";
    w.name = "w";
    Claim c{0, t.id, w.id, 1, 1, 100, 101};
    ASSERT_TRUE((*s)->Write([&](Txn& txn) -> Status {
                      TX_RETURN_IF_ERROR(txn.InsertTask(t));
                      TX_RETURN_IF_ERROR(txn.InsertWorker(w));
                      return txn.InsertClaim(c);
                    })
                    .ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_NE(sqlite3_exec(db, "DELETE FROM claims", nullptr, nullptr, &err), SQLITE_OK);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("claims are never deleted"), std::string::npos) << err;
  sqlite3_free(err);
  // Nor the task or worker a claim refers to.
  for (const char* table : {"tasks", "workers"}) {
    err = nullptr;
    std::string sql = std::string("DELETE FROM ") + table;
    EXPECT_NE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << table;
    ASSERT_NE(err, nullptr);
    EXPECT_NE(std::string(err).find(std::string(table) + " are never deleted"), std::string::npos)
        << err;
    sqlite3_free(err);
  }
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1024);
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM claims", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// An idle worker sleeps on the watch: a commit by another connection that makes a task ready
// must make it readable; other commits need not.
TEST(SqliteStore, ACommitThatMakesATaskReadyWakesTheWatch) {
  ScratchStore scratch;
  const std::string& path = scratch.path;
  const std::string& dir = scratch.dir;
  auto watcher = Open({path, true});
  ASSERT_TRUE(watcher.ok());
  auto watch = (*watcher)->Watch();
  ASSERT_TRUE(watch.ok()) << watch.error().message();
  ASSERT_GE((*watch)->fd(), 0);
  (*watch)->Drain();
  pollfd quiet{(*watch)->fd(), POLLIN, 0};
  EXPECT_EQ(poll(&quiet, 1, 50), 0) << "woken with nothing written";
  std::ofstream(dir + "/unrelated.log") << "noise\n";
  EXPECT_FALSE((*watch)->Drain()) << "another file in the directory is not a change";

  auto writer = Open({path, false});
  ASSERT_TRUE(writer.ok());
  Event e{0, "x", 1, "", "", {}};
  ASSERT_TRUE((*writer)->Write([&](Txn& txn) { return txn.AppendEvent(e); }).ok());
  // Not even readable: a thousand heartbeats a second must not wake every watcher.
  EXPECT_EQ(poll(&quiet, 1, 50), 0) << "the fd woke for a commit that made no task ready";
  EXPECT_FALSE((*watch)->Drain()) << "woken by a commit that made no task ready";
  Task t;
  t.id = "task-aaaaaaa1";
  t.title = "t";
  t.status = TaskStatus::kReady;
  ASSERT_TRUE((*writer)->Write([&](Txn& txn) { return txn.InsertTask(t); }).ok());
  pollfd woken{(*watch)->fd(), POLLIN, 0};
  EXPECT_EQ(poll(&woken, 1, 5000), 1);
  EXPECT_TRUE((*watch)->Drain());

  // The wake file removed (once no writer holds it open, the watch ends) and made again by the
  // next notifier: the watch follows it.
  writer->reset();
  fs::remove(path + "-wake");
  EXPECT_EQ(poll(&woken, 1, 5000), 1) << "the removal is not noticed";
  EXPECT_TRUE((*watch)->Drain());
  auto second = Open({path, false});
  ASSERT_TRUE(second.ok());
  t.id = "task-aaaaaaa2";
  ASSERT_TRUE((*second)->Write([&](Txn& txn) { return txn.InsertTask(t); }).ok());
  EXPECT_EQ(poll(&woken, 1, 5000), 1) << "not woken after the wake file was made again";
  EXPECT_TRUE((*watch)->Drain());

  auto memory = Open({":memory:", true});
  ASSERT_TRUE(memory.ok());
  auto none = (*memory)->Watch();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->fd(), -1);
}

TEST(SqliteStore, RefusesAnUnknownSynchronousMode) {
  auto s = Open({":memory:", true, "SOMETIMES"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tx::store
