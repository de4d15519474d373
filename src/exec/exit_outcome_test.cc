#include "exec/exit_outcome.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>

namespace tx::exec {
namespace {

using Class = ExitOutcome::Class;
using Kind = ExitOutcome::Kind;

int Exited(int code) { return W_EXITCODE(code, 0); }
int Signalled(int sig) { return W_EXITCODE(0, sig); }

TEST(ExitOutcome, ExitZeroIsSuccess) {
  ExitOutcome o = ExitOutcome::FromWaitStatus(Exited(0));
  EXPECT_EQ(o.kind, Kind::kExited);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.signal, 0);
  EXPECT_EQ(o.Classify(), Class::kSuccess);
  EXPECT_EQ(o.Describe(), "exited 0");
}

TEST(ExitOutcome, NonZeroExitIsFailed) {
  for (int code : {1, 2, 127, 255}) {
    ExitOutcome o = ExitOutcome::FromWaitStatus(Exited(code));
    EXPECT_EQ(o.exit_code, code);
    EXPECT_EQ(o.Classify(), Class::kFailed) << code;
    EXPECT_EQ(o.Describe(), "exited " + std::to_string(code));
  }
}

TEST(ExitOutcome, Exit137IsKilledAndExit143IsTerminated) {
  // What a shell reports when the command it waited for died of SIGKILL / SIGTERM.
  ExitOutcome killed = ExitOutcome::FromWaitStatus(Exited(137));
  EXPECT_EQ(killed.kind, Kind::kExited);
  EXPECT_EQ(killed.Classify(), Class::kKilled);
  EXPECT_EQ(killed.Describe(), "exited 137 (killed, possibly out of memory)");
  ExitOutcome terminated = ExitOutcome::FromWaitStatus(Exited(143));
  EXPECT_EQ(terminated.Classify(), Class::kTerminated);
  EXPECT_EQ(terminated.Describe(), "exited 143 (terminated)");
}

TEST(ExitOutcome, SigkillIsKilledWithCode137) {
  ExitOutcome o = ExitOutcome::FromWaitStatus(Signalled(SIGKILL));
  EXPECT_EQ(o.kind, Kind::kSignalled);
  EXPECT_EQ(o.signal, SIGKILL);
  EXPECT_EQ(o.exit_code, 137);
  EXPECT_EQ(o.Classify(), Class::kKilled);
  EXPECT_EQ(o.Describe(), "killed by SIGKILL (possibly out of memory)");
}

TEST(ExitOutcome, SigtermIsTerminatedWithCode143) {
  ExitOutcome o = ExitOutcome::FromWaitStatus(Signalled(SIGTERM));
  EXPECT_EQ(o.signal, SIGTERM);
  EXPECT_EQ(o.exit_code, 143);
  EXPECT_EQ(o.Classify(), Class::kTerminated);
  EXPECT_EQ(o.Describe(), "terminated by SIGTERM");
}

TEST(ExitOutcome, OtherSignalsAreFailures) {
  ExitOutcome segv = ExitOutcome::FromWaitStatus(Signalled(SIGSEGV));
  EXPECT_EQ(segv.exit_code, 128 + SIGSEGV);
  EXPECT_EQ(segv.Classify(), Class::kFailed);
  EXPECT_EQ(segv.Describe(), "killed by SIGSEGV");
  ExitOutcome core = ExitOutcome::FromWaitStatus(Signalled(SIGABRT) | WCOREFLAG);
  EXPECT_EQ(core.signal, SIGABRT);
  EXPECT_EQ(core.Describe(), "killed by SIGABRT (core dumped)");
  EXPECT_EQ(ExitOutcome::FromWaitStatus(Signalled(SIGINT)).Classify(), Class::kFailed);
}

TEST(ExitOutcome, TimedOutAndStalledKeepCodeAndSignal) {
  ExitOutcome ended = ExitOutcome::FromWaitStatus(Signalled(SIGTERM));
  ExitOutcome timed_out = ended.AsTimedOut();
  EXPECT_EQ(timed_out.kind, Kind::kTimedOut);
  EXPECT_EQ(timed_out.signal, SIGTERM);
  EXPECT_EQ(timed_out.exit_code, 143);
  EXPECT_EQ(timed_out.Classify(), Class::kTimedOut);
  EXPECT_EQ(timed_out.Describe(), "timed out");
  EXPECT_EQ(timed_out.detail, "terminated by SIGTERM");

  ExitOutcome stalled = ExitOutcome::FromWaitStatus(Exited(3)).AsStalled();
  EXPECT_EQ(stalled.kind, Kind::kStalled);
  EXPECT_EQ(stalled.exit_code, 3);
  EXPECT_EQ(stalled.Classify(), Class::kStalled);
  EXPECT_EQ(stalled.Describe(), "stalled (no output)");
}

TEST(ExitOutcome, SpawnFailedCarriesTheReason) {
  ExitOutcome o = ExitOutcome::SpawnFailed("spawn 'claude': No such file or directory");
  EXPECT_EQ(o.kind, Kind::kSpawnFailed);
  EXPECT_EQ(o.exit_code, -1);
  EXPECT_EQ(o.Classify(), Class::kSpawnFailed);
  EXPECT_EQ(o.Describe(), "spawn failed: spawn 'claude': No such file or directory");
}

}  // namespace
}  // namespace tx::exec
