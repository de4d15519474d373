#include "core/notify.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

Event MakeEvent(std::string type, nlohmann::json data = nlohmann::json::object()) {
  Event e;
  e.id = 7;
  e.type = std::move(type);
  e.at = 1'700'000'000'000;
  e.task_id = "task-aaaaaaaa";
  e.data = std::move(data);
  return e;
}

TEST(Notify, ASinkWithoutEventsGetsWhatNeedsAPerson) {
  SinkSpec sink;
  sink.url = "http://127.0.0.1:9/hook";
  for (const char* type :
       {"task.review", "task.review_overdue", "task.failed", "task.asked", "agent.limited",
        "agent.resumed", "budget.reached", "slot.failed", "pool.no_workers", "worker.dead"}) {
    EXPECT_TRUE(SinkWants(sink, MakeEvent(type))) << type;
  }
  for (const char* type : {"task.done", "task.claimed", "lease.renewed", "task.retry_scheduled"}) {
    EXPECT_FALSE(SinkWants(sink, MakeEvent(type))) << type;
  }
}

TEST(Notify, EventsMatchByTypePrefixOrStar) {
  SinkSpec sink;
  sink.command = {"cat"};
  sink.events = {"task.done", "agent.*"};
  EXPECT_TRUE(SinkWants(sink, MakeEvent("task.done")));
  EXPECT_TRUE(SinkWants(sink, MakeEvent("agent.limited")));
  EXPECT_FALSE(SinkWants(sink, MakeEvent("task.failed")));
  EXPECT_FALSE(SinkWants(sink, MakeEvent("agents.x")));
  sink.events = {"*"};
  EXPECT_TRUE(SinkWants(sink, MakeEvent("lease.renewed")));
}

TEST(Notify, AFailedDeliveryIsNotAnnouncedToTheSinkThatFailed) {
  SinkSpec a, b;
  a.url = "http://a/hook";
  b.url = "http://b/hook";
  a.events = b.events = {"notify.failed"};
  Event e = MakeEvent("notify.failed", {{"sink", "http://a/hook"}});
  EXPECT_FALSE(SinkWants(a, e));
  EXPECT_TRUE(SinkWants(b, e));
}

TEST(Notify, RetriesWaitOneSecondDoublingToAnHour) {
  EXPECT_EQ(DeliveryRetryDelay(1), 1'000);
  EXPECT_EQ(DeliveryRetryDelay(2), 2'000);
  EXPECT_EQ(DeliveryRetryDelay(3), 4'000);
  EXPECT_EQ(DeliveryRetryDelay(12), 2'048'000);
  EXPECT_EQ(DeliveryRetryDelay(13), 3'600'000);
  EXPECT_EQ(DeliveryRetryDelay(1000), 3'600'000);
}

TEST(Notify, TheBodyCarriesTheEventTheTaskAndOneLineForAPerson) {
  nlohmann::json task = {{"id", "task-aaaaaaaa"}, {"title", "Fix login"}, {"status", "failed"}};
  nlohmann::json body = NotificationBody(MakeEvent("task.failed", {{"error", "exited 3"}}), task);
  EXPECT_EQ(body["event"]["type"], "task.failed");
  EXPECT_EQ(body["event"]["id"], 7);
  EXPECT_EQ(body["event"]["task_id"], "task-aaaaaaaa");
  EXPECT_EQ(body["task"]["title"], "Fix login");
  EXPECT_EQ(body["text"], "tx: task-aaaaaaaa \"Fix login\" failed: exited 3");
  std::string asked =
      NotificationText(MakeEvent("task.asked", {{"question", "Which database?"}}), task);
  EXPECT_EQ(asked,
            "tx: task-aaaaaaaa \"Fix login\" asks: Which database? (tx task answer task-aaaaaaaa "
            "\"...\")");
  EXPECT_EQ(body.dump().find('\n'), std::string::npos);
}

TEST(Notify, DeliveryStatusesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(ParseDeliveryStatus("failed").value(), DeliveryStatus::kFailed);
  auto bad = ParseDeliveryStatus("lost");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pending, delivered, failed"), std::string::npos);
}

}  // namespace
}  // namespace tx
