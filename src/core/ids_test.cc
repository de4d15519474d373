#include "core/ids.h"

#include <gtest/gtest.h>

#include <set>

namespace tx {
namespace {

TEST(NewToken, Is256RandomBitsInHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string t = NewToken();
    ASSERT_EQ(t.size(), 64u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(NewTaskId, HasTheShapeItsCheckerExpects) {
  EXPECT_TRUE(LooksLikeTaskId(NewTaskId()));
  EXPECT_TRUE(LooksLikeWorkerId(NewWorkerId()));
  EXPECT_FALSE(LooksLikeTaskId(NewWorkerId()));
}

}  // namespace
}  // namespace tx
