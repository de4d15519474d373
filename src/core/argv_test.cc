#include "core/argv.h"

#include <gtest/gtest.h>

namespace tx {
namespace {

using V = std::vector<std::string>;

TEST(SplitArgv, SplitsOnWhitespaceAndHonoursQuotes) {
  EXPECT_EQ(*SplitArgv("claude -p  'fix the bug'"), (V{"claude", "-p", "fix the bug"}));
  EXPECT_EQ(*SplitArgv(R"(echo "a \"b\" c" d\ e)"), (V{"echo", R"(a "b" c)", "d e"}));
  EXPECT_EQ(*SplitArgv("x ''"), (V{"x", ""}));
}

TEST(SplitArgv, ExpandsNothingSoNothingCanBeInjected) {
  EXPECT_EQ(*SplitArgv("echo $HOME; rm -rf / `id` *"),
            (V{"echo", "$HOME;", "rm", "-rf", "/", "`id`", "*"}));
}

TEST(SplitArgv, RefusesUnclosedQuotesAndEmptyLines) {
  EXPECT_FALSE(SplitArgv("echo 'oops").ok());
  EXPECT_FALSE(SplitArgv("echo \"oops").ok());
  EXPECT_FALSE(SplitArgv("   ").ok());
  EXPECT_FALSE(SplitArgv("trailing\\").ok());
}

TEST(AllowList, MatchesExactNamesAndWildcards) {
  EXPECT_TRUE(IsAllowed("task.show", "task.show,task.done"));
  EXPECT_TRUE(IsAllowed("task.done", "task.show, task.done"));
  EXPECT_FALSE(IsAllowed("task.add", "task.show,task.done"));
  EXPECT_TRUE(IsAllowed("claim.renew", "claim.*"));
  EXPECT_FALSE(IsAllowed("claim", "claim.*"));
  EXPECT_TRUE(IsAllowed("anything", "*"));
  EXPECT_FALSE(IsAllowed("task.show", ""));
}

TEST(Glob, AStarMatchesAnyRunAndTheRestMatchesWhole) {
  EXPECT_TRUE(MatchesGlob("LC_*", "LC_ALL"));
  EXPECT_TRUE(MatchesGlob("LC_*", "LC_"));
  EXPECT_FALSE(MatchesGlob("LC_*", "XLC_ALL"));
  EXPECT_TRUE(MatchesGlob("PATH", "PATH"));
  EXPECT_FALSE(MatchesGlob("PATH", "PATHS"));
  EXPECT_FALSE(MatchesGlob("PATH", "path"));
  EXPECT_TRUE(MatchesGlob("*_PROXY", "HTTPS_PROXY"));
  EXPECT_TRUE(MatchesGlob("*", ""));
  EXPECT_FALSE(MatchesGlob("", "A"));
}

// Found by fuzz/fuzz_argv (fuzz/regressions/argv/): the recursive matcher tried every split of the
// text for every star, so a few dozen stars hung the check.
TEST(AllowList, ManyStarsMatchInPolynomialTime) {
  std::string stars(60, '*');
  EXPECT_FALSE(IsAllowed(std::string(200, 'a'), stars + "b"));
  EXPECT_TRUE(IsAllowed(std::string(200, 'a') + "b", stars + "b"));
  EXPECT_TRUE(IsAllowed("task.done", "*.*e*"));
  EXPECT_FALSE(IsAllowed("task.show", "*.*e"));
  EXPECT_TRUE(IsAllowed("claim.renew", "c*l*m.*w"));
}

}  // namespace
}  // namespace tx
