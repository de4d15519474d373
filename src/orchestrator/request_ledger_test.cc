#include "orchestrator/request_ledger.h"

#include <gtest/gtest.h>

#include <string>

namespace tx::orchestrator {
namespace {

// "r7": built by appending (GCC 12 warns of a memcpy overlap, wrongly, in "r" + to_string).
std::string Id(const char* prefix, std::size_t i) {
  std::string id = prefix;
  id += std::to_string(i);
  return id;
}

PoolAnswer Scaled(int n) {
  PoolAnswer a;
  a.ok = true;
  a.workers = n;
  return a;
}

TEST(RequestLedgerTest, ARecordedAnswerIsFoundByItsId) {
  RequestLedger ledger;
  EXPECT_TRUE(ledger.Record("scale-1", Scaled(3)));
  ASSERT_NE(ledger.Find("scale-1"), nullptr);
  EXPECT_EQ(*ledger.Find("scale-1"), Scaled(3));
  EXPECT_EQ(ledger.Find("scale-2"), nullptr);
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(RequestLedgerTest, AnEmptyIdIsNeverRecorded) {
  RequestLedger ledger;
  EXPECT_FALSE(ledger.Record("", Scaled(1)));
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(ledger.ToJson(), nlohmann::json::object());
}

TEST(RequestLedgerTest, AnsweringAgainReplacesTheAnswerAndKeepsItsPlace) {
  RequestLedger ledger;
  ledger.Record("a", Scaled(1));
  ledger.Record("b", Scaled(2));
  ledger.Record("a", PoolAnswer::Refused("the orchestrator is stopping"));
  EXPECT_EQ(ledger.size(), 2u);
  EXPECT_FALSE(ledger.Find("a")->ok);
  // "a" is still the oldest: the next kCapacity - 1 answers push it out, not "b" first.
  for (std::size_t i = 0; i < RequestLedger::kCapacity - 1; ++i) {
    ledger.Record(Id("n", i), Scaled(0));
  }
  EXPECT_EQ(ledger.Find("a"), nullptr);
  EXPECT_NE(ledger.Find("b"), nullptr);
}

TEST(RequestLedgerTest, OnlyTheNewestAnswersAreKept) {
  RequestLedger ledger;
  const std::size_t n = RequestLedger::kCapacity + 10;
  for (std::size_t i = 0; i < n; ++i) {
    ledger.Record(Id("r", i), Scaled(static_cast<int>(i)));
  }
  EXPECT_EQ(ledger.size(), RequestLedger::kCapacity);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(ledger.Find(Id("r", i)), nullptr);
  for (std::size_t i = 10; i < n; ++i) {
    ASSERT_NE(ledger.Find(Id("r", i)), nullptr) << i;
    EXPECT_EQ(*ledger.Find(Id("r", i)), Scaled(static_cast<int>(i)));
  }
  EXPECT_EQ(ledger.answers().size(), RequestLedger::kCapacity);
}

// The published pool's "results": an object of the answers by id, as waiters read it.
TEST(RequestLedgerTest, ItsJsonViewIsTheAnswersById) {
  RequestLedger ledger;
  PoolAnswer retired;
  retired.ok = true;
  retired.slot = "slot-2";
  PoolAnswer created;
  created.ok = true;
  created.slot = "slot-3";
  created.pid = 42;
  ledger.Record("retire-1", retired);
  ledger.Record("create-1", created);
  EXPECT_EQ(ledger.ToJson().dump(), R"({"create-1":{"ok":true,"pid":42,"slot":"slot-3"},)"
                                    R"("retire-1":{"ok":true,"slot":"slot-2"}})");
}

}  // namespace
}  // namespace tx::orchestrator
