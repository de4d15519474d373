// Crash test: a store wrapper fails the Nth write transaction, before or after its commit, for
// every N across a register-claim-renew-complete sequence. After each injected crash the
// reconciler (run after the lease and heartbeat windows pass) must restore a state where nothing
// is lost and nothing is completed twice, and the task must still be completable exactly once.
// On both backends: SQLite (:memory:) and PostgreSQL (a fresh database on the server of the ctest
// fixture pg).

#include <gtest/gtest.h>

#include <memory>

#include "pg_test_db.h"
#include "service/claim_service.h"
#include "service/reconciler.h"
#include "service/task_service.h"
#include "service/worker_service.h"

namespace tx {
namespace {

using namespace std::chrono_literals;

enum class FaultPoint { kBeforeCommit, kAfterCommit };

// Fails write transaction number `fail_at` (1-based): before it runs (nothing written), or after
// it committed (everything written, but the caller sees an error, as when a process dies between
// COMMIT and its reply).
class FaultyStore final : public store::Store {
 public:
  FaultyStore(store::Store& inner, int fail_at, FaultPoint point)
      : inner_(inner), fail_at_(fail_at), point_(point) {}

  Status Write(const store::TxnFn& fn) override {
    ++writes_;
    if (writes_ != fail_at_) return inner_.Write(fn);
    fired_ = true;
    if (point_ == FaultPoint::kBeforeCommit)
      return Error::Unavailable("injected crash before commit");
    Status s = inner_.Write(fn);
    if (!s.ok()) return s;
    return Error::Unavailable("injected crash after commit");
  }
  Status Read(const store::TxnFn& fn) override { return inner_.Read(fn); }
  Result<std::int64_t> ChangeCounter() override { return inner_.ChangeCounter(); }
  Result<std::unique_ptr<store::ChangeWatch>> Watch() override { return inner_.Watch(); }
  std::string Describe() const override { return "faulty " + inner_.Describe(); }
  const Clock& clock() const override { return inner_.clock(); }
  Result<std::unique_ptr<store::Leadership>> TryLead() override { return inner_.TryLead(); }
  bool SharedByHosts() const override { return inner_.SharedByHosts(); }

  bool fired() const { return fired_; }

 private:
  store::Store& inner_;
  int fail_at_;
  FaultPoint point_;
  int writes_ = 0;
  bool fired_ = false;
};

service::ServiceOptions Options() {
  service::ServiceOptions o;
  o.default_lease_ms = 60'000;
  o.default_heartbeat_interval_ms = 10'000;
  o.unit_random = [] { return 0.5; };
  return o;
}

// The process under test: registers, claims, renews twice, completes. Stops at the first error,
// as a crashed process would.
void RunWorkerSequence(store::Store& store, const Clock& clock) {
  service::WorkerService workers(store, clock, Options());
  service::ClaimService claims(store, clock, Options());
  service::Registration reg;
  reg.name = "victim";
  auto w = workers.Register(reg);
  if (!w.ok()) return;
  auto c = claims.ClaimNext(w->id);
  if (!c.ok() || !c->has_value()) return;
  const auto& claim = (*c)->claim;
  if (!claims.Renew(claim.task_id, claim.token).ok()) return;
  if (!claims.Renew(claim.task_id, claim.token).ok()) return;
  (void)claims.Report(claim.task_id, claim.token, service::Outcome::kDone, "ok");
}

struct Tally {
  int completed_claims = 0;
  int active_claims = 0;
};

Tally CountClaims(store::Store& store, const std::string& task_id) {
  Tally t;
  EXPECT_TRUE(store
                  .Read([&](store::Txn& txn) -> Status {
                    for (const auto& c : txn.ListClaimsForTask(task_id).value()) {
                      t.completed_claims += c.status == ClaimStatus::kCompleted;
                      t.active_claims += c.status == ClaimStatus::kActive;
                    }
                    return Ok();
                  })
                  .ok());
  return t;
}

enum class Backend { kSqlite, kPostgres };

class CrashTest : public ::testing::TestWithParam<std::tuple<int, FaultPoint, Backend>> {};

TEST_P(CrashTest, AfterACrashAtAnyTransactionNothingIsLostAndNothingIsCompletedTwice) {
  auto [fail_at, point, backend] = GetParam();
  FakeClock clock;
  std::unique_ptr<testing::PgTestDb> pg;
  std::string url = ":memory:";
  if (backend == Backend::kPostgres) {
    pg = std::make_unique<testing::PgTestDb>();
    ASSERT_TRUE(pg->ok()) << pg->error();
    url = pg->url();
  }
  auto opened = store::Open({url, true});
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  auto real = std::move(opened).value();
  service::TaskService tasks(*real, clock, Options());
  Task draft;
  draft.title = "precious";
  auto task = tasks.Add(draft);
  ASSERT_TRUE(task.ok());

  FaultyStore faulty(*real, fail_at, point);
  RunWorkerSequence(faulty, clock);
  ASSERT_TRUE(faulty.fired()) << "the sequence has fewer than " << fail_at << " writes";

  // Let every lease and heartbeat window pass, then repair.
  clock.Advance(5min);
  service::Reconciler reconciler(*real, Options());
  ASSERT_TRUE(reconciler.RunOnce(clock.Now()).ok());

  Task after = tasks.Show(task->id).value().task;
  Tally tally = CountClaims(*real, task->id);
  EXPECT_EQ(tally.active_claims, 0) << "a claim survived the repair";
  EXPECT_LE(tally.completed_claims, 1);
  if (after.status == TaskStatus::kDone) {
    EXPECT_EQ(tally.completed_claims, 1);
  } else {
    EXPECT_EQ(after.status, TaskStatus::kReady) << "lost in " << ToString(after.status);
    EXPECT_EQ(tally.completed_claims, 0);
    // Still completable, exactly once, by a fresh worker.
    RunWorkerSequence(*real, clock);
    EXPECT_EQ(tasks.Show(task->id).value().task.status, TaskStatus::kDone);
    EXPECT_EQ(CountClaims(*real, task->id).completed_claims, 1);
  }
  // A second repair finds nothing more to do.
  auto again = reconciler.RunOnce(clock.Now());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Total(), 0);
}

// The sequence writes 5 times: register, claim, renew, renew, complete.
INSTANTIATE_TEST_SUITE_P(
    EveryTransaction, CrashTest,
    ::testing::Combine(::testing::Range(1, 6),
                       ::testing::Values(FaultPoint::kBeforeCommit, FaultPoint::kAfterCommit),
                       ::testing::Values(Backend::kSqlite, Backend::kPostgres)),
    [](const auto& info) {
      std::string name = "Txn" + std::to_string(std::get<0>(info.param));
      name += std::get<1>(info.param) == FaultPoint::kBeforeCommit ? "BeforeCommit" : "AfterCommit";
      name += std::get<2>(info.param) == Backend::kSqlite ? "Sqlite" : "Postgres";
      return name;
    });

}  // namespace
}  // namespace tx
