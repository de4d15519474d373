#include "orchestrator/control.h"

#include <gtest/gtest.h>

#include "service/orchestrator_service.h"
#include "store/store.h"

namespace tx::orchestrator {
namespace {

// tx orchestrator stop waits for the row to say stopped. An orchestrator that writes it and exits
// between one look at its row and the check that it is alive has stopped, not died: the stop
// succeeds (it failed now and then on a loaded machine).
TEST(StopOrchestratorTest, AnOrchestratorThatStopsAndExitsBetweenTwoLooksHasStopped) {
  auto store = store::Open({":memory:", true});
  ASSERT_TRUE(store.ok()) << store.error().message();
  service::OrchestratorService rows(**store, (*store)->clock());
  constexpr std::int64_t kPid = 4242;
  auto nobody = [](const OrchestratorState&) { return false; };
  ASSERT_TRUE(rows.Acquire("o1", "/srv", kPid, "h", nlohmann::json::object(), nobody, true).ok());
  ASSERT_TRUE(rows.SetStatus("o1", kPid, "running").ok());
  int looks = 0;
  service::ServiceOptions options;
  options.orchestrator_alive = [&](const OrchestratorState&, Millis) {
    if (++looks == 1) return true;  // when the stop is asked
    // Meanwhile it finished its drain, recorded it and exited.
    EXPECT_TRUE(rows.SetStatus("o1", kPid, "stopped").ok());
    return false;
  };
  auto stopped = StopOrchestrator(**store, options, "o1", /*force=*/false, /*wait=*/true);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message();
  EXPECT_EQ(stopped->pid, kPid);
  EXPECT_EQ(looks, 2);
}

// One that dies without recording a stop is reported as gone.
TEST(StopOrchestratorTest, AnOrchestratorThatDiesBeforeStoppingIsReportedGone) {
  auto store = store::Open({":memory:", true});
  ASSERT_TRUE(store.ok()) << store.error().message();
  service::OrchestratorService rows(**store, (*store)->clock());
  auto nobody = [](const OrchestratorState&) { return false; };
  ASSERT_TRUE(rows.Acquire("o1", "/srv", 4242, "h", nlohmann::json::object(), nobody, true).ok());
  ASSERT_TRUE(rows.SetStatus("o1", 4242, "running").ok());
  int looks = 0;
  service::ServiceOptions options;
  options.orchestrator_alive = [&](const OrchestratorState&, Millis) { return ++looks == 1; };
  auto stopped = StopOrchestrator(**store, options, "o1", false, true);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(stopped.error().message().find("is not running"), std::string::npos)
      << stopped.error().message();
}

}  // namespace
}  // namespace tx::orchestrator
