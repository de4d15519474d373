#include "core/validation.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

Task Valid() {
  Task t;
  t.title = "a task";
  return t;
}

TEST(Validation, AcceptsAMinimalTask) { EXPECT_TRUE(ValidateNewTask(Valid(), Limits{}).ok()); }

TEST(Validation, RefusesAnEmptyTitleAndOversizedText) {
  Task t = Valid();
  t.title = "";
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
  t = Valid();
  t.description = std::string(300 * 1024, 'x');
  auto s = ValidateNewTask(t, Limits{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("description is too long"), std::string::npos);
}

TEST(Validation, RefusesBadNamesQuotingThem) {
  Task t = Valid();
  t.queue = "has space";
  auto s = ValidateNewTask(t, Limits{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("'has space'"), std::string::npos);
  t = Valid();
  t.requires_caps = {"ok", "b@d"};
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
}

TEST(Validation, RefusesTimeoutsBeyondTheCapAndBadAttemptCounts) {
  Task t = Valid();
  t.timeout_ms = 3 * 3'600'000;
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
  t = Valid();
  t.max_attempts = 0;
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
}

TEST(Validation, RefusesMalformedDependencyIdsAndCommandWithAgent) {
  Task t = Valid();
  t.after = {"nope"};
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
  t = Valid();
  t.command = {"true"};
  t.agent = "claude";
  EXPECT_FALSE(ValidateNewTask(t, Limits{}).ok());
}

TEST(Validation, ParsesJsonObjectsOnly) {
  EXPECT_TRUE(ParseJsonObject("metadata", R"({"a": 1})").ok());
  auto bad = ParseJsonObject("metadata", "{bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "invalid metadata: '{bad' is not valid JSON");
  EXPECT_FALSE(ParseJsonObject("metadata", "[1,2]").ok());
}

TEST(Validation, ParsesIntegersStrictly) {
  EXPECT_EQ(*ParseInteger("priority", "-7"), -7);
  for (const char* bad : {"", "3x", "1.5", " 3", "abc"}) {
    EXPECT_FALSE(ParseInteger("priority", bad).ok()) << bad;
  }
}

TEST(Validation, ParsesListenAddresses) {
  using Address = std::pair<std::string, int>;
  EXPECT_EQ(*ParseListenAddress("127.0.0.1:8787"), (Address{"127.0.0.1", 8787}));
  EXPECT_EQ(*ParseListenAddress("[::1]:0"), (Address{"::1", 0}));
  EXPECT_EQ(*ParseListenAddress(":9000"), (Address{"127.0.0.1", 9000}));
  EXPECT_EQ(*ParseListenAddress("0.0.0.0:65535"), (Address{"0.0.0.0", 65535}));
  for (const char* bad : {"", "8787", "host:", "host:port", "host:65536", "host:-1", "h:1x"}) {
    Result<Address> r = ParseListenAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.error().message();
  }
}

TEST(ErrorCodes, MapToTheDocumentedExitCodesAndHttpStatuses) {
  EXPECT_EQ(ExitCode(ErrorCode::kInvalidArgument), 2);
  EXPECT_EQ(ExitCode(ErrorCode::kNotFound), 3);
  EXPECT_EQ(ExitCode(ErrorCode::kConflict), 4);
  EXPECT_EQ(ExitCode(ErrorCode::kBackpressure), 5);
  EXPECT_EQ(ExitCode(ErrorCode::kUnavailable), 1);
  EXPECT_EQ(ExitCode(ErrorCode::kInternal), 1);
  EXPECT_EQ(HttpStatus(ErrorCode::kConflict), 409);
  EXPECT_EQ(HttpStatus(ErrorCode::kBackpressure), 429);
  EXPECT_EQ(HttpStatus(ErrorCode::kUnavailable), 503);
}

}  // namespace
}  // namespace tx
