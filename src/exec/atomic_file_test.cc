#include "exec/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tx::exec {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tx-atomic-file.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::string dir_;
};

TEST_F(AtomicFileTest, ReplacesTheWholeFileAndLeavesNoTemporary) {
  ASSERT_TRUE(WriteFileAtomically(Path("hb.json"), "{\"a\":1}\n", 0600).ok());
  ASSERT_TRUE(WriteFileAtomically(Path("hb.json"), "{\"b\":2}\n", 0600).ok());
  EXPECT_EQ(Read(Path("hb.json")), "{\"b\":2}\n");
  EXPECT_FALSE(fs::exists(Path(".hb.json.tmp")));
}

TEST_F(AtomicFileTest, WritesEveryByteAndAnEmptyFile) {
  std::string data(3 << 20, 'x');
  data[17] = '\0';
  ASSERT_TRUE(WriteFileAtomically(Path("big"), data, 0600).ok());
  EXPECT_EQ(Read(Path("big")), data);
  ASSERT_TRUE(WriteFileAtomically(Path("big"), "", 0600).ok());
  EXPECT_EQ(fs::file_size(Path("big")), 0u);
}

TEST_F(AtomicFileTest, CreatesTheFileWithTheModeItIsGivenLessTheUmask) {
  mode_t old = ::umask(022);
  Status secret = WriteFileAtomically(Path("token"), "t\n", 0600);
  Status shared = WriteFileAtomically(Path("shared"), "s\n", 0666);
  ::umask(old);
  ASSERT_TRUE(secret.ok() && shared.ok());
  struct stat st {};
  ASSERT_EQ(::stat(Path("token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(Path("shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(AtomicFileTest, ReplacesASymlinkAtThePathWithoutWritingThroughIt) {
  std::ofstream(Path("victim")) << "keep\n";
  fs::create_symlink(Path("victim"), Path("link"));
  ASSERT_TRUE(WriteFileAtomically(Path("link"), "new\n", 0600).ok());
  EXPECT_FALSE(fs::is_symlink(Path("link")));
  EXPECT_EQ(Read(Path("link")), "new\n");
  EXPECT_EQ(Read(Path("victim")), "keep\n");
}

TEST_F(AtomicFileTest, ASymlinkPlantedAtTheTemporaryNameIsNotFollowed) {
  std::ofstream(Path("victim")) << "keep\n";
  fs::create_symlink(Path("victim"), Path(".hb.json.tmp"));
  ASSERT_TRUE(WriteFileAtomically(Path("hb.json"), "new\n", 0600).ok());
  EXPECT_EQ(Read(Path("hb.json")), "new\n");
  EXPECT_EQ(Read(Path("victim")), "keep\n");
}

TEST_F(AtomicFileTest, AFailureNamesThePathAndWhyAndChangesNothing) {
  Status bad = WriteFileAtomically(Path("missing-dir/hb.json"), "x", 0600);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(bad.error().message(),
            "cannot write " + Path("missing-dir/hb.json") + ": No such file or directory");

  // A directory in the way: the rename fails, the old content and no temporary file remain.
  fs::create_directory(Path("taken"));
  std::ofstream(Path("taken/inside")) << "old\n";
  Status refused = WriteFileAtomically(Path("taken"), "x", 0600);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message().rfind("cannot rename into " + Path("taken") + ": ", 0), 0u)
      << refused.error().message();
  EXPECT_EQ(Read(Path("taken/inside")), "old\n");
  EXPECT_FALSE(fs::exists(Path(".taken.tmp")));
}

}  // namespace
}  // namespace tx::exec
