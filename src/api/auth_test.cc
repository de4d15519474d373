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
}

TEST(IsLoopbackAddress, OnlyAddressesWrittenAsNumbersCount) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.8.9.10"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(IsLoopbackAddress("127.public.example")) << "a name is judged by its addresses";
  EXPECT_FALSE(IsLoopbackAddress("localhost"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1"));
}

TEST(HostAllowedOnLoopback, OnlyLoopbackNamesAndTheConfiguredOnesPass) {
  for (const char* ok : {"", "localhost", "localhost:8787", "LOCALHOST.", "app.localhost:1",
                         "127.0.0.1:8787", "127.0.0.2", "[::1]:8787", "[::1]"}) {
    EXPECT_TRUE(HostAllowedOnLoopback(ok, {})) << ok;
  }
  for (const char* bad : {"attacker.example", "attacker.example:8787", "127.0.0.1.evil.example",
                          "localhost.evil.example", "[::1", "10.0.0.1:8787", "evil.example:80"}) {
    EXPECT_FALSE(HostAllowedOnLoopback(bad, {})) << bad;
  }
  EXPECT_TRUE(HostAllowedOnLoopback("Tx.Internal:8787", {"tx.internal"}));
  EXPECT_FALSE(HostAllowedOnLoopback("tx.internal.evil:8787", {"tx.internal"}));
}

TEST(AuthFailures, AClientIsSlowedAfterABurstOfWrongTokensAndRecovers) {
  AuthFailures f;
  Millis now = 1'000'000;
  for (int i = 0; i < AuthFailures::kBurst; ++i) {
    EXPECT_EQ(f.WaitFor("10.0.0.1", now), 0) << i;
    f.Failed("10.0.0.1", now);
  }
  Millis wait = f.WaitFor("10.0.0.1", now);
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, AuthFailures::kRefillMs + 1);
  EXPECT_EQ(f.WaitFor("10.0.0.2", now), 0) << "another client is not slowed";
  EXPECT_EQ(f.WaitFor("10.0.0.1", now + wait), 0) << "one more try once the wait passed";
  f.Failed("10.0.0.1", now + wait);
  EXPECT_GT(f.WaitFor("10.0.0.1", now + wait), 0);
  EXPECT_EQ(f.WaitFor("10.0.0.1", now + 60'000), 0);
}

// "c" + std::to_string(i), written so that GCC 12 sees no overlapping copy (-Wrestrict).
std::string Client(std::size_t i) {
  std::string out = std::to_string(i);
  out.insert(out.begin(), 'c');
  return out;
}

TEST(AuthFailures, ManyClientsKeepTheMapBounded) {
  AuthFailures f;
  for (std::size_t i = 0; i < AuthFailures::kMaxClients + 50; ++i) {
    for (int k = 0; k < AuthFailures::kBurst; ++k) {
      f.Failed(Client(i), static_cast<Millis>(i));
    }
  }
  // The oldest clients were forgotten; the newest are still slowed.
  EXPECT_EQ(f.WaitFor("c0", 1), 0) << "forgotten (remembered, it would still wait)";
  EXPECT_GT(f.WaitFor("c100", 101), 0);
  EXPECT_GT(f.WaitFor(Client(AuthFailures::kMaxClients + 49), AuthFailures::kMaxClients + 49), 0);
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
