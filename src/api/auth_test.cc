#include "api/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tx::api {
namespace {

Tokens Some() {
  Tokens t;
  t.by_token["admin-t"] = Scope::kAdmin;
  t.by_token["read-t"] = Scope::kRead;
  t.by_token["worker-t"] = Scope::kWorker;
  return t;
}

TEST(Authorize, WithoutATokenOnlyReadsOnLoopbackPass) {
  Tokens t = Some();
  EXPECT_EQ(Authorize(t, true, false, Access::kRead, std::nullopt).http_status, 0);
  EXPECT_EQ(Authorize(t, true, true, Access::kAdmin, std::nullopt).http_status, 401);
  EXPECT_EQ(Authorize(t, true, false, Access::kWorker, std::nullopt).http_status, 401);
  EXPECT_EQ(Authorize(t, false, false, Access::kRead, std::nullopt).http_status, 401);
}

TEST(Authorize, ATokenIsJudgedByItsScope) {
  Tokens t = Some();
  EXPECT_EQ(Authorize(t, false, true, Access::kAdmin, "admin-t").http_status, 0);
  EXPECT_EQ(Authorize(t, false, false, Access::kRead, "read-t").http_status, 0);
  EXPECT_EQ(Authorize(t, false, true, Access::kAdmin, "read-t").http_status, 403);
  EXPECT_EQ(Authorize(t, false, true, Access::kWorker, "read-t").http_status, 403);
  EXPECT_EQ(Authorize(t, false, true, Access::kWorker, "worker-t").http_status, 0);
  EXPECT_EQ(Authorize(t, false, true, Access::kAdmin, "worker-t").http_status, 403);
  EXPECT_EQ(Authorize(t, true, false, Access::kRead, "admin-").http_status, 401);
  EXPECT_EQ(Authorize(t, true, false, Access::kRead, "admin-tt").http_status, 401);
}

TEST(BearerToken, OnlyTheBearerSchemeCounts) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_FALSE(BearerToken("Basic abc"));
  EXPECT_FALSE(BearerToken("Bearer "));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
}

TEST(LoadTokens, ReadsTheAdminTokenAndScopedOnesAndNamesABadLine) {
  auto dir = std::filesystem::temp_directory_path() / ("tx-auth-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(LoadTokens(dir.string())->by_token.empty()) << "no files, no tokens";
  std::ofstream(dir / "token") << "secret\n";
  std::ofstream(dir / "tokens") << "# comment\n\nread r1\nworker w1\n";
  Result<Tokens> t = LoadTokens(dir.string());
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->by_token.at("secret"), Scope::kAdmin);
  EXPECT_EQ(t->by_token.at("r1"), Scope::kRead);
  EXPECT_EQ(t->by_token.at("w1"), Scope::kWorker);
  std::ofstream(dir / "tokens") << "read r1\nsuper s1\n";
  Result<Tokens> bad = LoadTokens(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("tokens:2"), std::string::npos) << bad.error().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tx::api
