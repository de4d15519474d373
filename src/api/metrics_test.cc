#include "api/metrics.h"

#include <gtest/gtest.h>

#include <regex>

namespace tx::api {
namespace {

StoredEvent E(std::int64_t id, std::string type, Millis at, std::string task,
              const nlohmann::json& data = nlohmann::json::object()) {
  StoredEvent e;
  e.id = id;
  e.type = std::move(type);
  e.at = at;
  e.task_id = std::move(task);
  e.data = data.dump();
  return e;
}

// The value of one sample line ("name{labels} value"), or -1 when the line is missing.
double Sample(const std::string& text, const std::string& series) {
  std::string::size_type at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

TEST(MetricsTest, CountersComeFromTheEventsFoldedIn) {
  Metrics m;
  m.Add(E(1, "task.created", 0, "task-a"));
  m.Add(E(2, "task.created", 0, "task-b"));
  m.Add(E(3, "task.claimed", 1'000, "task-a"));
  m.Add(E(4, "task.done", 3'500, "task-a"));  // ran 2.5 s
  m.Add(E(5, "task.claimed", 4'000, "task-b"));
  m.Add(E(6, "worker.crashed", 4'050, "task-b", {{"class", "killed"}}));
  m.Add(E(7, "task.requeued", 4'050, "task-b", {{"reason", "worker_died"}}));
  m.Add(E(8, "task.claimed", 4'100, "task-b"));
  m.Add(E(9, "lease.expired", 9'000, "task-b"));
  m.Add(E(10, "task.requeued", 9'000, "task-b", {{"reason", "lease_expired"}}));
  m.Add(E(11, "reconcile.repaired", 9'000, "",
          {{"dead_workers", 0}, {"expired_leases", 1}, {"orphaned_tasks", 0}}));
  std::string text = m.Render({});

  EXPECT_EQ(Sample(text, "tx_tasks_created_total"), 2);
  EXPECT_EQ(Sample(text, "tx_claims_total"), 3);
  EXPECT_EQ(Sample(text, "tx_lease_expiries_total"), 1);
  EXPECT_EQ(Sample(text, R"(tx_tasks_finished_total{outcome="done"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_recoveries_total{reason="worker_died"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_recoveries_total{reason="lease_expired"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_worker_crashes_total{class="killed"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_reconcile_repairs_total{kind="expired_leases"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_events_total{type="task.claimed"})"), 3);

  // The histogram: 2.5 s falls in le=5 and above, cumulative, with its sum and count.
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_bucket{outcome="done",le="1"})"), 0);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_bucket{outcome="done",le="5"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_bucket{outcome="done",le="+Inf"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_sum{outcome="done"})"), 2.5);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_count{outcome="worker_died"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_task_duration_seconds_sum{outcome="lease_expired"})"), 4.9);
}

TEST(MetricsTest, AnEventWhoseDataIsNoObjectCountsAsUnknown) {
  Metrics m;
  StoredEvent requeued = E(1, "task.requeued", 0, "task-a");
  requeued.data = "{\"reason\":";  // cut short
  m.Add(requeued);
  StoredEvent crashed = E(2, "worker.crashed", 0, "task-a");
  crashed.data = R"(["class","killed"])";
  m.Add(crashed);
  std::string text = m.Render({});
  EXPECT_EQ(Sample(text, R"(tx_recoveries_total{reason="unknown"})"), 1);
  EXPECT_EQ(Sample(text, R"(tx_worker_crashes_total{class="unknown"})"), 1);
}

TEST(MetricsTest, GaugesShowEveryStatusOfEveryQueueSoSeriesDoNotVanish) {
  Metrics m;
  MetricsSnapshot s;
  s.tasks = {{TaskStatus::kReady, "default", 3}, {TaskStatus::kDone, "gpu \"big\"", 2}};
  s.workers[WorkerStatus::kIdle] = 4;
  s.orchestrators_up = 1;
  s.reconciler.last_report = {{"runs", 7}};
  s.reconciler.last_reconcile_at = 1'500;
  s.last_event_id = 42;
  std::string text = m.Render(s);
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="default",status="ready"})"), 3);
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="default",status="running"})"), 0);
  EXPECT_EQ(Sample(text, R"(tx_tasks{queue="gpu \"big\"",status="done"})"), 2);  // escaped
  EXPECT_EQ(Sample(text, R"(tx_workers{status="idle"})"), 4);
  EXPECT_EQ(Sample(text, R"(tx_workers{status="dead"})"), 0);
  EXPECT_EQ(Sample(text, "tx_orchestrator_up"), 1);
  EXPECT_EQ(Sample(text, "tx_reconcile_runs_total"), 7);
  EXPECT_EQ(Sample(text, "tx_reconcile_last_run_timestamp_seconds"), 1.5);
  EXPECT_EQ(Sample(text, "tx_events_last_id"), 42);
}

TEST(MetricsTest, TheAgentsCostAndTokensAreCountedByProfile) {
  Metrics m;
  MetricsSnapshot s;
  UsageTotal claude;
  claude.cost_usd = 1.25;
  claude.tokens = {1000, 200, 300, 40};
  s.usage_by_agent = {{"claude", claude}, {"codex", UsageTotal{}}};
  std::string text = m.Render(s);
  EXPECT_EQ(Sample(text, R"(tx_agent_cost_usd_total{agent="claude"})"), 1.25);
  EXPECT_EQ(Sample(text, R"(tx_agent_cost_usd_total{agent="codex"})"), 0);
  EXPECT_EQ(Sample(text, R"(tx_agent_tokens_total{agent="claude",kind="input"})"), 1000);
  EXPECT_EQ(Sample(text, R"(tx_agent_tokens_total{agent="claude",kind="cache_write"})"), 40);
}

// Every line is a comment or a sample the Prometheus text format accepts.
TEST(MetricsTest, TheTextIsWellFormed) {
  Metrics m;
  m.Add(E(1, "task.claimed", 0, "t"));
  m.Add(E(2, "task.failed", 10, "t", {{"error", "x"}}));
  MetricsSnapshot s;
  s.tasks = {{TaskStatus::kFailed, "default", 1}};
  std::string text = m.Render(s);
  std::regex sample(R"([a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)+\})? -?[0-9.e+]+)");
  std::regex comment(R"(# (HELP|TYPE) [a-z_]+ .+)");
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    EXPECT_TRUE(std::regex_match(line, sample) || std::regex_match(line, comment)) << line;
  }
  EXPECT_GT(n, 30);
}

}  // namespace
}  // namespace tx::api
