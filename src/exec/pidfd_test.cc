#include "exec/pidfd.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace tx::exec {
namespace {

// A child that waits for a signal; reaped (killed first if need be) when this goes.
class Sleeper {
 public:
  Sleeper() : pid_(::fork()) {
    if (pid_ == 0) {
      for (;;) ::pause();
    }
  }
  ~Sleeper() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      Reap();
    }
  }
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

  pid_t pid() const { return pid_; }
  // The signal that ended it, once it has ended.
  int Reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  bool Running() {
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
};

TEST(Pidfd, AnOpenedProcessIsSignalledThroughItsHandleAndItsExitIsSeen) {
  Sleeper child;
  ASSERT_GT(child.pid(), 0);
  ProcessHandle h = OpenProcess(child.pid());
  ASSERT_TRUE(h.pidfd.valid());
  EXPECT_FALSE(h.gone);
  EXPECT_FALSE(ExitsWithin(h.pidfd.get(), 0));

  SignalProcess(h.pidfd.get(), child.pid(), SIGTERM);
  EXPECT_TRUE(ExitsWithin(h.pidfd.get(), 10'000));
  EXPECT_EQ(child.Reap(), SIGTERM);
}

TEST(Pidfd, AProcessReapedIsGoneAndAnEmptyHandleNeverExits) {
  pid_t pid;
  {
    Sleeper child;
    pid = child.pid();
  }  // killed and reaped: its pid names no process (short of a reuse in these microseconds)
  ProcessHandle h = OpenProcess(pid);
  EXPECT_TRUE(h.gone);
  EXPECT_FALSE(h.pidfd.valid());
  EXPECT_FALSE(ExitsWithin(-1, 0));
}

// The point of signalling through the handle: once its process is gone, the pid given beside it
// (here another live process's, as after a reuse) is not signalled.
TEST(Pidfd, AHandleWhoseProcessIsGoneSignalsNoOtherProcessByItsPid) {
  Sleeper first;
  ProcessHandle h = OpenProcess(first.pid());
  ASSERT_TRUE(h.pidfd.valid());
  ::kill(first.pid(), SIGKILL);
  ASSERT_EQ(first.Reap(), SIGKILL);

  Sleeper second;
  SignalProcess(h.pidfd.get(), second.pid(), SIGKILL);
  EXPECT_TRUE(second.Running());

  // Without a handle the pid is all there is.
  SignalProcess(-1, second.pid(), SIGKILL);
  EXPECT_EQ(second.Reap(), SIGKILL);
}

}  // namespace
}  // namespace tx::exec
