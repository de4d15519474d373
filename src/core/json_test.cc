#include "core/json.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

Task EveryFieldSet() {
  Task t;
  t.id = "task-abcdefgh";
  t.title = "Fix it";
  t.description = "d";
  t.instructions = "i";
  t.deliverables = "x";
  t.steps = {"one", "two"};
  t.priority = -3;
  t.queue = "gpu";
  t.requires_caps = {"cuda"};
  t.after = {"task-00000000"};
  t.owner = "slot-2";
  t.workdir = "/repo";
  t.command = {"sh", "-c", "true"};
  t.agent = "codex";
  t.timeout_ms = 90 * 60'000 + 1'500;
  t.max_attempts = 7;
  t.review = true;
  t.repo = "/repo";
  t.base_branch = "main";
  t.metadata = {{"limits", {{"memory_mb", 512}}}};
  t.result = "r";
  t.error = "e";
  t.status = TaskStatus::kRunning;
  t.attempt = 2;
  t.run_after = 1'795'567'504'981;
  t.created_at = 1'795'567'500'000;
  t.updated_at = 1'795'567'504'982;
  t.started_at = 1'795'567'504'983;
  return t;
}

Claim EndedClaim() {
  Claim c;
  c.token = 42;
  c.task_id = "task-abcdefgh";
  c.worker_id = "worker-12345678";
  c.attempt = 3;
  c.claimed_at = 1'795'567'504'981;
  c.lease_ms = 30 * 60'000;
  c.lease_expires_at = c.claimed_at + c.lease_ms;
  c.renewed_count = 1;
  c.status = ClaimStatus::kCompleted;
  c.ended_at = c.claimed_at + 10;
  c.end_reason = EndReason::kExited;
  c.exit_code = 0;
  return c;
}

TEST(Json, ATaskReadBackIsTheTaskThatWasWritten) {
  Task t = EveryFieldSet();
  auto back = TaskFromJson(ToJson(t, {}));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(ToJson(*back, {}), ToJson(t, {}));
  EXPECT_EQ(back->timeout_ms, t.timeout_ms);
  EXPECT_EQ(back->finished_at, 0);
}

TEST(Json, AClaimAndAWorkerReadBackAsWritten) {
  Claim c = EndedClaim();
  auto claim = ClaimFromJson(ToJson(c));
  ASSERT_TRUE(claim.ok()) << claim.error().message();
  EXPECT_EQ(ToJson(*claim), ToJson(c));
  EXPECT_EQ(claim->lease_ms, c.lease_ms);

  Worker w;
  w.id = "worker-12345678";
  w.name = "w";
  w.slot = "slot-1";
  w.hostname = "h";
  w.pid = 99;
  w.capabilities = {"gpu"};
  w.queues = {"a", "b"};
  w.status = WorkerStatus::kPaused;
  w.heartbeat_interval_ms = 1'500;
  w.registered_at = 1'795'567'504'000;
  w.last_heartbeat_at = 1'795'567'504'981;
  w.current_task_id = "task-abcdefgh";
  w.request = WorkerRequest::kStopNow;
  w.metadata = {{"agent_pid", 7}};
  auto worker = WorkerFromJson(ToJson(w, Moment{0}));
  ASSERT_TRUE(worker.ok()) << worker.error().message();
  EXPECT_EQ(ToJson(*worker, Moment{0}), ToJson(w, Moment{0}));
}

// The add's reply is written as text: it must be the object ToJson builds, field for field.
TEST(Json, ATaskWrittenAsTextIsTheObject) {
  Task full = EveryFieldSet();
  Task odd;  // defaults: empty lists, no times; then strings JSON must escape
  odd.title = "quote \" back\\ tab\t new\n caf\xc3\xa9 \x7f";
  odd.command = {"sh", "-c", "echo \"$1\""};
  odd.metadata = {{"nested", {{"list", {1, "two", nullptr, true}}}}, {"u", "\xe2\x82\xac"}};
  Claim running;  // no end, no exit code
  running.token = 7;
  running.status = ClaimStatus::kActive;
  const std::vector<std::vector<Claim>> attempt_lists = {
      {}, {EndedClaim()}, {EndedClaim(), running}};
  for (const Task& t : {full, odd, Task{}}) {
    for (const auto& attempts : attempt_lists) {
      std::string text = ToJsonText(t, attempts);
      nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << text;
      EXPECT_EQ(parsed, ToJson(t, attempts)) << text;
      EXPECT_EQ(text.size(), ToJson(t, attempts).dump().size())
          << "the same text, in another order";
    }
  }
}

TEST(Json, AStoredEventWrittenAsTextIsTheParsedEventsDump) {
  const nlohmann::json odd = {{"title", "quote \" back\\ caf\xc3\xa9 \x7f"},
                              {"nested", {{"list", {1, "two", nullptr, true, 2.5}}}}};
  for (const nlohmann::json& data : {nlohmann::json::object(), odd}) {
    for (const StoredEvent& e : {StoredEvent{7, "task.created", 1'800'000'000'123, "task-abcdefgh",
                                             "worker-abcdefgh", data.dump()},
                                 StoredEvent{8, "reconcile.repaired", 0, "", "", data.dump()}}) {
      Event parsed{e.id, e.type, e.at, e.task_id, e.worker_id, data};
      EXPECT_EQ(ToJsonText(e), ToJson(parsed).dump());
    }
  }
  // Data that is not a JSON object's text reads as {}, as the parsed event's does.
  for (const char* bad : {"", "[1,2]", "{\"a\":", "not json", "{} {}"}) {
    StoredEvent e{9, "x", 5, "", "", bad};
    EXPECT_EQ(ToJsonText(e), ToJson(Event{9, "x", 5, "", "", nlohmann::json::object()}).dump())
        << bad;
  }
}

TEST(Json, AMissingOrMistypedFieldIsRefusedByName) {
  nlohmann::json j = ToJson(Claim{});
  j.erase("token");
  auto r = ClaimFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'token'"), std::string::npos) << r.error().message();
  nlohmann::json w = ToJson(Worker{}, Moment{0});
  w["status"] = "flying";
  EXPECT_FALSE(WorkerFromJson(w).ok());
  EXPECT_FALSE(TaskFromJson(nlohmann::json::array()).ok());
}

TEST(AppendJsonString, WritesWhatTheLibraryWouldWrite) {
  for (const std::string& s : std::vector<std::string>{
           "", "plain title", "quote \" here", "back\\slash", "tab\there", "new\nline",
           std::string("nul\0byte", 8), "caf\xc3\xa9", "\x7f del"}) {
    std::string out = "x";
    AppendJsonString(out, s);
    std::string want = "x";
    want += nlohmann::json(s).dump();
    EXPECT_EQ(out, want) << s;
  }
}

}  // namespace
}  // namespace tx
