#include "core/toml_text.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

toml::table Parse(const std::string& text) {
  Result<toml::table> t = ParseTomlText(text, "config.toml");
  EXPECT_TRUE(t.ok()) << t.error().message();
  return t.ok() ? *t : toml::table();
}

TEST(ParseTomlText, ASyntaxErrorIsOneLineNamingFileLineAndColumn) {
  Result<toml::table> t = ParseTomlText("a = 1\nb = \n", "config.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.error().message().rfind("config.toml:2:", 0), 0u) << t.error().message();
}

TEST(TomlTable, ReadsEachTypeAndLeavesAnAbsentSettingAsItWas) {
  toml::table root =
      Parse("name = \"n\"\nlist = [\"a\", \"b\"]\ncount = 7\non = true\nprice = 2\nrate = 0.5\n");
  TomlTable t(root, "worker.", "config.toml", TomlTyping::kStrict);
  std::string name, missing = "kept";
  std::vector<std::string> list;
  int count = 0;
  bool on = false;
  double price = 0, rate = 0;
  ASSERT_TRUE(t.String("name", name).ok());
  ASSERT_TRUE(t.String("absent", missing).ok());
  ASSERT_TRUE(t.Strings("list", list).ok());
  ASSERT_TRUE(t.Integer("count", 1, 10, count, "a count").ok());
  ASSERT_TRUE(t.Bool("on", on).ok());
  ASSERT_TRUE(t.Number("price", price, "a price").ok());
  ASSERT_TRUE(t.Number("rate", rate, "a rate").ok());
  EXPECT_EQ(name, "n");
  EXPECT_EQ(missing, "kept");
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(count, 7);
  EXPECT_TRUE(on);
  EXPECT_EQ(price, 2.0);
  EXPECT_EQ(rate, 0.5);
  EXPECT_TRUE(t.RefuseUnknown().ok());
}

TEST(TomlTable, AValueThatDoesNotFitIsRefusedInOneLineNamingTheKey) {
  toml::table root = Parse("count = 11\nname = 3\nlist = [\"a\", 1]\n");
  TomlTable t(root, "orchestrator.", "config.toml", TomlTyping::kStrict);
  int count = 0;
  std::string name;
  std::vector<std::string> list = {"kept"};
  Status range = t.Integer("count", 0, 10, count, "a whole number from 0 to 10");
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(range.error().message(),
            "config.toml: 'orchestrator.count' must be a whole number from 0 to 10");
  EXPECT_EQ(count, 0);
  EXPECT_EQ(t.String("name", name).error().message(),
            "config.toml: 'orchestrator.name' must be a string");
  EXPECT_EQ(t.Strings("list", list, "a list of strings").error().message(),
            "config.toml: 'orchestrator.list' must be a list of strings");
  EXPECT_EQ(list, (std::vector<std::string>{"kept"}));
}

TEST(TomlTable, StrictTypingTakesAnIntegerOrABoolOnlyAsItself) {
  toml::table root = Parse("whole = 3.0\nflag = 1\nyes = true\n");
  TomlTable t(root, "orchestrator.", "config.toml", TomlTyping::kStrict);
  int whole = 0, yes = 0;
  bool flag = false;
  EXPECT_FALSE(t.Integer("whole", 0, 10, whole, "an integer").ok());
  EXPECT_FALSE(t.Integer("yes", 0, 10, yes, "an integer").ok());
  EXPECT_FALSE(t.Bool("flag", flag).ok());
}

TEST(TomlTable, ConvertingTypingTakesWhatTomlConvertsWithoutLoss) {
  toml::table root = Parse("whole = 3.0\nhalf = 3.5\nflag = 1\nyes = true\n");
  TomlTable t(root, "worker.", "config.toml", TomlTyping::kConverting);
  int whole = 0, half = 0, yes = 0;
  bool flag = false;
  ASSERT_TRUE(t.Integer("whole", 0, 10, whole, "an integer").ok());
  EXPECT_EQ(whole, 3);
  EXPECT_EQ(t.Integer("half", 0, 10, half, "an integer").error().message(),
            "config.toml: 'worker.half' must be an integer");
  ASSERT_TRUE(t.Integer("yes", 0, 10, yes, "an integer").ok());
  EXPECT_EQ(yes, 1);
  ASSERT_TRUE(t.Bool("flag", flag).ok());
  EXPECT_TRUE(flag);
}

TEST(TomlTable, ANumberIsAnIntegerOrAFloatAndNothingElse) {
  toml::table root = Parse("on = true\ntext = \"1\"\n");
  TomlTable t(root, "", "config.toml", TomlTyping::kConverting);
  double v = 7;
  EXPECT_FALSE(t.Number("on", v, "a number").ok());
  EXPECT_FALSE(t.Number("text", v, "a number").ok());
  EXPECT_EQ(v, 7);
}

TEST(TomlTable, RefusesTheFirstKeyNobodyAskedForByName) {
  toml::table root = Parse("known = 1\nlater = 2\ntypo = 3\n");
  TomlTable t(root, "worker.", "config.toml", TomlTyping::kConverting);
  EXPECT_NE(t.Find("known"), nullptr);
  EXPECT_EQ(t.Find("absent"), nullptr);
  t.Known("later");
  Status s = t.RefuseUnknown();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "config.toml: unknown setting 'worker.typo'");
}

TEST(TomlTable, WithoutAnOriginARefusalNamesTheKeyAlone) {
  toml::table root = Parse("url = 5\n");
  TomlTable t(root, "", "", TomlTyping::kStrict);
  std::string url;
  EXPECT_EQ(t.String("url", url).error().message(), "'url' must be a string");
  EXPECT_EQ(t.Bad("url", "is not a known key").message(), "'url' is not a known key");
}

}  // namespace
}  // namespace tx
