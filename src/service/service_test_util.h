#pragma once
// Test fixture for the services: an in-memory store, a fake clock and every service, plus helpers
// that make a test read like its specification.

#include <gtest/gtest.h>

#include <chrono>

#include "service/claim_service.h"
#include "service/event_log.h"
#include "service/reconciler.h"
#include "service/task_service.h"
#include "service/worker_service.h"

namespace tx::service {

using namespace std::chrono_literals;

// Unwraps a Result in a test, failing loudly with its message.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                                   \
  auto TX_CONCAT(r_, __LINE__) = (expr);                                                  \
  ASSERT_TRUE(TX_CONCAT(r_, __LINE__).ok()) << TX_CONCAT(r_, __LINE__).error().message(); \
  lhs = std::move(TX_CONCAT(r_, __LINE__)).value()
#define ASSERT_OK(expr)                           \
  do {                                            \
    auto&& s_ = (expr);                           \
    ASSERT_TRUE(s_.ok()) << s_.error().message(); \
  } while (0)
#define EXPECT_ERROR_CODE(expr, code_)                           \
  do {                                                           \
    auto&& s_ = (expr);                                          \
    ASSERT_FALSE(s_.ok());                                       \
    EXPECT_EQ(s_.error().code(), code_) << s_.error().message(); \
  } while (0)

inline ServiceOptions TestOptions() {
  ServiceOptions o;
  o.unit_random = [] { return 0.5; };  // jitter factor 1.0: delays are exact
  o.default_lease_ms = 60'000;
  o.default_heartbeat_interval_ms = 10'000;
  return o;
}

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest()
      : store_(store::Open({":memory:", true}).value()),
        tasks_(*store_, clock_, TestOptions()),
        claims_(*store_, clock_, TestOptions()),
        workers_(*store_, clock_, TestOptions()),
        reconciler_(*store_, TestOptions()),
        events_(*store_) {}

  Task AddTask(const std::string& title, std::int64_t priority = 0,
               std::vector<std::string> after = {}) {
    Task t;
    t.title = title;
    t.priority = priority;
    t.after = std::move(after);
    auto r = tasks_.Add(t);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Task{};
  }

  Worker Register(const std::string& name = "w1", std::vector<std::string> caps = {},
                  const std::string& slot = "") {
    Registration r;
    r.name = name;
    r.slot = slot;
    r.capabilities = std::move(caps);
    auto w = workers_.Register(r);
    EXPECT_TRUE(w.ok()) << w.error().message();
    return w.ok() ? *w : Worker{};
  }

  // A worker promising a beat every second idle and every half second busy.
  Worker RegisterFast() {
    Registration r;
    r.name = "fast";
    r.heartbeat_interval_ms = 1'000;
    r.busy_heartbeat_interval_ms = 500;
    auto w = workers_.Register(r);
    EXPECT_TRUE(w.ok()) << w.error().message();
    return w.ok() ? *w : Worker{};
  }

  ClaimResult ClaimNextFor(const Worker& w) {
    auto r = claims_.ClaimNext(w.id);
    EXPECT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(r.ok() && r->has_value()) << "nothing was claimable";
    return r.ok() && r->has_value() ? **r : ClaimResult{};
  }

  Task Get(const std::string& id) { return tasks_.Show(id).value().task; }
  std::vector<Claim> Attempts(const std::string& id) { return tasks_.Show(id).value().attempts; }
  Worker GetWorker(const std::string& id) { return workers_.Get(id).value(); }

  std::vector<std::string> EventTypes() {
    std::vector<std::string> out;
    for (const auto& e : events_.Since(0).value()) out.push_back(e.type);
    return out;
  }
  std::int64_t EventCount() { return events_.LastId().value(); }

  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  TaskService tasks_;
  ClaimService claims_;
  WorkerService workers_;
  Reconciler reconciler_;
  EventLog events_;
};

}  // namespace tx::service
