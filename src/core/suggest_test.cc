#include "core/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tx {
namespace {

const std::vector<std::string> kCommands = {"init",  "task",   "claim",        "events",
                                            "usage", "worker", "orchestrator", "mcp"};

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(EditDistance("task", "task"), 0);
  EXPECT_EQ(EditDistance("", "task"), 4);
  EXPECT_EQ(EditDistance("task", ""), 4);
  EXPECT_EQ(EditDistance("tak", "task"), 1);
  EXPECT_EQ(EditDistance("tasks", "task"), 1);
  EXPECT_EQ(EditDistance("tusk", "task"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(EditDistance, ASwapOfTwoAdjacentCharactersIsOneEdit) {
  EXPECT_EQ(EditDistance("tsak", "task"), 1);
  EXPECT_EQ(EditDistance("lsit", "list"), 1);
  EXPECT_EQ(EditDistance("--stauts", "--status"), 1);
  EXPECT_EQ(EditDistance("ab", "ba"), 1);
}

TEST(Suggest, ProposesTheCommandATypoWasMeantFor) {
  EXPECT_EQ(Suggest("tsak", kCommands), "task");
  EXPECT_EQ(Suggest("wroker", kCommands), "worker");
  EXPECT_EQ(Suggest("evnts", kCommands), "events");
  EXPECT_EQ(Suggest("orchestrater", kCommands), "orchestrator");
}

TEST(Suggest, ProposesNothingWhenNoNameIsClose) {
  EXPECT_EQ(Suggest("frobnicate", kCommands), std::nullopt);
  EXPECT_EQ(Suggest("tk", kCommands), std::nullopt);  // 2 edits from "task"
  EXPECT_EQ(Suggest("", kCommands), std::nullopt);
  EXPECT_EQ(Suggest("tsak", std::vector<std::string>{}), std::nullopt);
}

TEST(Suggest, AllowsOneEditOnlyForNamesOfThreeCharactersOrFewer) {
  EXPECT_EQ(Suggest("mpc", kCommands), "mcp");
  EXPECT_EQ(Suggest("mc", kCommands), "mcp");
  EXPECT_EQ(Suggest("xyp", kCommands), std::nullopt);  // 2 edits from "mcp"
  EXPECT_EQ(Suggest("ini", kCommands), "init");
  EXPECT_EQ(Suggest("in", kCommands), std::nullopt);  // 2 edits from "init"
}

TEST(Suggest, ProposesNothingForANameThatIsKnown) {
  EXPECT_EQ(Suggest("task", kCommands), std::nullopt);
}

TEST(Suggest, PrefersTheClosestThenTheEarliestCandidate) {
  std::vector<std::string> flags = {"--state", "--status", "--stats"};
  EXPECT_EQ(Suggest("--statuss", flags), "--status");  // 1 edit; --stats is 2
  EXPECT_EQ(Suggest("--stat", flags), "--state");      // 1 edit from each of --state and --stats
}

}  // namespace
}  // namespace tx
