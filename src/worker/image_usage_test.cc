#include "worker/image_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "run_process.h"

namespace tx::worker {
namespace {

using Images = std::vector<std::string>;
constexpr Millis kNow = 1'800'000'000'000;
constexpr Millis kHour = 3'600'000;
constexpr Millis kWeek = 7 * 24 * kHour;

TEST(ImagesToRemove, OnlyImagesUnusedForLongEnoughNeitherConfiguredNorInAContainer) {
  std::vector<ImageUse> uses = {{"localhost/old", kNow - 8 * 24 * kHour},
                                {"localhost/recent", kNow - kHour},
                                {"localhost/configured", kNow - 30 * 24 * kHour},
                                {"localhost/running", kNow - 30 * 24 * kHour},
                                {"localhost/just-a-week", kNow - kWeek}};
  EXPECT_EQ(ImagesToRemove(uses, {"localhost/configured"}, {"localhost/running"}, kNow, kWeek),
            (Images{"localhost/old", "localhost/just-a-week"}));
  EXPECT_EQ(ImagesToRemove(uses, {}, {}, kNow, 0),
            (Images{"localhost/old", "localhost/recent", "localhost/configured",
                    "localhost/running", "localhost/just-a-week"}));
  EXPECT_EQ(ImagesToRemove(uses, {}, {}, kNow, 60 * 24 * kHour), Images{});
  EXPECT_EQ(ImagesToRemove({}, {}, {}, kNow, 0), Images{});
}

TEST(ImagesToRemove, NamesWrittenDifferentlyForTheSameImageAreTheSame) {
  std::vector<ImageUse> uses = {{"localhost/a", 0},
                                {"busybox", 0},
                                {"org/agent:1", 0},
                                {"docker.io/library/alpine:3", 0},
                                {"quay.io/x/y@sha256:ab", 0}};
  // As `ps` shows containers' images, and as a config may write them.
  Images in_use = {"localhost/a:latest", "docker.io/library/busybox:latest",
                   "docker.io/org/agent:1"};
  EXPECT_EQ(ImagesToRemove(uses, {"alpine:3"}, in_use, kNow, kHour),
            Images{"quay.io/x/y@sha256:ab"});
}

TEST(ImageUsage, CanonicalImageCompletesTheRegistryLibraryAndTag) {
  EXPECT_EQ(CanonicalImage("busybox"), "docker.io/library/busybox:latest");
  EXPECT_EQ(CanonicalImage("org/agent:1"), "docker.io/org/agent:1");
  EXPECT_EQ(CanonicalImage("index.docker.io/org/agent"), "docker.io/org/agent:latest");
  EXPECT_EQ(CanonicalImage("localhost/a"), "localhost/a:latest");
  EXPECT_EQ(CanonicalImage("registry:5000/team/agent"), "registry:5000/team/agent:latest");
  EXPECT_EQ(CanonicalImage("ghcr.io/o/a:2026-11"), "ghcr.io/o/a:2026-11");
  EXPECT_EQ(CanonicalImage("ghcr.io/o/a@sha256:0f"), "ghcr.io/o/a@sha256:0f");
}

class ImageUsageFiles : public ::testing::Test {
 protected:
  std::string Dir() const { return dir_.str() + "/local/sandbox-images"; }
  // Sets a record's last use `ago` before now, as if it had been made then.
  void Age(const std::string& file, Millis ago) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    timespec then = {now.tv_sec - static_cast<time_t>(ago / 1000), 0};
    timespec times[2] = {then, then};
    ASSERT_EQ(utimensat(AT_FDCWD, (Dir() + "/" + file).c_str(), times, 0), 0) << file;
  }
  static Millis WallNow() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  testing::TempDir dir_;
};

TEST_F(ImageUsageFiles, AUseIsAFileNamedAfterTheImageWhoseTimeIsTheLastUse) {
  EXPECT_EQ(ImageUsesDir(dir_.str() + "/local"), Dir());
  Result<std::vector<ImageUse>> none = ListImageUses(Dir());
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_TRUE(none->empty()) << "no directory yet: nothing recorded";

  Millis before = WallNow();
  ASSERT_TRUE(RecordImageUse(Dir(), "localhost/agents:2026-11").ok());
  ASSERT_TRUE(RecordImageUse(Dir(), ".hidden/x%y").ok());
  EXPECT_TRUE(std::filesystem::exists(Dir() + "/localhost%2Fagents%3A2026-11"));
  std::ifstream content(Dir() + "/localhost%2Fagents%3A2026-11");
  std::string line;
  std::getline(content, line);
  EXPECT_EQ(line, "localhost/agents:2026-11");
  std::ofstream(Dir() + "/stray.tmp%") << "not a record\n";

  Age("localhost%2Fagents%3A2026-11", 10 * kHour);
  Result<std::vector<ImageUse>> uses = ListImageUses(Dir());
  ASSERT_TRUE(uses.ok()) << uses.error().message();
  ASSERT_EQ(uses->size(), 2u);
  EXPECT_EQ((*uses)[0].image, ".hidden/x%y");
  EXPECT_GE((*uses)[0].last_used_ms + 1000, before);
  EXPECT_EQ((*uses)[1].image, "localhost/agents:2026-11");
  EXPECT_LE((*uses)[1].last_used_ms, before - 9 * kHour);

  // Used again: its time is now's.
  ASSERT_TRUE(RecordImageUse(Dir(), "localhost/agents:2026-11").ok());
  uses = ListImageUses(Dir());
  ASSERT_TRUE(uses.ok());
  EXPECT_GE((*uses)[1].last_used_ms + 1000, before);

  ASSERT_TRUE(ForgetImageUse(Dir(), "localhost/agents:2026-11").ok());
  ASSERT_TRUE(ForgetImageUse(Dir(), "localhost/never-recorded").ok());
  uses = ListImageUses(Dir());
  ASSERT_TRUE(uses.ok());
  EXPECT_EQ(*uses, (std::vector<ImageUse>{{".hidden/x%y", (*uses)[0].last_used_ms}}));
}

TEST_F(ImageUsageFiles, ARecordThatCannotBeMadeIsAnErrorNamingTheImage) {
  std::ofstream(dir_.str() + "/local") << "a file where the directory should be\n";
  Status s = RecordImageUse(Dir(), "localhost/a");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(s.error().message().find("'localhost/a'"), std::string::npos) << s.error().message();
  EXPECT_FALSE(RecordImageUse(Dir(), "").ok());
}

}  // namespace
}  // namespace tx::worker
