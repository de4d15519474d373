#include "orchestrator/config.h"

#include <gtest/gtest.h>

namespace tx::orchestrator {
namespace {

TEST(OrchestratorConfigTest, TheOrchestratorSectionSetsThePoolAndPerSlotOverrides) {
  OrchestratorConfig c;
  Status s = ApplyOrchestratorToml(R"(
[worker]
heartbeat_interval = "5s"   # the worker's, not checked here

[orchestrator]
workers = 4
max_workers = 6
reconcile_interval = "10s"
shutdown_timeout = "2m"
max_restarts = 3
restart_window = "30s"
max_backoff = "5s"
capacity_timeout = "1s"
max_queue_depth = 100
heartbeat_file = "hb.json"

[orchestrator.slots.slot-2]
agent = "codex"
capabilities = ["gpu", "linux"]
queues = ["fast"]
)",
                                   "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(c.workers, 4);
  EXPECT_EQ(c.policy.max_workers, 6);
  EXPECT_EQ(c.reconcile_interval_ms, 10'000);
  EXPECT_EQ(c.shutdown_timeout_ms, 120'000);
  EXPECT_EQ(c.policy.max_restarts, 3);
  EXPECT_EQ(c.policy.restart_window_ms, 30'000);
  EXPECT_EQ(c.policy.backoff_max_ms, 5'000);
  EXPECT_EQ(c.policy.capacity_timeout_ms, 1'000);
  EXPECT_EQ(c.max_queue_depth, 100);
  EXPECT_EQ(c.heartbeat_file, "hb.json");
  std::vector<std::string> want = {"--agent",   "codex",    "--capabilities",
                                   "gpu,linux", "--queues", "fast"};
  EXPECT_EQ(c.slot_args["slot-2"], want);
}

TEST(OrchestratorConfigTest, UnknownKeysAndWrongTypesAreRefusedByNameAndChangeNothing) {
  OrchestratorConfig c;
  for (const char* bad :
       {"[orchestrator]\nworkerz = 3\n", "[orchestrator]\nworkers = \"3\"\n",
        "[orchestrator]\nworkers = -1\n", "[orchestrator]\nreconcile_interval = \"soon\"\n",
        "[orchestrator.slots.slot-1]\nagnet = \"x\"\n",
        "[orchestrator]\nworkers = 3\nmax_workers = 0\n"}) {
    Status s = ApplyOrchestratorToml(bad, "config.toml", c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find("config.toml: 'orchestrator."), std::string::npos)
        << s.error().message();
    EXPECT_EQ(c.workers, 2) << "applied whole or not at all";
  }
  Status syntax = ApplyOrchestratorToml("[orchestrator\n", "config.toml", c);
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().message().find("config.toml:1:"), std::string::npos);
}

TEST(OrchestratorConfigTest, TheLogsFormatAndCapAreKeysAndACapMayHaveDecimals_Issue24) {
  OrchestratorConfig c;
  EXPECT_EQ(c.log_format, log::LogFormat::kText);
  EXPECT_EQ(c.log_max_mb, 64);
  ASSERT_TRUE(ApplyOrchestratorToml("[orchestrator]\nlog_format = \"json\"\nlog_max_mb = 0.01\n",
                                    "config.toml", c)
                  .ok());
  EXPECT_EQ(c.log_format, log::LogFormat::kJson);
  EXPECT_EQ(c.log_max_mb, 0.01);
  ASSERT_TRUE(ApplyOrchestratorToml("[orchestrator]\nlog_max_mb = 0\n", "config.toml", c).ok());
  EXPECT_EQ(c.log_max_mb, 0);
  for (const char* bad :
       {"[orchestrator]\nlog_format = \"xml\"\n", "[orchestrator]\nlog_max_mb = -1\n",
        "[orchestrator]\nlog_max_mb = \"64\"\n"}) {
    Status s = ApplyOrchestratorToml(bad, "config.toml", c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message().find("orchestrator.log_"), std::string::npos)
        << s.error().message();
  }
  std::vector<std::string> want = {"--log-file",   c.store_dir + "/logs/workers/slot-3.log",
                                   "--log-max-mb", "0",
                                   "--log-format", "json"};
  EXPECT_EQ(WorkerLogArgs(c, "slot-3"), want);
}

TEST(OrchestratorConfigTest, AReloadAppliesWhatMayChangeAtRuntimeAndNamesIt_Issue24) {
  OrchestratorConfig running;
  running.db_path = "/srv/.tx/tx.db";
  running.worker_args = {"--lease", "5m"};
  OrchestratorConfig fresh = running;
  fresh.db_path = "/elsewhere/tx.db";  // not a setting of the file: never taken
  fresh.worker_args = {};
  ConfigReload none = ReloadConfig(running, fresh);
  EXPECT_TRUE(none.applied.empty());
  EXPECT_TRUE(none.summary.empty());
  EXPECT_EQ(running.db_path, "/srv/.tx/tx.db");
  EXPECT_EQ(running.worker_args, (std::vector<std::string>{"--lease", "5m"}));

  ASSERT_TRUE(ApplyOrchestratorToml(R"(
[orchestrator]
workers = 3
max_workers = 4
reconcile_interval = "10s"
review_timeout = "0s"
question_timeout = "1h"
max_queue_depth = 7
shutdown_timeout = "1m"
log_format = "json"
log_max_mb = 2.5

[orchestrator.slots.slot-1]
agent = "codex"
)",
                                    "config.toml", fresh)
                  .ok());
  fresh.notify.push_back(SinkSpec{.url = "http://127.0.0.1:9/hook"});
  ConfigReload r = ReloadConfig(running, fresh);
  EXPECT_EQ(r.applied,
            (std::vector<std::string>{"workers", "max_workers", "reconcile_interval",
                                      "review_timeout", "question_timeout", "max_queue_depth",
                                      "slots", "log_format", "log_max_mb", "notify"}));
  EXPECT_EQ(r.at_restart, (std::vector<std::string>{"shutdown_timeout"}));
  EXPECT_EQ(r.summary,
            "workers 2 → 3, max_workers 10 → 4, reconcile_interval 1m → 10s, review_timeout 1h → "
            "off, question_timeout off → 1h, max_queue_depth 0 → 7, slots (for the workers "
            "started from now on), log_format text → json, log_max_mb 64 → 2.5, notify (1 sink)");
  EXPECT_TRUE(r.Changed("notify"));
  EXPECT_FALSE(r.Changed("heartbeat_file"));
  EXPECT_EQ(running.workers, 3);
  EXPECT_EQ(running.policy.max_workers, 4);
  EXPECT_EQ(running.review_timeout_ms, 0);
  EXPECT_EQ(running.log_format, log::LogFormat::kJson);
  EXPECT_EQ(running.notify.size(), 1u);
  EXPECT_EQ(running.slot_args.at("slot-1"), (std::vector<std::string>{"--agent", "codex"}));
  EXPECT_EQ(running.shutdown_timeout_ms, 300'000) << "the workers run with the old one";
  // Read again unchanged: nothing more to do.
  EXPECT_TRUE(ReloadConfig(running, fresh).applied.empty());
}

TEST(WorkerArgs, ASlotsOwnSettingsReplaceThePoolsFlagByFlag) {
  std::vector<std::string> pool = {"--agent", "claude", "--lease", "5m", "--queues", "a"};
  EXPECT_EQ(MergeWorkerArgs(pool, {"--agent", "codex", "--capabilities", "gpu"}),
            (std::vector<std::string>{"--lease", "5m", "--queues", "a", "--agent", "codex",
                                      "--capabilities", "gpu"}));
  EXPECT_EQ(MergeWorkerArgs(pool, {}), pool);
  EXPECT_EQ(MergeWorkerArgs({}, {"--agent", "codex"}),
            (std::vector<std::string>{"--agent", "codex"}));
}

}  // namespace
}  // namespace tx::orchestrator
