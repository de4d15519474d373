// The notifications' rounds over a real store (SQLite and PostgreSQL) with a fake clock; the
// receivers are sinks of the test's own that record what they get and answer as told.

#include "notify/dispatcher.h"

#include <gtest/gtest.h>

#include <deque>

#include "pg_test_db.h"
#include "service/service_test_util.h"

namespace tx::notify {
namespace {

using namespace std::chrono_literals;

// A receiver: records every try and answers with the next outcome queued (ok when none is).
struct Receiver {
  std::vector<Delivery> got;
  std::deque<bool> answers;
};

class RecordingSink final : public Sink {
 public:
  explicit RecordingSink(Receiver& r) : r_(r) {}
  Status Send(const Delivery& d) override {
    r_.got.push_back(d);
    bool ok = true;
    if (!r_.answers.empty()) {
      ok = r_.answers.front();
      r_.answers.pop_front();
    }
    if (ok) return Ok();
    return Error::Unavailable("HTTP 500");
  }

 private:
  Receiver& r_;
};

enum class Backend { kSqlite, kPostgres };

class DispatcherTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string url = ":memory:";
    if (GetParam() == Backend::kPostgres) {
      pg_ = std::make_unique<testing::PgTestDb>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url = pg_->url();
    }
    auto s = store::Open({url, true});
    ASSERT_TRUE(s.ok()) << s.error().message();
    store_ = std::move(*s);
    tasks_ = std::make_unique<service::TaskService>(*store_, clock_, service::TestOptions());
  }

  SinkSpec Spec(std::string url, std::vector<std::string> events = {}) {
    SinkSpec s;
    s.url = std::move(url);
    s.events = std::move(events);
    return s;
  }

  std::unique_ptr<Dispatcher> Make(std::vector<std::pair<SinkSpec, Receiver*>> sinks) {
    std::vector<SinkSpec> specs;
    std::map<std::string, std::unique_ptr<Sink>> made;
    for (auto& [spec, receiver] : sinks) {
      specs.push_back(spec);
      made[spec.Key()] = std::make_unique<RecordingSink>(*receiver);
    }
    return std::make_unique<Dispatcher>(*store_, clock_, std::move(specs), std::move(made));
  }

  // A task that failed for good: a task.failed event.
  Task FailedTask(const std::string& title) {
    Task t;
    t.title = title;
    auto added = tasks_->Add(t);
    EXPECT_TRUE(added.ok());
    auto failed = tasks_->ForceOutcome(added->id, service::Outcome::kFail, "it broke");
    EXPECT_TRUE(failed.ok()) << failed.error().message();
    return *failed;
  }

  DispatchReport Step(Dispatcher& d) {
    auto r = d.Step();
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : DispatchReport{};
  }

  std::vector<Event> EventsOfType(const std::string& type) {
    std::vector<Event> out;
    service::EventLog log(*store_);
    for (auto& e : log.Since(0).value()) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }

  std::unique_ptr<testing::PgTestDb> pg_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::TaskService> tasks_;
};

TEST_P(DispatcherTest, AnEventReachesEachSinkThatWantsItOnceWithTheTaskAsShown) {
  Receiver failures, everything;
  auto d = Make({{Spec("http://a/hook"), &failures}, {Spec("http://b/hook", {"*"}), &everything}});
  Task t = FailedTask("Fix login");
  DispatchReport r = Step(*d);
  std::size_t events = service::EventLog(*store_).Since(0).value().size();  // created ... failed
  EXPECT_EQ(r.delivered, 1 + static_cast<int>(events));
  ASSERT_EQ(failures.got.size(), 1u);
  nlohmann::json body = nlohmann::json::parse(failures.got[0].body);
  EXPECT_EQ(body["event"]["type"], "task.failed");
  EXPECT_EQ(body["task"]["id"], t.id);
  EXPECT_EQ(body["task"]["status"], "failed");
  EXPECT_EQ(body["task"]["title"], "Fix login");
  EXPECT_EQ(body["text"], "tx: " + t.id + " \"Fix login\" failed: it broke");
  EXPECT_EQ(everything.got.size(), events);
  // Nothing new: nothing sent again.
  r = Step(*d);
  EXPECT_EQ(r.Sent(), 0);
  EXPECT_EQ(failures.got.size(), 1u);
}

TEST_P(DispatcherTest, AFailedTryIsRetriedWithTheSameIdAfterOneTwoAndFourSeconds) {
  Receiver r;
  r.answers = {false, false, false, true};
  auto d = Make({{Spec("http://a/hook"), &r}});
  FailedTask("flaky receiver");
  EXPECT_EQ(Step(*d).retrying, 1);
  for (auto wait : {1000ms, 2000ms, 4000ms}) {
    clock_.Advance(wait - 1ms);
    EXPECT_EQ(Step(*d).Sent(), 0) << "tried before its backoff of " << wait.count() << " ms";
    clock_.Advance(1ms);
    EXPECT_EQ(Step(*d).Sent(), 1);
  }
  ASSERT_EQ(r.got.size(), 4u);
  for (const auto& got : r.got) EXPECT_EQ(got.id, r.got[0].id);
  service::NotifyOutbox outbox(*store_, clock_);
  auto list = outbox.List(std::nullopt, 0).value();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].status, DeliveryStatus::kDelivered);
  EXPECT_EQ(list[0].attempts, 4);
}

TEST_P(DispatcherTest, ADeliveryFailsAfterTwentyFourHoursWithANotifyFailedEvent) {
  Receiver down, other;
  down.answers = std::deque<bool>(100, false);
  auto d = Make(
      {{Spec("http://down/hook"), &down}, {Spec("http://other/hook", {"notify.failed"}), &other}});
  Task t = FailedTask("nobody listens");
  for (int i = 0; i < 200 && EventsOfType("notify.failed").empty(); ++i) {
    Step(*d);
    clock_.Advance(std::chrono::milliseconds(DeliveryRetryDelay(std::max<int>(1, i))));
  }
  auto failed = EventsOfType("notify.failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].task_id, t.id);
  EXPECT_EQ(failed[0].data["sink"], "http://down/hook");
  EXPECT_EQ(failed[0].data["event_type"], "task.failed");
  // Tried for up to 24 hours: 1 s doubling to an hour makes 12 tries in the first 68 minutes,
  // then one an hour.
  EXPECT_GE(down.got.size(), 30u);
  EXPECT_LE(down.got.size(), 40u);
  service::NotifyOutbox outbox(*store_, clock_);
  EXPECT_EQ(outbox.List(DeliveryStatus::kFailed, 0).value().size(), 1u);
  // The other sink hears of it; the failing one is not told about itself.
  Step(*d);
  ASSERT_EQ(other.got.size(), 1u);
  EXPECT_EQ(other.got[0].event_type, "notify.failed");
  clock_.Advance(48h);
  std::size_t tries = down.got.size();
  Step(*d);
  EXPECT_EQ(down.got.size(), tries);
}

TEST_P(DispatcherTest, ADeliveryToASinkNoLongerConfiguredFailsAtOnce) {
  Receiver old_receiver, new_receiver;
  old_receiver.answers = {false};
  auto before = Make({{Spec("http://old/hook"), &old_receiver}});
  FailedTask("moved");
  EXPECT_EQ(Step(*before).retrying, 1);
  auto after = Make({{Spec("http://new/hook"), &new_receiver}});
  clock_.Advance(2s);
  EXPECT_EQ(Step(*after).failed, 1);
  EXPECT_TRUE(new_receiver.got.empty());
  service::NotifyOutbox outbox(*store_, clock_);
  auto failed = outbox.List(DeliveryStatus::kFailed, 0).value();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].last_error.find("no sink http://old/hook is configured"), std::string::npos);
}

TEST_P(DispatcherTest, EventsOlderThanADayAreNotSentAndTheCursorMovesPastThem) {
  Receiver r;
  FailedTask("long ago");
  clock_.Advance(25h);
  auto d = Make({{Spec("http://a/hook"), &r}});
  DispatchReport report = Step(*d);
  EXPECT_EQ(report.fan_out.too_old, report.fan_out.events);
  EXPECT_GE(report.fan_out.events, 2);
  EXPECT_TRUE(r.got.empty());
  FailedTask("now");
  Step(*d);
  EXPECT_EQ(r.got.size(), 1u);
}

TEST_P(DispatcherTest, TwoFanOutsQueueEachEventOnce) {
  Receiver r;
  auto d = Make({{Spec("http://a/hook"), &r}});
  FailedTask("first");
  // Another process fans out first (one fan-out moves the cursor: the second finds nothing).
  service::NotifyOutbox other(*store_, clock_);
  SinkSpec spec = Spec("http://a/hook");
  ASSERT_TRUE(other.FanOut({spec}).ok());
  auto report = Step(*d);
  EXPECT_EQ(report.fan_out.queued, 0);
  EXPECT_EQ(report.delivered, 1);  // the delivery the other queued, sent once
  EXPECT_EQ(r.got.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, DispatcherTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& info) {
                           return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

}  // namespace
}  // namespace tx::notify
