// The remote-worker protocol's bodies: each written with the exact keys the worker has always
// sent (the quirks included: an absent exit code is null, a gate, a status and a subtask limit
// only when there is one) and read back by the server's decoder to the same body.

#include "service/worker_wire.h"

#include <gtest/gtest.h>

#include "core/json.h"

namespace tx::service {
namespace {

using nlohmann::json;

// The value of a decode that must succeed.
template <typename T>
T Decoded(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? std::move(*r) : T{};
}

constexpr char kTaskId[] = "task-1";
constexpr std::int64_t kToken = 7;

FencedBody Fenced(EndReason reason = EndReason::kNone) {
  FencedBody b;
  b.task_id = kTaskId;
  b.token = kToken;
  b.reason = reason;
  return b;
}

TEST(WorkerWireTest, ARegistrationWritesEveryKeyAndReadsBack) {
  Registration r;
  r.name = "w1";
  r.slot = "slot-2";
  r.pool = "host:/srv/.tx";
  r.hostname = "host";
  r.pid = 42;
  r.capabilities = {"gpu"};
  r.queues = {"default", "fast"};
  r.heartbeat_interval_ms = 30'000;
  r.busy_heartbeat_interval_ms = 15'000;
  r.metadata = {{"version", "1.2"}};
  r.replace_fresh = false;  // the server's to set: not on the wire
  json j = EncodeRegistration(r);
  EXPECT_EQ(j.dump(),
            R"({"busy_heartbeat_interval_ms":15000,"capabilities":["gpu"],)"
            R"("heartbeat_interval_ms":30000,"hostname":"host","metadata":{"version":"1.2"},)"
            R"("name":"w1","pid":42,"pool":"host:/srv/.tx","queues":["default","fast"],)"
            R"("slot":"slot-2"})");
  Registration back = Decoded(DecodeRegistration(j));
  EXPECT_EQ(back.name, r.name);
  EXPECT_EQ(back.slot, r.slot);
  EXPECT_EQ(back.pool, r.pool);
  EXPECT_EQ(back.hostname, r.hostname);
  EXPECT_EQ(back.pid, r.pid);
  EXPECT_EQ(back.capabilities, r.capabilities);
  EXPECT_EQ(back.queues, r.queues);
  EXPECT_EQ(back.heartbeat_interval_ms, r.heartbeat_interval_ms);
  EXPECT_EQ(back.busy_heartbeat_interval_ms, r.busy_heartbeat_interval_ms);
  EXPECT_EQ(back.metadata, r.metadata);
  EXPECT_TRUE(back.replace_fresh);
  EXPECT_EQ(EncodeRegistration(back), j);
}

TEST(WorkerWireTest, ARegistrationThatSetsTheCredentialOrNoQueueIsRefused) {
  Registration r;
  r.metadata = {{kCredentialKey, "00"}};
  EXPECT_EQ(DecodeRegistration(EncodeRegistration(r)).error().code(), ErrorCode::kInvalidArgument);
  r.metadata = json::object();
  r.queues.clear();
  EXPECT_EQ(DecodeRegistration(EncodeRegistration(r)).error().message(), "field 'queues' is empty");
}

TEST(WorkerWireTest, AHeartbeatWritesItsStatusOnlyWhenSet) {
  HeartbeatBody b;
  b.worker_id = "worker-1";
  EXPECT_EQ(EncodeHeartbeat(b).dump(),
            R"({"clear_request":false,"metadata":{},"worker_id":"worker-1"})");
  HeartbeatBody back = Decoded(DecodeHeartbeat(EncodeHeartbeat(b)));
  EXPECT_EQ(back.worker_id, "worker-1");
  EXPECT_FALSE(back.update.status);
  EXPECT_EQ(back.update.metadata, json::object());

  b.update.status = WorkerStatus::kBusy;
  b.update.metadata = {{"cpu", 3}};
  b.update.clear_request = true;
  json j = EncodeHeartbeat(b);
  EXPECT_EQ(
      j.dump(),
      R"({"clear_request":true,"metadata":{"cpu":3},"status":"busy","worker_id":"worker-1"})");
  back = Decoded(DecodeHeartbeat(j));
  EXPECT_EQ(back.update.status, WorkerStatus::kBusy);
  EXPECT_EQ(back.update.metadata, b.update.metadata);
  EXPECT_TRUE(back.update.clear_request);
  EXPECT_EQ(EncodeHeartbeat(back), j);
}

TEST(WorkerWireTest, ADeregistrationRoundTrips) {
  DeregisterBody b;
  b.worker_id = "worker-1";
  json j = EncodeDeregister(b);
  EXPECT_EQ(j.dump(), R"({"reason":"graceful-shutdown","worker_id":"worker-1"})");
  DeregisterBody back = Decoded(DecodeDeregister(j));
  EXPECT_EQ(back.worker_id, b.worker_id);
  EXPECT_EQ(back.reason, b.reason);
}

TEST(WorkerWireTest, AClaimWritesItsGateOnlyWhenItBlocksSomething) {
  ClaimBody b;
  b.worker_id = "worker-1";
  b.lease_ms = 1'800'000;
  b.wait_ms = 30'000;
  EXPECT_EQ(EncodeClaim(b).dump(),
            R"({"lease_ms":1800000,"wait_ms":30000,"worker_id":"worker-1"})");
  ClaimBody back = Decoded(DecodeClaim(EncodeClaim(b)));
  EXPECT_EQ(back.worker_id, b.worker_id);
  EXPECT_EQ(back.lease_ms, b.lease_ms);
  EXPECT_EQ(back.wait_ms, b.wait_ms);
  EXPECT_EQ(back.gate, AgentGate{});

  b.gate.blocked_agents = {"codex"};
  json j = EncodeClaim(b);
  EXPECT_EQ(j.dump(), R"({"gate":{"agents":["codex"],"queues":[]},"lease_ms":1800000,)"
                      R"("wait_ms":30000,"worker_id":"worker-1"})");
  EXPECT_EQ(Decoded(DecodeClaim(j)).gate, b.gate);
  b.gate = {{}, {"fast"}};
  EXPECT_EQ(Decoded(DecodeClaim(EncodeClaim(b))).gate, b.gate);
}

TEST(WorkerWireTest, EachFencedCallWritesItsOwnKeys) {
  EXPECT_EQ(EncodeFenced(FencedCall::kRenew, Fenced()).dump(), R"({"task_id":"task-1","token":7})");
  EXPECT_EQ(EncodeFenced(FencedCall::kRelease, Fenced(EndReason::kShutdown)).dump(),
            R"({"reason":"shutdown","task_id":"task-1","token":7})");
  EXPECT_EQ(EncodeFenced(FencedCall::kGiveUp, Fenced(EndReason::kLeaseLost)).dump(),
            R"({"reason":"lease_lost","task_id":"task-1","token":7})");

  FencedBody done = Fenced();
  done.outcome = Outcome::kDone;
  done.text = "all green";
  EXPECT_EQ(EncodeFenced(FencedCall::kReport, done).dump(),
            R"({"exit_code":null,"outcome":"done","task_id":"task-1","text":"all green",)"
            R"("token":7})");
  FencedBody review = done;
  review.outcome = Outcome::kReview;
  review.exit_code = 0;
  review.branch = json{{"commits", 2}};
  EXPECT_EQ(EncodeFenced(FencedCall::kReport, review).dump(),
            R"({"branch":{"commits":2},"exit_code":0,"outcome":"review","task_id":"task-1",)"
            R"("text":"all green","token":7})");

  FencedBody failed = Fenced(EndReason::kTimedOut);
  failed.text = "took too long";
  failed.exit_code = 124;
  EXPECT_EQ(EncodeFenced(FencedCall::kFail, failed).dump(),
            R"({"error":"took too long","exit_code":124,"reason":"timed_out","task_id":"task-1",)"
            R"("token":7})");
  failed.exit_code.reset();
  EXPECT_EQ(EncodeFenced(FencedCall::kFail, failed)["exit_code"], json());

  FencedBody ask = Fenced();
  ask.text = "which port?";
  EXPECT_EQ(EncodeFenced(FencedCall::kAsk, ask).dump(),
            R"({"question":"which port?","task_id":"task-1","token":7})");
}

TEST(WorkerWireTest, EachFencedCallReadsBackWhatItWrote) {
  auto round_trip = [](FencedCall call, const FencedBody& b) {
    FencedBody back = Decoded(DecodeFenced(call, EncodeFenced(call, b)));
    EXPECT_EQ(back.task_id, b.task_id);
    EXPECT_EQ(back.token, b.token);
    EXPECT_EQ(EncodeFenced(call, back), EncodeFenced(call, b));
    return back;
  };
  round_trip(FencedCall::kRenew, Fenced());
  EXPECT_EQ(round_trip(FencedCall::kRelease, Fenced(EndReason::kReleased)).reason,
            EndReason::kReleased);
  EXPECT_EQ(round_trip(FencedCall::kGiveUp, Fenced(EndReason::kLeaseLost)).reason,
            EndReason::kLeaseLost);
  for (Outcome o : {Outcome::kDone, Outcome::kReview, Outcome::kFail}) {
    FencedBody report = Fenced();
    report.outcome = o;
    report.text = "text";
    report.exit_code = 3;
    report.branch = json{{"files", 1}};
    FencedBody back = round_trip(FencedCall::kReport, report);
    EXPECT_EQ(back.outcome, o);
    EXPECT_EQ(back.text, "text");
    EXPECT_EQ(back.exit_code, 3);
    EXPECT_EQ(back.branch, report.branch);
  }
  FencedBody failed = Fenced(EndReason::kStalled);
  failed.text = "no output for 10m";
  FencedBody back = round_trip(FencedCall::kFail, failed);
  EXPECT_EQ(back.reason, EndReason::kStalled);
  EXPECT_EQ(back.text, failed.text);
  EXPECT_FALSE(back.exit_code);
  FencedBody ask = Fenced();
  ask.text = "which port?";
  EXPECT_EQ(round_trip(FencedCall::kAsk, ask).text, "which port?");
}

TEST(WorkerWireTest, AnAutoMergeWritesEitherTheMergeOrWhyNot) {
  AutoMergeBody merged;
  merged.task_id = kTaskId;
  merged.token = kToken;
  merged.merge = json{{"sha", "abc"}};
  EXPECT_EQ(EncodeAutoMerge(merged).dump(),
            R"({"merge":{"sha":"abc"},"task_id":"task-1","token":7})");
  AutoMergeBody back = Decoded(DecodeAutoMerge(EncodeAutoMerge(merged)));
  EXPECT_EQ(back.merge, merged.merge);
  EXPECT_EQ(back.why, "");

  AutoMergeBody refused;
  refused.task_id = kTaskId;
  refused.token = kToken;
  refused.why = "conflict in a.txt";
  EXPECT_EQ(EncodeAutoMerge(refused).dump(),
            R"({"task_id":"task-1","token":7,"why":"conflict in a.txt"})");
  back = Decoded(DecodeAutoMerge(EncodeAutoMerge(refused)));
  EXPECT_FALSE(back.merge);
  EXPECT_EQ(back.why, refused.why);
  EXPECT_EQ(back.token, kToken);
}

TEST(WorkerWireTest, AUsageRowTravelsAsItsLedgerJson) {
  AttemptUsage u;
  u.token = kToken;
  u.task_id = kTaskId;
  u.attempt = 2;
  u.agent = "claude";
  u.model = "opus";
  u.cost_usd = 0.25;
  u.turns = 4;
  json j = EncodeUsage(u);
  EXPECT_EQ(j, json({{"usage", ToJson(u)}}));
  EXPECT_EQ(Decoded(DecodeUsage(j)), u);
}

TEST(WorkerWireTest, TheEndsOfAnAttemptNotItsFaultRoundTrip) {
  LimitedBody limited;
  limited.task_id = kTaskId;
  limited.token = kToken;
  limited.limit = {"claude", "a", {"a", "b"}, 1'700'000'000'000, "5-hour limit"};
  json j = EncodeLimited(limited);
  EXPECT_EQ(j.dump(), R"({"account":"a","accounts":["a","b"],"agent":"claude",)"
                      R"("reason":"5-hour limit","reset_at":1700000000000,"task_id":"task-1",)"
                      R"("token":7})");
  LimitedBody l = Decoded(DecodeLimited(j));
  EXPECT_EQ(l.task_id, kTaskId);
  EXPECT_EQ(l.token, kToken);
  EXPECT_EQ(l.limit.profile, "claude");
  EXPECT_EQ(l.limit.account, "a");
  EXPECT_EQ(l.limit.accounts, limited.limit.accounts);
  EXPECT_EQ(l.limit.reset_at, limited.limit.reset_at);
  EXPECT_EQ(l.limit.reason, limited.limit.reason);

  UnavailableBody unavailable{kTaskId, kToken, EndReason::kAgentUnavailable, "codex", "not found"};
  j = EncodeUnavailable(unavailable);
  EXPECT_EQ(j.dump(), R"({"agent":"codex","reason":"agent_unavailable","task_id":"task-1",)"
                      R"("token":7,"why":"not found"})");
  UnavailableBody u = Decoded(DecodeUnavailable(j));
  EXPECT_EQ(u.reason, EndReason::kAgentUnavailable);
  EXPECT_EQ(u.agent, "codex");
  EXPECT_EQ(u.why, "not found");
  EXPECT_EQ(EncodeUnavailable(u), j);

  OverBudgetBody over{kTaskId, kToken, "spent $5.00 of $5.00"};
  j = EncodeOverBudget(over);
  EXPECT_EQ(j.dump(), R"({"task_id":"task-1","token":7,"why":"spent $5.00 of $5.00"})");
  EXPECT_EQ(EncodeOverBudget(Decoded(DecodeOverBudget(j))), j);
}

TEST(WorkerWireTest, TheAgentStateCarriesBudgetsOnlyWhenThereAreAny) {
  EXPECT_EQ(EncodeAgentState(Budgets{}).dump(), "{}");
  EXPECT_FALSE(Decoded(DecodeAgentState(json::object())).any());
  Budgets b;
  b.daily_usd = 20;
  b.queue_daily_usd["fast"] = 5;
  json j = EncodeAgentState(b);
  EXPECT_EQ(j, json({{"budgets", ToJson(b)}}));
  Budgets back = Decoded(DecodeAgentState(j));
  EXPECT_EQ(back.daily_usd, 20);
  EXPECT_EQ(back.queue_daily_usd, b.queue_daily_usd);
}

TEST(WorkerWireTest, ANoteRoundTrips) {
  NoteBody b{kTaskId, kToken, "half way"};
  json j = EncodeNote(b);
  EXPECT_EQ(j.dump(), R"({"task_id":"task-1","text":"half way","token":7})");
  NoteBody back = Decoded(DecodeNote(j));
  EXPECT_EQ(back.task_id, kTaskId);
  EXPECT_EQ(back.token, kToken);
  EXPECT_EQ(back.text, "half way");
}

TEST(WorkerWireTest, ASubtaskWritesItsLimitOnlyWhenSet) {
  SubtaskBody b;
  b.parent_id = kTaskId;
  b.token = kToken;
  b.task.title = "write the docs";
  b.task.queue = "docs";
  b.task.priority = 2;
  json j = EncodeSubtask(b);
  EXPECT_EQ(j, json({{"task_id", kTaskId}, {"token", kToken}, {"task", ToJson(b.task, {})}}));
  SubtaskBody back = Decoded(DecodeSubtask(j));
  EXPECT_EQ(back.parent_id, kTaskId);
  EXPECT_EQ(back.token, kToken);
  EXPECT_EQ(back.task.title, "write the docs");
  EXPECT_EQ(back.task.queue, "docs");
  EXPECT_EQ(back.task.priority, 2);
  EXPECT_FALSE(back.max_subtasks);
  EXPECT_EQ(EncodeSubtask(back), j);

  b.max_subtasks = 3;
  j = EncodeSubtask(b);
  EXPECT_EQ(j["max_subtasks"], 3);
  EXPECT_EQ(Decoded(DecodeSubtask(j)).max_subtasks, 3);
}

TEST(WorkerWireTest, ABatchWritesItsReportsAsReportBodies) {
  BatchBody b;
  b.worker_id = "worker-1";
  b.claim = 3;
  b.finished.push_back({kTaskId, kToken, Outcome::kDone, "ok", std::nullopt});
  b.finished.push_back({"task-2", 8, Outcome::kFail, "boom", 1});
  json j = EncodeBatch(b);
  EXPECT_EQ(j.dump(),
            R"({"claim":3,"finished":[{"exit_code":null,"outcome":"done","task_id":"task-1",)"
            R"("text":"ok","token":7},{"exit_code":1,"outcome":"fail","task_id":"task-2",)"
            R"("text":"boom","token":8}],"lease_ms":0,"worker_id":"worker-1"})");
  BatchBody back = Decoded(DecodeBatch(j));
  EXPECT_EQ(back.worker_id, "worker-1");
  EXPECT_EQ(back.claim, 3);
  ASSERT_EQ(back.finished.size(), 2u);
  EXPECT_EQ(back.finished[1].task_id, "task-2");
  EXPECT_EQ(back.finished[1].outcome, Outcome::kFail);
  EXPECT_EQ(back.finished[1].exit_code, 1);
  EXPECT_EQ(EncodeBatch(back), j);
}

TEST(WorkerWireTest, AClaimReplyCarriesTheClaimAndItsTaskOrNothing) {
  ClaimResult c;
  c.claim.token = kToken;
  c.claim.task_id = kTaskId;
  c.claim.worker_id = "worker-1";
  c.claim.attempt = 1;
  c.task.id = kTaskId;
  c.task.title = "build it";
  c.task.status = TaskStatus::kRunning;
  json j = EncodeClaimReply(c);
  EXPECT_EQ(j, json({{"claim", ToJson(c.claim)}, {"task", ToJson(c.task, {})}}));
  std::optional<ClaimResult> back = Decoded(DecodeClaimReply(j));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->claim.token, kToken);
  EXPECT_EQ(back->claim.worker_id, "worker-1");
  EXPECT_EQ(back->task.title, "build it");
  EXPECT_EQ(EncodeClaimReply(*back), j);
  EXPECT_FALSE(Decoded(DecodeClaimReply(json())));  // a 204
  EXPECT_FALSE(Decoded(DecodeClaimReply({{"server_time", 1}})));
}

TEST(WorkerWireTest, AnAgentStateReplyCarriesABudgetOnlyWhenCounted) {
  AgentStateReply r;
  AgentLimit limit;
  limit.profile = "claude";
  limit.until = 1'700'000'000'000;
  limit.reason = "5-hour limit";
  r.limits.push_back(limit);
  json j = EncodeAgentStateReply(r);
  EXPECT_EQ(j, json({{"limits", json::array({ToJson(limit)})}}));
  AgentStateReply back = Decoded(DecodeAgentStateReply(j));
  EXPECT_EQ(back.limits, r.limits);
  EXPECT_FALSE(back.budget);

  BudgetState spent;
  spent.day = "2026-11-28";
  spent.spent_usd = 3.5;
  r.budget = spent;
  j = EncodeAgentStateReply(r);
  EXPECT_EQ(j["budget"], ToJson(spent));
  back = Decoded(DecodeAgentStateReply(j));
  ASSERT_TRUE(back.budget);
  EXPECT_EQ(back.budget->day, "2026-11-28");
  EXPECT_EQ(back.budget->spent_usd, 3.5);
  EXPECT_EQ(EncodeAgentStateReply(back), j);
}

}  // namespace
}  // namespace tx::service
