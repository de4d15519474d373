#pragma once
// Child: a running process started from a SpawnSpec. It owns a new process group (pgid == pid)
// and has a parent-death signal (SIGKILL), so a worker killed with SIGKILL takes its agent along.
// Move-only. The destructor kills the group (SIGKILL) and reaps the child if it has not been
// waited for: a child is never left behind, and never a zombie.
//
// The agent's group does not outlive it: once the child (the group leader) has exited, TryWait,
// Wait and Terminate SIGKILL whatever is left of its process group (background grandchildren),
// and of its cgroup when one was made, before they return the outcome.
//
// Caveats of the mechanisms used: the parent-death signal fires when the *thread* that called
// Spawn exits, so spawn from a thread that outlives the child; and the owner must not set
// SIGCHLD to SIG_IGN (the kernel would reap the child and its exit status would be lost).
//
// Output: the child's stdout and stderr share one pipe; the owner calls PumpOutput() when
// output_fd() is readable (or periodically), which appends to the spec's log file, enforcing the
// size cap by keeping the tail, and records the time of the last output.
//
// Not thread-safe: one thread owns a Child. Signalling the group (Signal) is safe from any thread
// as long as the Child is alive.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "exec/exit_outcome.h"
#include "exec/spawn_spec.h"

namespace tx::exec {

class Child {
 public:
  // Starts the child. Between fork and exec the child only makes async-signal-safe calls
  // (setpgid, prctl(PR_SET_PDEATHSIG), sigaction, write to join the cgroup, dup2, chdir,
  // setrlimit, close_range, sigprocmask, execve); posix_spawn cannot set a parent-death signal or
  // rlimits. argv[0] is looked up in PATH by the parent, before the fork. The child's stdin is
  // /dev/null; every other descriptor of the worker is closed.
  //
  // Fails (kUnavailable, "spawn 'ARGV0': <strerror>", e.g. "spawn 'claude': No such file or
  // directory") when the program cannot be found or executed; likewise, with what failed named
  // ("spawn 'ARGV0': cwd '/x': ...", "... log '/y': ...", "... setrlimit RLIMIT_NOFILE: ..."),
  // when the cwd does not exist, the log cannot be opened or an rlimit cannot be set. Then no
  // process is left running (a child that failed before exec has been reaped). kInvalidArgument
  // for an empty argv or a non-positive memory_bytes / cpu_percent. A cgroup limit this machine
  // cannot apply is not a failure: see limits_warning().
  static Result<Child> Spawn(const SpawnSpec& spec);

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }  // also the process group id
  // Readable when the child has output (or closed its end); -1 once output has hit EOF.
  int output_fd() const;
  // Readable when the child has exited (a pidfd); -1 where pidfds are unsupported.
  int exit_fd() const { return pidfd_; }

  // Reads all output available now into the log. Returns false once the pipe is at EOF.
  bool PumpOutput();
  // Hands every chunk of output read from now on to `observer` too, after the log has it (the
  // worker's agent adapter). It is called from PumpOutput, TryWait, Wait and Terminate, on the
  // owner's thread; it must not touch the Child.
  void SetOutputObserver(std::function<void(std::string_view)> observer);
  // Steady-clock time of the last output byte (the spawn time until there is any).
  std::chrono::steady_clock::time_point last_output_at() const { return last_output_at_; }
  std::uint64_t output_bytes() const;  // total bytes the child has written

  // Non-blocking: the outcome once the child has exited (reaped), else nullopt. Once the child
  // has exited it kills the rest of its group and drains the remaining output first (bounded:
  // output of a process that left the group is not waited for), then closes the pipe. Returns
  // the same outcome again on later calls.
  std::optional<ExitOutcome> TryWait();
  // Blocks until the child exits, pumping its output meanwhile; then as TryWait.
  ExitOutcome Wait();
  bool exited() const { return reaped_; }

  // Set when the spec asked for a cgroup limit (memory_bytes, cpu_percent) that could not be
  // applied with a cgroup on this machine (no permission, no controller): says what happened
  // and what was done instead (memory falls back to RLIMIT_AS). Empty otherwise.
  const std::string& limits_warning() const { return limits_warning_; }

  // Sends sig to the whole process group (grandchildren included). ESRCH is not an error. Does
  // nothing once the child has been reaped (its group id may then be reused).
  void Signal(int sig) const;

 private:
  Child() = default;
  // Kills and reaps the child if needed, closes every descriptor and removes the cgroup.
  void Reset() noexcept;
  // The leader has exited (a zombie still holding its pid, so the group id cannot be reused):
  // kill the rest of the group, reap, drain the output.
  void Reap() noexcept;
  void DrainAfterExit();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  // Atomic because Signal may run on another thread while the owner reaps.
  std::atomic<bool> reaped_{false};
  // The signals Signal sent (bit N: signal N), so that an outcome says which deaths were ours.
  mutable std::atomic<std::uint64_t> sent_{0};
  std::optional<ExitOutcome> outcome_;
  std::string limits_warning_;
  std::chrono::steady_clock::time_point last_output_at_{};
  struct Output;  // the pipe and the log file
  std::unique_ptr<Output> out_;
  struct Group;  // the cgroup, when one was made; removed when the Child is destroyed
  std::unique_ptr<Group> cgroup_;
};

enum class StopPhase {
  kAlreadyExited,  // it had exited before any signal
  kTerminated,     // exited within the grace period after SIGTERM
  kKilled,         // needed SIGKILL
};

struct StopResult {
  StopPhase phase;
  ExitOutcome outcome;
};

// Stops the child's whole group in bounded phases: SIGTERM (and SIGCONT, in case it is frozen)
// to the group, wait up to `grace` (pumping output meanwhile), then SIGKILL to the group and
// wait. Returns which phase ended it and the outcome. Any process of the group still alive after
// the leader exits is killed too (SIGKILL to the group), so grandchildren never outlive the call.
// Takes at most `grace` plus about a second (the output drain), unless a process is stuck in
// the kernel, which even SIGKILL cannot end.
StopResult Terminate(Child& child, std::chrono::milliseconds grace);

// Freezes (SIGSTOP) or thaws (SIGCONT) the child's process group. A frozen child neither runs
// nor writes output; it has not exited (TryWait stays empty).
void Freeze(const Child& child);
void Thaw(const Child& child);

}  // namespace tx::exec
