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
