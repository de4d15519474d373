#include "orchestrator/singleton.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tx::orchestrator {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tx-orch-unit.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(PidFileLockTest, HoldsTheFileWithOurPidAndRefusesASecondHolderNamingTheFirst) {
  TempDir dir;
  auto first = PidFileLock::Acquire(dir / "orchestrator.pid");
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(Read(dir / "orchestrator.pid").rfind(std::to_string(::getpid()) + " ", 0), 0u);
  // flock belongs to the open file description: a second open, even in this process, is refused.
  auto second = PidFileLock::Acquire(dir / "orchestrator.pid");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kConflict);
  EXPECT_NE(second.error().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.error().message();
}

TEST(PidFileLockTest, ReleaseRemovesTheFileAndAStaleFileIsTakenOver) {
  TempDir dir;
  std::ofstream(dir / "orchestrator.pid") << "999999 some-host\n";  // left by a dead holder
  {
    auto lock = PidFileLock::Acquire(dir / "orchestrator.pid");
    ASSERT_TRUE(lock.ok()) << lock.error().message();
    lock->Release();
    EXPECT_FALSE(fs::exists(dir / "orchestrator.pid"));
  }
  auto again = PidFileLock::Acquire(dir / "orchestrator.pid");
  EXPECT_TRUE(again.ok());
}

}  // namespace
}  // namespace tx::orchestrator
