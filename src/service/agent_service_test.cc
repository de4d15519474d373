// The agents' side of the contract (docs/agents.md): the usage ledger, limits that pause a
// profile fleet-wide, budgets, and the ends of an attempt that are not the task's fault.

#include "service/agent_service.h"

#include "service/agent_gate.h"
#include "service/service_test_util.h"

namespace tx::service {
namespace {

class AgentServiceTest : public ServiceTest {
 protected:
  AgentServiceTest() : agents_(*store_, clock_, TestOptions()) {}

  Task AddAgentTask(const std::string& title, const std::string& agent, double budget = 0,
                    const std::string& queue = "default") {
    Task t;
    t.title = title;
    t.agent = agent;
    t.queue = queue;
    if (budget > 0) t.metadata["budget_usd"] = budget;
    auto r = tasks_.Add(t);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : Task{};
  }

  Status Spend(const ClaimResult& c, double usd, const std::string& session = "") {
    AttemptUsage u;
    u.token = c.claim.token;
    u.task_id = c.task.id;
    u.worker_id = c.claim.worker_id;
    u.agent = c.task.agent;
    u.session_id = session;
    u.cost_usd = usd;
    u.tokens = {1000, 100, 0, 0};
    return agents_.RecordUsage(u);
  }

  std::optional<ClaimResult> ClaimGated(const Worker& w, const AgentGate& gate) {
    auto r = claims_.ClaimNext(w.id, 0, &gate);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : std::nullopt;
  }

  Worker RegisterFor(const std::string& name, const std::vector<std::string>& queues) {
    Registration r;
    r.name = name;
    r.queues = queues;
    auto w = workers_.Register(r);
    EXPECT_TRUE(w.ok()) << w.error().message();
    return w.ok() ? *w : Worker{};
  }

  // A heartbeat, so that a worker stays fresh across a jump of the fake clock.
  void Beat(const Worker& w) { ASSERT_OK(workers_.Heartbeat(w.id, {})); }

  AgentService agents_;
};

TEST_F(AgentServiceTest, UsageIsRecordedPerAttemptAndFencedByItsClaim) {
  Worker w = Register();
  AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(Spend(c, 0.25, "s-1"));
  clock_.Advance(10s);
  ASSERT_OK(Spend(c, 0.40, "s-1"));  // the last write wins; the start is kept
  ASSERT_OK_AND_ASSIGN(std::vector<AttemptUsage> rows, agents_.TaskUsage(c.task.id));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].cost_usd, 0.40);
  EXPECT_EQ(rows[0].attempt, 1);
  EXPECT_EQ(rows[0].queue, "default");
  EXPECT_EQ(rows[0].started_at, c.claim.claimed_at);
  EXPECT_EQ(rows[0].updated_at, clock_.NowMs());
  AttemptUsage wrong;
  wrong.token = c.claim.token;
  wrong.task_id = "task-zzzzzzzz";
  EXPECT_ERROR_CODE(agents_.RecordUsage(wrong), ErrorCode::kConflict);
  wrong.token = 999;
  EXPECT_ERROR_CODE(agents_.RecordUsage(wrong), ErrorCode::kNotFound);
  AttemptUsage foreign;
  foreign.token = c.claim.token;
  foreign.task_id = c.task.id;
  foreign.worker_id = "worker-someone";
  EXPECT_ERROR_CODE(agents_.RecordUsage(foreign), ErrorCode::kConflict);
}

TEST_F(AgentServiceTest, ALimitIsNotCountedAndRequeuesTheTaskAtItsReset) {
  Worker w = Register();
  Task t = AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  Millis reset = clock_.NowMs() + 3'600'000;
  LimitReport limit{"claude", "", {}, reset, "You've hit your limit · resets 3pm"};
  ASSERT_OK_AND_ASSIGN(Task after, agents_.EndLimited(t.id, c.claim.token, limit));
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 0);  // not counted against max_attempts
  EXPECT_EQ(after.run_after, reset);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kRateLimited);
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].until, reset);
  EXPECT_EQ(limits[0].task_id, t.id);
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "agent.limited"), 1);
  // The worker is free again, and the gate keeps the profile's tasks from every worker.
  EXPECT_EQ(GetWorker(w.id).status, WorkerStatus::kIdle);
}

TEST_F(AgentServiceTest, WithoutAResetALimitBacksOffFiveMinutesDoublingToAnHour) {
  Worker w = Register();
  std::vector<Millis> waits;
  for (int i = 0; i < 6; ++i) {
    Beat(w);
    std::string title = "t";
    title += std::to_string(i);
    AddAgentTask(title, "codex");
    ClaimResult c = ClaimNextFor(w);
    ASSERT_OK(agents_.EndLimited(c.task.id, c.claim.token, {"codex", "", {}, 0, "limit"}));
    ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
    waits.push_back(limits[0].until - clock_.NowMs());
    clock_.Set(limits[0].until);  // the next one comes as this one ends: limits in a row
    ASSERT_OK(tasks_.Cancel(c.task.id, ""));
  }
  EXPECT_EQ(waits,
            (std::vector<Millis>{300'000, 600'000, 1'200'000, 2'400'000, 3'600'000, 3'600'000}));
  // After a quiet hour the backoff starts over.
  clock_.Advance(2h);
  Beat(w);
  AddAgentTask("later", "codex");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(agents_.EndLimited(c.task.id, c.claim.token, {"codex", "", {}, 0, "limit"}));
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  EXPECT_EQ(limits[0].until - clock_.NowMs(), 300'000);
}

// Ten slots on one key all meet the same limit within seconds: one episode, not ten strikes.
TEST_F(AgentServiceTest, ReportsOfALimitThatIsStillOnAreOneEpisodeAndDoNotEscalate) {
  Worker w = Register();
  for (int i = 0; i < 6; ++i) AddAgentTask(std::string("t").append(std::to_string(i)), "codex");
  for (int i = 0; i < 6; ++i) {
    ClaimResult c = ClaimNextFor(w);
    ASSERT_OK(agents_.EndLimited(c.task.id, c.claim.token, {"codex", "", {}, 0, "limit"}));
    clock_.Advance(2s);  // the next slot's report, while the limit is on
    Beat(w);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].strikes, 1);
  EXPECT_EQ(limits[0].until - limits[0].since, 300'000);  // five minutes from the first report
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "agent.limited"), 1);
}

TEST_F(AgentServiceTest, AResetPastAWeekIsCappedAndAnOperatorMayLiftALimit) {
  Worker w = Register();
  Task held = AddAgentTask("held", "claude");
  Task other = AddAgentTask("other", "codex");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_EQ(c.task.id, held.id);
  Millis far = clock_.NowMs() + 400LL * 24 * 3'600'000;  // "try again in 400 days"
  ASSERT_OK(agents_.EndLimited(c.task.id, c.claim.token, {"claude", "", {}, far, "x"}));
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  EXPECT_EQ(limits[0].until, clock_.NowMs() + kMaxLimitMs);
  EXPECT_EQ(Get(held.id).run_after, limits[0].until);

  EXPECT_ERROR_CODE(agents_.Lift("codex", std::nullopt), ErrorCode::kNotFound);
  Millis other_run_after = Get(other.id).run_after;
  clock_.Advance(1s);
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> lifted, agents_.Lift("claude", std::nullopt));
  ASSERT_EQ(lifted.size(), 1u);
  ASSERT_OK_AND_ASSIGN(limits, agents_.Limits());
  EXPECT_FALSE(IsActive(limits[0], clock_.NowMs()));
  EXPECT_EQ(limits[0].strikes, 0);
  EXPECT_EQ(Get(held.id).run_after, clock_.NowMs());    // it may run now
  EXPECT_EQ(Get(other.id).run_after, other_run_after);  // another profile's: untouched
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "agent.resumed"), 1);
  EXPECT_ERROR_CODE(agents_.Lift("claude", std::nullopt), ErrorCode::kNotFound);
}

TEST_F(AgentServiceTest, AnotherFreeAccountTakesTheTaskAtOnce) {
  Worker w = Register();
  Task t = AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  LimitReport limit{"claude", "work", {"work", "home"}, clock_.NowMs() + 3'600'000, "limit"};
  ASSERT_OK_AND_ASSIGN(Task after, agents_.EndLimited(t.id, c.claim.token, limit));
  EXPECT_EQ(after.run_after, clock_.NowMs());
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  EXPECT_EQ(FreeAccount("claude", {"work", "home"}, limits, clock_.NowMs()), "home");
  EXPECT_EQ(FreeAccount("claude", {"work"}, limits, clock_.NowMs()), std::nullopt);
}

TEST_F(AgentServiceTest, ALaterLimitIsKeptAndAnnouncedOnce) {
  Worker w1 = Register("w1");
  Worker w2 = Register("w2");
  AddAgentTask("a", "claude");
  AddAgentTask("b", "claude");
  ClaimResult a = ClaimNextFor(w1);
  ClaimResult b = ClaimNextFor(w2);
  Millis late = clock_.NowMs() + 7'200'000;
  ASSERT_OK(agents_.EndLimited(a.task.id, a.claim.token, {"claude", "", {}, late, "x"}));
  ASSERT_OK(agents_.EndLimited(b.task.id, b.claim.token,
                               {"claude", "", {}, clock_.NowMs() + 60'000, "y"}));
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> limits, agents_.Limits());
  EXPECT_EQ(limits[0].until, late);
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "agent.limited"), 1);
  EXPECT_EQ(Get(b.task.id).run_after, late);
}

TEST_F(AgentServiceTest, AnEndedLimitIsAnnouncedResumedOnce) {
  Worker w = Register();
  AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(agents_.EndLimited(c.task.id, c.claim.token,
                               {"claude", "", {}, clock_.NowMs() + 60'000, "x"}));
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> none, agents_.ResumeExpired());
  EXPECT_TRUE(none.empty());
  clock_.Advance(61s);
  Beat(w);
  ASSERT_OK_AND_ASSIGN(std::vector<AgentLimit> resumed, agents_.ResumeExpired());
  ASSERT_EQ(resumed.size(), 1u);
  ASSERT_OK_AND_ASSIGN(resumed, agents_.ResumeExpired());
  EXPECT_TRUE(resumed.empty());
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "agent.resumed"), 1);
  // And the task runs again.
  EXPECT_EQ(ClaimNextFor(w).task.id, c.task.id);
}

TEST_F(AgentServiceTest, TheGateBlocksLimitedUnavailableAndOverBudgetAgents) {
  GateInputs in;
  in.now = 1000;
  in.profiles = {{"claude", {"work", "home"}}, {"codex", {}}, {"aider", {}}};
  in.default_profile = "claude";
  in.limits = {{"claude", "work", 5000, 0, "", "", 1, false},
               {"codex", "", 3000, 0, "", "", 1, false},
               {"aider", "", 500, 0, "", "", 1, false}};  // over
  Gate g = ComputeGate(in);
  EXPECT_EQ(g.blocked_agents, std::vector<std::string>{"codex"});  // claude has "home" free
  EXPECT_EQ(g.next_change, 3000);
  in.limits.push_back({"claude", "home", 4000, 0, "", "", 1, false});
  g = ComputeGate(in);
  // claude on both accounts, so tasks naming no agent (the default is claude) wait too.
  EXPECT_EQ(g.blocked_agents, (std::vector<std::string>{"", "claude", "codex"}));
  EXPECT_EQ(g.next_change, 3000);
  in.limits.clear();
  in.unavailable = {"aider"};
  in.budget_queues = {"nightly"};
  g = ComputeGate(in);
  EXPECT_EQ(g.blocked_agents, std::vector<std::string>{"aider"});
  EXPECT_EQ(g.blocked_agent_queues, std::vector<std::string>{"nightly"});
  in.daily_budget_reached = true;
  EXPECT_EQ(ComputeGate(in).blocked_agents, std::vector<std::string>{"*"});
  // A limit of a profile this worker does not know still keeps its tasks from it.
  GateInputs stranger;
  stranger.now = 1000;
  stranger.limits = {{"gemini", "", 9000, 0, "", "", 1, false}};
  EXPECT_EQ(ComputeGate(stranger).blocked_agents, std::vector<std::string>{"gemini"});
}

TEST_F(AgentServiceTest, AClaimThroughTheGateTakesTheNextTaskItMayRun) {
  Worker w = Register();
  AddAgentTask("limited", "claude");
  Task command;
  command.title = "a command";
  command.command = {"make"};
  ASSERT_OK(tasks_.Add(command));
  AgentGate gate{{"claude"}, {}};
  std::optional<ClaimResult> c = ClaimGated(w, gate);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->task.title, "a command");
  ASSERT_OK(claims_.Report(c->task.id, c->claim.token, Outcome::kDone, ""));
  EXPECT_FALSE(ClaimGated(w, gate).has_value());
  EXPECT_TRUE(ClaimGated(w, AgentGate{}).has_value());
}

TEST_F(AgentServiceTest, ATaskWhoseAttemptsSpentItsBudgetFailsForGoodWithTheReasonBudget) {
  Worker w = Register();
  Task t = AddAgentTask("costly", "claude", 1.0);
  ClaimResult first = ClaimNextFor(w);
  ASSERT_OK(Spend(first, 0.6));
  ASSERT_OK_AND_ASSIGN(Task after, claims_.Fail(t.id, first.claim.token, EndReason::kFailed, "x"));
  EXPECT_EQ(after.status, TaskStatus::kReady);  // under budget: retried
  clock_.Advance(2s);                           // the retry's backoff
  ClaimResult second = ClaimNextFor(w);
  ASSERT_OK(Spend(second, 0.5));
  ASSERT_OK_AND_ASSIGN(after, claims_.Fail(t.id, second.claim.token, EndReason::kFailed, "y"));
  EXPECT_EQ(after.status, TaskStatus::kFailed);  // attempts remained, but the budget is spent
  EXPECT_NE(after.error.find("budget"), std::string::npos) << after.error;
  auto events = events_.Since(0).value();
  bool budget = false;
  for (const auto& e : events) {
    budget = budget || (e.type == "task.failed" && e.data.value("reason", "") == "budget");
  }
  EXPECT_TRUE(budget);
  // A retry would fail again at once: refused, until the budget is raised.
  EXPECT_ERROR_CODE(tasks_.Retry(t.id, "", false), ErrorCode::kConflict);
  TaskPatch raise;
  raise.metadata_merge = nlohmann::json{{"budget_usd", 5.0}};
  ASSERT_OK(tasks_.Update(t.id, raise));
  ASSERT_OK_AND_ASSIGN(Task retried, tasks_.Retry(t.id, "", false));
  EXPECT_EQ(retried.status, TaskStatus::kReady);
}

TEST_F(AgentServiceTest, NoAttemptStartsOnceTheBudgetIsSpent) {
  Worker w = Register();
  Task t = AddAgentTask("costly", "claude", 1.0);
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(Spend(c, 1.2));
  // Released uncounted (a shutdown): nothing spends more, the task fails for its budget.
  ASSERT_OK_AND_ASSIGN(Task after, claims_.Release(t.id, c.claim.token, EndReason::kShutdown));
  EXPECT_EQ(after.status, TaskStatus::kFailed);
  // A retry by hand is refused; a ready task whose budget was lowered under what it spent fails
  // at the pick, not in an agent.
  EXPECT_ERROR_CODE(tasks_.Retry(t.id), ErrorCode::kConflict);
  Task lowered = AddAgentTask("lowered", "claude", 1.0);
  ClaimResult l = ClaimNextFor(w);
  ASSERT_OK(Spend(l, 0.6));
  ASSERT_OK_AND_ASSIGN(Task waiting,
                       claims_.Report(lowered.id, l.claim.token, Outcome::kFail, "try again"));
  ASSERT_EQ(waiting.status, TaskStatus::kReady);
  TaskPatch lower;
  lower.metadata_merge = nlohmann::json{{"budget_usd", 0.5}};
  ASSERT_OK(tasks_.Update(lowered.id, lower));
  clock_.Advance(std::chrono::seconds(10));  // past its backoff
  AddAgentTask("next", "claude");
  ClaimResult next = ClaimNextFor(w);
  EXPECT_EQ(next.task.title, "next");
  EXPECT_EQ(Get(lowered.id).status, TaskStatus::kFailed);
  EXPECT_ERROR_CODE(claims_.ClaimTask(lowered.id, w.id), ErrorCode::kConflict);
}

TEST_F(AgentServiceTest, AnAgentStoppedOverBudgetFailsItsTask) {
  Worker w = Register();
  Task t = AddAgentTask("costly", "claude", 1.0);
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(Spend(c, 0.4));  // the estimate passed the budget before the ledger
  ASSERT_OK_AND_ASSIGN(Task after, agents_.EndOverBudget(t.id, c.claim.token, "estimated $1.02"));
  EXPECT_EQ(after.status, TaskStatus::kFailed);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kOverBudget);
}

TEST_F(AgentServiceTest, AMissingProgramIsNotCountedAndMarksTheWorker) {
  Worker w = Register();
  Task t = AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK_AND_ASSIGN(
      Task after, agents_.EndUnavailable(t.id, c.claim.token, EndReason::kSpawnFailed, "claude",
                                         "spawn 'claude': No such file or directory"));
  EXPECT_EQ(after.status, TaskStatus::kReady);
  EXPECT_EQ(after.attempt, 0);
  EXPECT_EQ(Attempts(t.id)[0].end_reason, EndReason::kSpawnFailed);
  Worker now = GetWorker(w.id);
  EXPECT_EQ(now.metadata["unavailable_agents"]["claude"],
            "spawn 'claude': No such file or directory");
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "worker.agent_unavailable"), 1);
  EXPECT_ERROR_CODE(agents_.EndUnavailable(t.id, 1, EndReason::kFailed, "claude", ""),
                    ErrorCode::kInvalidArgument);
}

TEST_F(AgentServiceTest, ADailyBudgetIsReachedAndAnnouncedOnceADay) {
  Worker w = RegisterFor("w", {"nightly"});
  AddAgentTask("a", "claude", 0, "nightly");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(Spend(c, 3.0));
  Budgets budgets;
  budgets.daily_usd = 5.0;
  budgets.queue_daily_usd["nightly"] = 2.0;
  ASSERT_OK_AND_ASSIGN(BudgetState st, agents_.CheckBudgets(budgets));
  EXPECT_FALSE(st.reached);
  EXPECT_EQ(st.reached_queues, std::vector<std::string>{"nightly"});
  EXPECT_DOUBLE_EQ(st.spent_usd, 3.0);
  EXPECT_EQ(st.next_day_at, NextUtcDay(clock_.NowMs()));
  ASSERT_OK(agents_.CheckBudgets(budgets));
  budgets.daily_usd = 2.5;
  ASSERT_OK_AND_ASSIGN(st, agents_.CheckBudgets(budgets));
  EXPECT_TRUE(st.reached);
  std::vector<std::string> types = EventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "budget.reached"),
            2);  // the queue's, the fleet's
  // The next UTC day starts afresh.
  clock_.Set(st.next_day_at);
  ASSERT_OK_AND_ASSIGN(st, agents_.CheckBudgets(budgets));
  EXPECT_FALSE(st.reached);
  EXPECT_DOUBLE_EQ(st.spent_usd, 0);
}

TEST_F(AgentServiceTest, TheLedgerIsSummedByTaskQueueAgentAndDay) {
  Worker w = RegisterFor("w", {"q1", "q2"});
  AddAgentTask("a", "claude", 0, "q1");
  AddAgentTask("b", "codex", 0, "q2");
  ClaimResult a = ClaimNextFor(w);
  ASSERT_OK(Spend(a, 1.0));
  ASSERT_OK(claims_.Report(a.task.id, a.claim.token, Outcome::kDone, ""));
  clock_.Advance(24h);
  Beat(w);
  ClaimResult b = ClaimNextFor(w);
  ASSERT_OK(Spend(b, 0.5));
  ASSERT_OK_AND_ASSIGN(std::vector<UsageGroup> by_agent, agents_.Summarize("agent", 0));
  ASSERT_EQ(by_agent.size(), 2u);
  EXPECT_EQ(by_agent[0].key, "claude");  // costliest first
  EXPECT_DOUBLE_EQ(by_agent[0].total.cost_usd, 1.0);
  ASSERT_OK_AND_ASSIGN(std::vector<UsageGroup> by_day, agents_.Summarize("day", 0));
  ASSERT_EQ(by_day.size(), 2u);
  EXPECT_LT(by_day[0].key, by_day[1].key);  // days in order
  ASSERT_OK_AND_ASSIGN(std::vector<UsageGroup> by_task, agents_.Summarize("task", 0));
  EXPECT_EQ(by_task[0].title, "a");
  ASSERT_OK_AND_ASSIGN(std::vector<UsageGroup> recent,
                       agents_.Summarize("queue", clock_.NowMs() - 3'600'000));
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].key, "q2");
  EXPECT_ERROR_CODE(agents_.Summarize("week", 0), ErrorCode::kInvalidArgument);
}

TEST_F(AgentServiceTest, RetryAndChangesLeaveTheNoteForTheResumedSession) {
  Worker w = Register();
  Task t = AddAgentTask("a", "claude");
  ClaimResult c = ClaimNextFor(w);
  ASSERT_OK(claims_.Report(t.id, c.claim.token, Outcome::kFail, "tests red"));
  ASSERT_OK(tasks_.Cancel(t.id, ""));
  ASSERT_OK_AND_ASSIGN(Task retried, tasks_.Retry(t.id, "use the fixture", false));
  EXPECT_EQ(retried.metadata["next_note"]["text"], "use the fixture");
  EXPECT_EQ(retried.metadata["next_note"]["after_attempt"], 1);
  EXPECT_FALSE(retried.metadata.contains("fresh_after_attempt"));
  ASSERT_OK(tasks_.Cancel(t.id, ""));
  ASSERT_OK_AND_ASSIGN(retried, tasks_.Retry(t.id, "", true));
  EXPECT_EQ(retried.metadata["fresh_after_attempt"], 1);
}

}  // namespace
}  // namespace tx::service
