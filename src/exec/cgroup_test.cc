#include "exec/cgroup.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tx::exec {
namespace {

using namespace std::chrono_literals;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- ParseCgroupLayout ----------------------------------------------------------------------

// A hybrid machine: v1 controllers plus an empty unified hierarchy (like this one).
constexpr const char* kHybridMountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
    "50 22 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";
constexpr const char* kHybridSelf =
    "9:name=systemd:/user.slice\n"
    "6:freezer:/\n"
    "4:memory:/process_api/abc\n"
    "1:cpu,cpuacct:/\n"
    "0::/user.slice\n";

TEST(CgroupLayout, HybridMachineMapsEachV1ControllerAndTheUnifiedDirectory) {
  CgroupLayout layout = ParseCgroupLayout(kHybridMountinfo, kHybridSelf);
  EXPECT_EQ(layout.unified, "/sys/fs/cgroup/unified/user.slice");
  EXPECT_EQ(layout.v1.at("memory"), "/sys/fs/cgroup/memory/process_api/abc");
  EXPECT_EQ(layout.v1.at("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(layout.v1.at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(layout.v1.at("freezer"), "/sys/fs/cgroup/freezer");
  EXPECT_EQ(layout.v1.count("systemd"), 0u) << "named hierarchies have no controller";
  EXPECT_EQ(layout.v1.count("xattr"), 0u) << "mount options are not controllers";
}

TEST(CgroupLayout, PureV2Machine) {
  CgroupLayout layout =
      ParseCgroupLayout("25 21 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
                        "0::/system.slice/tx.service\n");
  EXPECT_EQ(layout.unified, "/sys/fs/cgroup/system.slice/tx.service");
  EXPECT_TRUE(layout.v1.empty());
  EXPECT_EQ(
      ParseCgroupLayout("25 21 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/\n").unified,
      "/sys/fs/cgroup");
}

TEST(CgroupLayout, MountOfASubtreeAndEscapedMountPoints) {
  // A container sees only its own subtree, mounted at the usual place.
  CgroupLayout layout = ParseCgroupLayout(
      "35 31 0:32 /docker/c1 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "36 31 0:33 / /mnt/my\\040cgroups rw - cgroup cgroup rw,cpu\n"
      "37 31 0:34 /other /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
      "4:memory:/docker/c1/job\n"
      "3:cpu:/a\n"
      "2:pids:/docker/c1\n");
  EXPECT_EQ(layout.v1.at("memory"), "/sys/fs/cgroup/memory/job");
  EXPECT_EQ(layout.v1.at("cpu"), "/mnt/my cgroups/a");
  EXPECT_EQ(layout.v1.count("pids"), 0u) << "that mount does not show our cgroup";
  EXPECT_TRUE(layout.unified.empty());
}

TEST(CgroupLayout, GarbageGivesAnEmptyLayout) {
  EXPECT_EQ(ParseCgroupLayout("", ""), CgroupLayout{});
  EXPECT_EQ(ParseCgroupLayout("nonsense\n- -\n", "x\n::\n"), CgroupLayout{});
}

// --- Create: where it cannot ----------------------------------------------------------------

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tx-cgroup-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CgroupTest, NoControllerIsReportedNotFatal) {
  ResourceLimits limits;
  limits.memory_bytes = 64ull << 20;
  limits.cpu_percent = 50;
  Cgroup cg = Cgroup::Create(CgroupLayout{}, limits);
  EXPECT_FALSE(cg.memory_limited());
  EXPECT_FALSE(cg.cpu_limited());
  EXPECT_TRUE(cg.empty());
  EXPECT_TRUE(Contains(cg.problem(), "memory: no memory controller")) << cg.problem();
  EXPECT_TRUE(Contains(cg.problem(), "cpu: no cpu controller")) << cg.problem();
}

TEST_F(CgroupTest, UnifiedHierarchyWithoutTheControllerIsReported) {
  std::ofstream(dir_ + "/cgroup.controllers") << "pids io\n";
  ResourceLimits limits;
  limits.memory_bytes = 64ull << 20;
  Cgroup cg = Cgroup::Create(CgroupLayout{dir_, {}}, limits);
  EXPECT_FALSE(cg.memory_limited());
  EXPECT_TRUE(Contains(cg.problem(), "no memory controller (neither cgroup v2 at " + dir_))
      << cg.problem();
}

TEST_F(CgroupTest, ADirectoryThatIsNotACgroupIsReportedAndLeftClean) {
  // mkdir works in a plain directory, but there is no cgroup.procs to join by.
  ResourceLimits limits;
  limits.memory_bytes = 64ull << 20;
  Cgroup cg = Cgroup::Create(CgroupLayout{"", {{"memory", dir_}}}, limits);
  EXPECT_FALSE(cg.memory_limited());
  EXPECT_TRUE(Contains(cg.problem(), "cgroup.procs")) << cg.problem();
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "the directory made is removed again";
}

TEST_F(CgroupTest, MissingParentIsReported) {
  ResourceLimits limits;
  limits.cpu_percent = 25;
  Cgroup cg = Cgroup::Create(CgroupLayout{"", {{"cpu", dir_ + "/absent"}}}, limits);
  EXPECT_FALSE(cg.cpu_limited());
  EXPECT_TRUE(Contains(cg.problem(), "cpu: cannot create " + dir_ + "/absent/tx-")) << cg.problem();
}

TEST_F(CgroupTest, ProbeWithoutControllersSaysNeitherLimitApplies) {
  LimitsProbe probe = ProbeLimits(CgroupLayout{});
  EXPECT_FALSE(probe.memory);
  EXPECT_FALSE(probe.cpu);
  EXPECT_FALSE(probe.v2);
  EXPECT_TRUE(Contains(probe.problem, "memory: no memory controller")) << probe.problem;
  EXPECT_TRUE(Contains(probe.problem, "cpu: no cpu controller")) << probe.problem;
}

TEST_F(CgroupTest, ProbeLeavesNothingBehind) {
  LimitsProbe probe = ProbeLimits(CgroupLayout{"", {{"memory", dir_}, {"cpu", dir_}}});
  EXPECT_FALSE(probe.memory);
  EXPECT_TRUE(Contains(probe.problem, "cgroup.procs")) << probe.problem;
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "the probe's directories are removed";
}

TEST(CgroupReal, ProbeHereAgreesWithAGroupMadeForTheSameLimitsAndLeavesNoGroup) {
  CgroupLayout layout = CurrentCgroupLayout();
  LimitsProbe probe = ProbeLimits(layout);
  std::vector<std::string> parents;
  if (!layout.unified.empty()) parents.push_back(layout.unified);
  for (const auto& [controller, dir] : layout.v1) parents.push_back(dir);
  const std::string mine = "tx-" + std::to_string(::getpid()) + "-";
  for (const std::string& parent : parents) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
      EXPECT_FALSE(entry.path().filename().string().starts_with(mine)) << entry.path();
    }
  }
  ResourceLimits limits;
  limits.memory_bytes = 1ull << 30;
  limits.cpu_percent = 100;
  Cgroup cg = Cgroup::Create(layout, limits);
  EXPECT_EQ(probe.memory, cg.memory_limited()) << probe.problem;
  EXPECT_EQ(probe.cpu, cg.cpu_limited()) << probe.problem;
}

// --- Create: where it can (this machine, as root) --------------------------------------------

TEST(CgroupReal, LimitsAreWrittenMembersKilledAndDirectoriesRemoved) {
  ResourceLimits limits;
  limits.memory_bytes = 64ull << 20;
  limits.cpu_percent = 150;
  std::vector<std::string> dirs;
  pid_t member = -1;
  {
    Cgroup cg = Cgroup::Create(CurrentCgroupLayout(), limits);
    if (!cg.memory_limited()) GTEST_SKIP() << "no memory cgroup here: " << cg.problem();
    dirs = cg.dirs();
    ASSERT_FALSE(dirs.empty());
    bool saw_memory = false;
    bool saw_cpu = false;
    for (const std::string& d : dirs) {
      EXPECT_TRUE(Contains(d, "/tx-" + std::to_string(::getpid()) + "-")) << d;
      if (std::filesystem::exists(d + "/memory.limit_in_bytes")) {
        EXPECT_EQ(ReadAll(d + "/memory.limit_in_bytes"), "67108864\n");
        saw_memory = true;
      }
      if (std::filesystem::exists(d + "/memory.max")) {
        EXPECT_EQ(ReadAll(d + "/memory.max"), "67108864\n");
        saw_memory = true;
      }
      if (std::filesystem::exists(d + "/cpu.cfs_quota_us")) {
        EXPECT_EQ(ReadAll(d + "/cpu.cfs_quota_us"), "150000\n");
        EXPECT_EQ(ReadAll(d + "/cpu.cfs_period_us"), "100000\n");
        saw_cpu = true;
      }
      if (std::filesystem::exists(d + "/cpu.max")) {
        EXPECT_EQ(ReadAll(d + "/cpu.max"), "150000 100000\n");
        saw_cpu = true;
      }
    }
    EXPECT_TRUE(saw_memory);
    EXPECT_EQ(saw_cpu, cg.cpu_limited()) << cg.problem();

    // A process joins the way the Child's child does: write "0" to each cgroup.procs.
    std::vector<int> fds = cg.procs_fds();
    member = ::fork();
    ASSERT_GE(member, 0);
    if (member == 0) {
      for (int fd : fds) {
        if (::write(fd, "0", 1) != 1) ::_exit(2);
      }
      ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
      ::_exit(3);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (cg.Members() != std::vector<pid_t>{member} &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(cg.Members(), std::vector<pid_t>{member});

    Cgroup moved = std::move(cg);
    EXPECT_TRUE(cg.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
    EXPECT_EQ(moved.dirs(), dirs);
  }  // ~Cgroup: kills the member, removes the directories
  int status = 0;
  ASSERT_EQ(::waitpid(member, &status, 0), member);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  for (const std::string& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

}  // namespace
}  // namespace tx::exec
