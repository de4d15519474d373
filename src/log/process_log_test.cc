#include "log/process_log.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tx::log {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tx-log-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::chrono::system_clock::time_point At(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

TEST(ProcessLogTest, TextLinesCarryAUtcTimestampEndingInZ) {
  // 2026-11-27T09:14:03.512Z
  EXPECT_EQ(FormatLine(LogFormat::kText, At(1795770843512), "info", "slot-1: started", {}),
            "2026-11-27T09:14:03.512Z info slot-1: started\n");
  EXPECT_EQ(UtcTimestamp(At(0)), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(UtcTimestamp(At(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(ProcessLogTest, AJsonLineParsesWhateverTheMessageHolds) {
  const std::string nasty = std::string("say \"hi\" \\ then\nnew line\ttab \x01\x1f\x7f bad ") +
                            "\xff\xfe utf-8 \xc3\xa9 and \xe2\x9c\x93";
  std::string line = FormatLine(LogFormat::kJson, At(1795770843512), "warning", nasty,
                                {{"slot", "slot-2"}, {"ts", "not mine"}, {"task", "task-1"}});
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  json j = json::parse(line);
  EXPECT_EQ(j["ts"], "2026-11-27T09:14:03.512Z");
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["slot"], "slot-2");
  EXPECT_EQ(j["task"], "task-1");
  std::string msg = j["msg"];
  EXPECT_EQ(msg.rfind("say \"hi\" \\ then\nnew line\ttab \x01\x1f\x7f bad ", 0), 0u) << msg;
  EXPECT_NE(msg.find("\xef\xbf\xbd"), std::string::npos) << "invalid UTF-8 became U+FFFD";
  EXPECT_NE(msg.find("\xc3\xa9 and \xe2\x9c\x93"), std::string::npos) << "valid UTF-8 kept";
  // ts, level and msg first, in that order.
  EXPECT_EQ(line.rfind("{\"ts\":", 0), 0u) << line;
}

TEST(ProcessLogTest, MaxMbTakesDecimalsAndRefusesWhatMakesNoSense) {
  EXPECT_EQ(*ParseMaxMb("64", "log_max_mb"), 64);
  EXPECT_EQ(*ParseMaxMb("0", "log_max_mb"), 0);
  EXPECT_EQ(*ParseMaxMb("0.01", "log_max_mb"), 0.01);
  EXPECT_EQ(*MaxBytesOfMb(0.01, "x"), 10486u);
  EXPECT_EQ(*MaxBytesOfMb(64, "x"), 64u << 20);
  for (const char* bad : {"", "-1", "abc", "0.0001", "1e9", "5MB"}) {
    Result<double> r = ParseMaxMb(bad, "--log-max-mb");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("--log-max-mb"), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(FormatMb(0.01), "0.01");
  EXPECT_EQ(FormatMb(64), "64");
  EXPECT_FALSE(ParseLogFormat("xml", "--log-format").ok());
  EXPECT_EQ(*ParseLogFormat("json", "--log-format"), LogFormat::kJson);
}

TEST(ProcessLogTest, RotateFilesShiftsTheGenerationsAndDropsTheOldest) {
  TempDir dir;
  std::string path = dir / "x.log";
  std::ofstream(path) << "new";
  std::ofstream(path + ".1") << "older";
  std::ofstream(path + ".2") << "oldest";
  ASSERT_TRUE(RotateFiles(path, 2).ok());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(ReadFile(path + ".1"), "new");
  EXPECT_EQ(ReadFile(path + ".2"), "older");
  EXPECT_FALSE(fs::exists(path + ".3"));
  // Nothing to shift is no error.
  EXPECT_TRUE(RotateFiles(dir / "none.log", 2).ok());
}

TEST(ProcessLogTest, AFilePastItsCapIsRotatedAndAFreshOneOpened) {
  TempDir dir;
  std::string path = dir / "logs/w.log";
  Result<std::shared_ptr<ProcessLog>> log =
      ProcessLog::Open({LogFormat::kJson, path, /*max_bytes=*/1'000, false});
  ASSERT_TRUE(log.ok()) << log.error().message();
  auto logger = (*log)->Logger("t");
  for (int i = 0; i < 100; ++i) logger->info("line {} of a log that grows past its cap", i);
  ASSERT_TRUE(fs::exists(path + ".1"));
  ASSERT_TRUE(fs::exists(path + ".2"));
  EXPECT_FALSE(fs::exists(path + ".3"));
  int last = -1;
  for (const std::string& file : {path + ".2", path + ".1", path}) {
    std::string text = ReadFile(file);
    // The cap, plus at most the line that passed it.
    EXPECT_LT(text.size(), 1'100u) << file;
    for (const std::string& line : Lines(text)) {
      json j = json::parse(line);
      int n = std::stoi(j["msg"].get<std::string>().substr(5));
      // In order, none missing since the oldest file kept.
      if (last >= 0) {
        EXPECT_EQ(n, last + 1) << file << ": " << line;
      }
      last = n;
    }
  }
  EXPECT_EQ(last, 99);
}

TEST(ProcessLogTest, ReopenWritesToAFreshFileOnceTheOldWasMoved) {
  TempDir dir;
  std::string path = dir / "o.log";
  Result<std::shared_ptr<ProcessLog>> log = ProcessLog::Open({LogFormat::kText, path, 0, false});
  ASSERT_TRUE(log.ok());
  auto logger = (*log)->Logger("t");
  logger->info("before");
  fs::rename(path, path + ".moved");
  logger->info("still the old file");
  ASSERT_TRUE((*log)->Reopen().ok());
  logger->warn("after");
  EXPECT_EQ(Lines(ReadFile(path + ".moved")).size(), 2u);
  std::vector<std::string> fresh = Lines(ReadFile(path));
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_NE(fresh[0].find("Z warning after"), std::string::npos) << fresh[0];
  // A path that cannot be opened keeps the old file.
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_FALSE((*log)->Reopen().ok());
}

TEST(ProcessLogTest, TheProcessAndTheThreadGiveJsonLinesTheirFields) {
  TempDir dir;
  std::string path = dir / "f.log";
  Result<std::shared_ptr<ProcessLog>> log = ProcessLog::Open({LogFormat::kText, path, 0, false});
  ASSERT_TRUE(log.ok());
  auto logger = (*log)->Logger("t");
  logger->info("as text");
  (*log)->SetFormat(LogFormat::kJson);
  (*log)->SetField("worker", "worker-1");
  {
    ScopedLogField task("task", "task-1");
    logger->info("about a task");
  }
  logger->info("about nothing");
  (*log)->SetField("worker", "");
  logger->info("no worker");
  std::vector<std::string> lines = Lines(ReadFile(path));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("Z info as text"), std::string::npos);
  json a = json::parse(lines[1]), b = json::parse(lines[2]), c = json::parse(lines[3]);
  EXPECT_EQ(a["worker"], "worker-1");
  EXPECT_EQ(a["task"], "task-1");
  EXPECT_EQ(b["worker"], "worker-1");
  EXPECT_FALSE(b.contains("task"));
  EXPECT_FALSE(c.contains("worker"));
}

}  // namespace
}  // namespace tx::log
