#include "api/requests.h"

#include <gtest/gtest.h>

#include <string>

namespace tx::api {
namespace {

Result<Task> NewTask(std::string_view body) {
  auto j = ParseObject(body);
  if (!j.ok()) return j.error();
  return DecodeNewTask(*j);
}

std::string Nested(int depth) {
  return R"({"title":"x","metadata":{"a":)" + std::string(depth - 2, '[') +
         std::string(depth - 2, ']') + "}}";
}

// Found by fuzz/fuzz_requests (fuzz/regressions/requests/): copying the metadata recursed once
// per level, and a 200 KB body nested 100,000 deep overflowed the server's stack.
TEST(ParseObject, RefusesBodiesNestedDeeperThan128Levels) {
  EXPECT_TRUE(NewTask(Nested(128)).ok());
  auto r = NewTask(Nested(129));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(), "the request body nests deeper than 128 levels");
  EXPECT_FALSE(NewTask(Nested(100'000)).ok());
  // Brackets inside strings are text.
  EXPECT_TRUE(NewTask(R"({"title":")" + std::string(1000, '[') + R"(\"{"})").ok());
}

// Found by fuzz/fuzz_requests: an integer past INT64_MAX wrapped to a negative priority.
TEST(DecodeNewTask, RefusesIntegersBeyond64BitsInsteadOfWrappingThem) {
  EXPECT_EQ(NewTask(R"({"title":"x","priority":9223372036854775807})")->priority, INT64_MAX);
  EXPECT_EQ(NewTask(R"({"title":"x","priority":-9223372036854775808})")->priority, INT64_MIN);
  for (const char* body : {R"({"title":"x","priority":9223372036854775808})",
                           R"({"title":"x","priority":18446744073709551615})",
                           R"({"title":"x","timeout":18446744073709551615})"}) {
    auto r = NewTask(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error().message().find("out of range"), std::string::npos) << r.error().message();
  }
}

TEST(DecodeTaskChange, RefusesATokenBeyond64Bits) {
  auto r = DecodeTaskChange(*ParseObject(R"({"status":"done","token":18446744073709551615})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "field 'token' is out of range");
}

// Issue 24: a bulk cancel or retry names its tasks once each, within the limit, and nothing else.
TEST(DecodeBulkChange, TakesUpToTheLimitOfIdsEachOnceAndRefusesAnythingElse) {
  auto bulk = [](std::string_view body, bool retry = false) {
    return DecodeBulkChange(*ParseObject(body), retry);
  };
  auto ok = bulk(R"({"ids": ["task-a", "task-b", "task-a"], "note": "n"})");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->ids, (std::vector<std::string>{"task-a", "task-b"}));
  EXPECT_EQ(ok->note, "n");
  EXPECT_TRUE(bulk(R"({"ids": ["task-a"], "fresh": true})", /*retry=*/true)->fresh);
  std::string many = R"({"ids": [)";
  for (std::size_t i = 0; i <= kMaxBulkIds; ++i)
    many += (i ? ",\"t" : "\"t") + std::to_string(i) + "\"";
  many += "]}";
  for (const char* body :
       {R"({})", R"({"ids": []})", R"({"ids": "task-a"})", R"({"ids": [1]})", R"({"ids": [""]})",
        R"({"ids": ["task-a"], "fresh": true})", R"({"ids": ["task-a"], "force": true})"}) {
    auto r = bulk(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << body;
    EXPECT_EQ(r.error().message().find('\n'), std::string::npos) << r.error().message();
  }
  auto over = bulk(many);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message(), "field 'ids' lists 1001 tasks: at most 1000 at a time");
}

}  // namespace
}  // namespace tx::api
