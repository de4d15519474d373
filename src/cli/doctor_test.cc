#include "cli/doctor.h"

#include <gtest/gtest.h>

namespace tx::cli {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Finding Ok(std::string check, std::string detail) {
  return {std::move(check), Level::kOk, std::move(detail), ""};
}

TEST(Doctor, WarningsAloneExitZeroAndAnyFailureExitsOne) {
  EXPECT_EQ(DoctorExitCode({}), 0);
  EXPECT_EQ(DoctorExitCode({Ok("store", "opens")}), 0);
  EXPECT_EQ(DoctorExitCode({Ok("store", "opens"), {"agent:claude", Level::kWarn, "missing", "x"}}),
            0);
  EXPECT_EQ(DoctorExitCode({Ok("store", "opens"),
                            {"sandbox", Level::kFail, "no bwrap", "x"},
                            {"git", Level::kWarn, "old", "y"}}),
            1);
}

TEST(Doctor, TextIsOneLinePerCheckInColumnsWithTheFixUnderAWarningOrFailure) {
  std::string text = FormatDoctorText({
      Ok("store", ".tx/tx.db opens, schema 8 (current)"),
      {"token", Level::kFail, ".tx/token can be read by others (mode 0644)", "chmod 600 .tx/token"},
      {"git", Level::kOk, "git version 2.39.5", "never shown for ok"},
  });
  EXPECT_EQ(text,
            "ok    store     .tx/tx.db opens, schema 8 (current)\n"
            "fail  token     .tx/token can be read by others (mode 0644)\n"
            "                fix: chmod 600 .tx/token\n"
            "ok    git       git version 2.39.5\n"
            "1 failure: fix the failures before relying on tx here\n");
}

TEST(Doctor, TheCheckColumnWidensForALongName) {
  std::string text = FormatDoctorText(
      {Ok("store", "opens"), {"agent:my-long-agent", Level::kWarn, "missing", "install it"}});
  EXPECT_EQ(text,
            "ok    store               opens\n"
            "warn  agent:my-long-agent missing\n"
            "                          fix: install it\n"
            "1 warning, no failure: tx can work here\n");
}

TEST(Doctor, TheSummaryCountsFailuresAndWarnings) {
  EXPECT_TRUE(Contains(FormatDoctorText({Ok("a", "x"), Ok("b", "y")}), "all 2 checks passed\n"));
  std::string text = FormatDoctorText({{"a", Level::kFail, "x", "f"},
                                       {"b", Level::kFail, "y", "f"},
                                       {"c", Level::kWarn, "z", "f"}});
  EXPECT_TRUE(Contains(text, "2 failures, 1 warning: fix the failures")) << text;
}

TEST(Doctor, TextEscapesControlCharactersFromAProgramsOutput) {
  std::string text = FormatDoctorText({Ok("agent:x", "/bin/x (1.0\x1b[31m)")});
  EXPECT_FALSE(Contains(text, "\x1b")) << text;
  EXPECT_TRUE(Contains(text, "\\x1b[31m")) << text;
}

TEST(Doctor, JsonHasOkAndEveryFinding) {
  nlohmann::json j = DoctorJson({Ok("store", "opens"), {"disk", Level::kWarn, "low", "free it"}});
  EXPECT_EQ(j["ok"], true);
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][1],
            (nlohmann::json{
                {"check", "disk"}, {"level", "warn"}, {"detail", "low"}, {"fix", "free it"}}));
  EXPECT_EQ(DoctorJson({{"sandbox", Level::kFail, "no bwrap", "install it"}})["ok"], false);
}

TEST(Doctor, ATokenFileOthersCanReadFailsWithTheChmodThatFixesIt) {
  Finding open = TokenFileFinding(".tx/token", 0644);
  EXPECT_EQ(open.level, Level::kFail);
  EXPECT_TRUE(Contains(open.detail, ".tx/token can be read by others (mode 0644)")) << open.detail;
  EXPECT_EQ(open.fix, "chmod 600 .tx/token");
  EXPECT_EQ(TokenFileFinding(".tx/tokens", 0640).level, Level::kFail) << "the group too";
  EXPECT_EQ(TokenFileFinding(".tx/token", 0600).level, Level::kOk);
  EXPECT_EQ(TokenFileFinding(".tx/token", 0400).level, Level::kOk);
  EXPECT_TRUE(Contains(TokenFileFinding(".tx/token", 0100600).detail, "(0600)"))
      << "the file type bits are not shown";
}

TEST(Doctor, DiskSpaceWarnsUnderOneGibibyteAndFailsUnderAHundredMebibytes) {
  EXPECT_EQ(DiskFinding("/s/.tx", 5ull << 30).level, Level::kOk);
  EXPECT_EQ(DiskFinding("/s/.tx", 5ull << 30).detail, "5.0 GiB free under /s/.tx");
  EXPECT_EQ(DiskFinding("/s/.tx", kDiskWarnBytes).level, Level::kOk);
  Finding low = DiskFinding("/s/.tx", kDiskWarnBytes - 1);
  EXPECT_EQ(low.level, Level::kWarn);
  EXPECT_FALSE(low.fix.empty());
  EXPECT_EQ(DiskFinding("/s/.tx", kDiskFailBytes).level, Level::kWarn);
  Finding full = DiskFinding("/s/.tx", kDiskFailBytes - 1);
  EXPECT_EQ(full.level, Level::kFail);
  EXPECT_TRUE(Contains(full.detail, "only 99 MiB free under /s/.tx")) << full.detail;
}

TEST(Doctor, AClockMoreThanASecondOffThePostgresServersWarns) {
  EXPECT_EQ(ClockSkewFinding(0).level, Level::kOk);
  EXPECT_EQ(ClockSkewFinding(kClockSkewWarnMs).level, Level::kOk);
  EXPECT_EQ(ClockSkewFinding(-kClockSkewWarnMs).level, Level::kOk);
  Finding behind = ClockSkewFinding(2500);
  EXPECT_EQ(behind.level, Level::kWarn);
  EXPECT_TRUE(Contains(behind.detail, "2.500 s behind the PostgreSQL server's")) << behind.detail;
  EXPECT_FALSE(behind.fix.empty());
  Finding ahead = ClockSkewFinding(-1500);
  EXPECT_EQ(ahead.level, Level::kWarn);
  EXPECT_TRUE(Contains(ahead.detail, "1.500 s ahead of the PostgreSQL server's")) << ahead.detail;
}

TEST(Doctor, GitsVersionIsReadFromItsVersionLine) {
  EXPECT_EQ(ParseGitVersion("git version 2.39.5"), (std::pair{2, 39}));
  EXPECT_EQ(ParseGitVersion("git version 2.17.0.windows.1"), (std::pair{2, 17}));
  EXPECT_EQ(ParseGitVersion("git version 1.8"), (std::pair{1, 8}));
  EXPECT_FALSE(ParseGitVersion("hg version 2.39"));
  EXPECT_FALSE(ParseGitVersion("git version x.y"));
  EXPECT_FALSE(ParseGitVersion("git version 2"));
}

TEST(Doctor, GitMissingOrTooOldFailsOnlyWhereTheConfigSendsTasksToARepository) {
  EXPECT_EQ(GitFinding("git version 2.39.5", "", true).level, Level::kOk);
  EXPECT_EQ(GitFinding("git version 2.39.5", "", true).detail, "git version 2.39.5");
  Finding missing = GitFinding(std::nullopt, "No such file or directory", false);
  EXPECT_EQ(missing.level, Level::kWarn);
  EXPECT_TRUE(Contains(missing.detail, "git is not on PATH (No such file or directory)"))
      << missing.detail;
  EXPECT_FALSE(missing.fix.empty());
  EXPECT_EQ(GitFinding(std::nullopt, "No such file or directory", true).level, Level::kFail);
  EXPECT_EQ(GitFinding("git version 2.16.1", "", false).level, Level::kWarn);
  EXPECT_EQ(GitFinding("git version 2.16.1", "", true).level, Level::kFail);
  EXPECT_EQ(GitFinding("not git at all", "", true).level, Level::kWarn);
}

}  // namespace
}  // namespace tx::cli
