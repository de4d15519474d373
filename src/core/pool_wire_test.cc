#include "core/pool_wire.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

using nlohmann::json;

template <typename T>
T RoundTrip(const T& value) {
  return json(value).get<T>();
}

PoolRequest EveryRequest() {
  PoolRequest r;
  r.workers = 4;
  r.scale_id = "scale-7-1700000000000";
  r.create.push_back({"create-1", {"--agent", "codex"}, "be brief", "/srv/w"});
  r.create.push_back({"create-2", {}, "", ""});
  r.retire.push_back({"retire-1", "slot-2", true});
  r.stop = PoolStop::kForce;
  return r;
}

TEST(PoolWireTest, ARequestRoundTrips) {
  EXPECT_EQ(RoundTrip(EveryRequest()), EveryRequest());
  EXPECT_EQ(RoundTrip(PoolRequest{}), PoolRequest{});
  PoolRequest graceful;
  graceful.stop = PoolStop::kGraceful;
  EXPECT_EQ(RoundTrip(graceful), graceful);
}

// The row's request as the orchestrator has always read it (and as the events show it).
TEST(PoolWireTest, ARequestWritesTheRowsJson) {
  EXPECT_EQ(json(PoolRequest{}).dump(), "{}");
  EXPECT_EQ(json(EveryRequest()).dump(),
            R"({"create":[{"args":["--agent","codex"],"id":"create-1","instructions":"be brief",)"
            R"("workdir":"/srv/w"},{"args":[],"id":"create-2","instructions":"","workdir":""}],)"
            R"("retire":[{"force":true,"id":"retire-1","slot":"slot-2"}],)"
            R"("scale_id":"scale-7-1700000000000","stop":"force","workers":4})");
  PoolRequest scale;
  scale.workers = 0;
  EXPECT_EQ(json(scale).dump(), R"({"scale_id":"","workers":0})");
}

TEST(PoolWireTest, ARequestIsReadLeniently) {
  json j = {{"workers", "three"},
            {"create", {{{"id", "c"}, {"args", {"--x", 1, "--y"}}}, "not an object"}},
            {"retire", "nope"},
            {"stop", "anything"},
            {"newer", true}};
  PoolRequest r = j.get<PoolRequest>();
  EXPECT_FALSE(r.workers);
  ASSERT_EQ(r.create.size(), 1u);
  EXPECT_EQ(r.create[0].id, "c");
  EXPECT_EQ(r.create[0].args, (std::vector<std::string>{"--x", "--y"}));
  EXPECT_TRUE(r.retire.empty());
  EXPECT_EQ(r.stop, PoolStop::kGraceful);  // any stop but "force" is graceful
  EXPECT_TRUE(json::array().get<PoolRequest>().empty());
}

TEST(PoolWireTest, AnswersRoundTripAndWriteOnlyWhatTheySay) {
  PoolAnswer scaled;
  scaled.ok = true;
  scaled.workers = 3;
  EXPECT_EQ(json(scaled).dump(), R"({"ok":true,"workers":3})");
  PoolAnswer created;
  created.ok = true;
  created.slot = "slot-4";
  created.pid = 4242;
  EXPECT_EQ(json(created).dump(), R"({"ok":true,"pid":4242,"slot":"slot-4"})");
  PoolAnswer missing = PoolAnswer::Refused("the pool has no slot slot-9", "not_found");
  EXPECT_EQ(json(missing).dump(),
            R"({"code":"not_found","message":"the pool has no slot slot-9","ok":false})");
  for (const PoolAnswer& a : {scaled, created, missing}) EXPECT_EQ(RoundTrip(a), a);
}

TEST(PoolWireTest, AnAnswerSaysWhatItMeansToItsWaiter) {
  PoolAnswer ok;
  ok.ok = true;
  EXPECT_TRUE(ok.AsStatus().ok());
  EXPECT_EQ(PoolAnswer::Refused("no capacity: 1 of 3 running").AsStatus().error().code(),
            ErrorCode::kBackpressure);
  EXPECT_EQ(PoolAnswer::Refused("gone", "not_found").AsStatus().error().code(),
            ErrorCode::kNotFound);
  Status stopping = PoolAnswer::Refused("the orchestrator is stopping").AsStatus();
  EXPECT_EQ(stopping.error().code(), ErrorCode::kConflict);
  EXPECT_EQ(stopping.error().message(), "the orchestrator is stopping");
  EXPECT_EQ(PoolAnswer{}.AsStatus().error().message(), "refused");
}

PoolSnapshot APool() {
  PoolSnapshot p;
  p.desired = 2;
  p.max_workers = 10;
  p.live = 1;
  p.slots.push_back({"slot-1", "running", 100, 1'700'000'000'000, 0, 0, "", ""});
  p.slots.push_back({"slot-2", "backoff", 0, 0, 3, 1'700'000'001'000, "exited 1", ""});
  PoolAnswer scaled;
  scaled.ok = true;
  scaled.workers = 2;
  p.results["scale-1"] = scaled;
  p.updated_at = 1'700'000'000'500;
  return p;
}

TEST(PoolWireTest, ASnapshotRoundTrips) {
  EXPECT_EQ(RoundTrip(APool()), APool());
  EXPECT_EQ(RoundTrip(PoolSnapshot{}), PoolSnapshot{});
}

// What status, top and the waiters have always read from the row.
TEST(PoolWireTest, ASnapshotWritesThePublishedPool) {
  EXPECT_EQ(json(PoolSnapshot{}).dump(),
            R"({"desired":0,"live":0,"max_workers":0,"results":{},"slots":[],"stopping":false,)"
            R"("updated_at":0})");
  EXPECT_EQ(json(APool()).dump(),
            R"({"desired":2,"live":1,"max_workers":10,"results":{"scale-1":{"ok":true,)"
            R"("workers":2}},"slots":[{"failure":"","last_exit":"","next_start_at":0,"pid":100,)"
            R"("restarts":0,"slot":"slot-1","started_at":1700000000000,"state":"running"},)"
            R"({"failure":"","last_exit":"exited 1","next_start_at":1700000001000,"pid":0,)"
            R"("restarts":3,"slot":"slot-2","started_at":0,"state":"backoff"}],"stopping":false,)"
            R"("updated_at":1700000000500})");
}

TEST(PoolWireTest, ARowNeverPublishedReadsAsAnEmptyPool) {
  PoolSnapshot p = json::object().get<PoolSnapshot>();
  EXPECT_EQ(p, PoolSnapshot{});
  EXPECT_EQ(p.FindSlot("slot-1"), nullptr);
  EXPECT_EQ(p.FindAnswer("scale-1"), nullptr);
  PoolSnapshot a = APool();
  ASSERT_NE(a.FindSlot("slot-2"), nullptr);
  EXPECT_EQ(a.FindSlot("slot-2")->restarts, 3);
  ASSERT_NE(a.FindAnswer("scale-1"), nullptr);
  EXPECT_EQ(a.FindAnswer("scale-1")->workers, 2);
}

}  // namespace
}  // namespace tx
