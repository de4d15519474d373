#include "notify/config.h"

#include <gtest/gtest.h>

#include "notify/webhook.h"

namespace tx::notify {
namespace {

TEST(NotifyConfig, ReadsWebhooksAndCommandsInOrder) {
  auto sinks = ParseNotifyToml(R"(
[worker]
agent = "claude"

[[notify]]
url = "https://hooks.example.com/T0/B0"
secret = "s3cret"
events = ["task.failed", "agent.*"]

[[notify]]
command = ["notify-send", "tx"]
give_up_after = "2h"
)",
                               "config.toml");
  ASSERT_TRUE(sinks.ok()) << sinks.error().message();
  ASSERT_EQ(sinks->size(), 2u);
  EXPECT_EQ((*sinks)[0].url, "https://hooks.example.com/T0/B0");
  EXPECT_EQ((*sinks)[0].secret, "s3cret");
  EXPECT_EQ((*sinks)[0].events, (std::vector<std::string>{"task.failed", "agent.*"}));
  EXPECT_EQ((*sinks)[1].command, (std::vector<std::string>{"notify-send", "tx"}));
  EXPECT_EQ((*sinks)[1].Key(), "notify-send tx");
  EXPECT_EQ((*sinks)[0].give_up_ms, 24 * 3600'000);
  EXPECT_EQ((*sinks)[1].give_up_ms, 2 * 3600'000);
  EXPECT_TRUE(ParseNotifyToml("[worker]\n", "c").value().empty());
}

TEST(NotifyConfig, RefusesWhatCannotBeASinkNamingTheTable) {
  struct Case {
    const char* toml;
    const char* says;
  };
  for (const Case& c : {
           Case{"[notify]\nurl = \"http://x\"\n", "write [[notify]]"},
           Case{"[[notify]]\nsecret = \"s\"\n", "either a url or a command"},
           Case{"[[notify]]\nurl = \"http://x\"\ncommand = [\"cat\"]\n",
                "either a url or a command"},
           Case{"[[notify]]\nurl = \"ftp://x\"\n", "must start with http:// or https://"},
           Case{"[[notify]]\ncommand = \"cat\"\n", "'command' must be a list of strings"},
           Case{"[[notify]]\ncommand = [\"\"]\n", "must name a program"},
           Case{"[[notify]]\nurl = \"http://x\"\nevents = [\"failed\"]\n", "holds 'failed'"},
           Case{"[[notify]]\nurl = \"http://x\"\nretries = 3\n", "unknown setting 'retries'"},
           Case{"[[notify]]\nurl = \"http://x\"\ngive_up_after = \"500ms\"\n",
                "'give_up_after' must be a duration from 1s to 168h"},
           Case{"[[notify]]\nurl = \"http://x\"\n[[notify]]\nurl = 3\n",
                "[[notify]] number 2: 'url' must be a string"},
       }) {
    auto r = ParseNotifyToml(c.toml, "config.toml");
    ASSERT_FALSE(r.ok()) << c.toml;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.says), std::string::npos) << r.error().message();
    EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
  }
}

// RFC 4231, test case 2.
TEST(Webhook, SignsTheBodyWithHmacSha256AsHex) {
  EXPECT_EQ(SignBody("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

}  // namespace
}  // namespace tx::notify
