#include "exec/child.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "core/sanitizers.h"
#include "exec/capped_log.h"
#include "exec/cgroup.h"
#include "exec/program.h"
#include "exec/unique_fd.h"

namespace tx::exec {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Reads per PumpOutput call are bounded so that a child printing without pause cannot keep the
// owner's loop from checking its deadlines.
constexpr std::size_t kReadChunk = 256 * 1024;
constexpr int kPipeSize = 256 * 1024;
constexpr int kMaxReadsPerPump = 16;
// After the leader exits: how long output may keep arriving, and how long a quiet pipe held open
// by a process outside the group is waited for.
constexpr auto kDrainBudget = std::chrono::seconds(1);
constexpr auto kDrainQuiet = std::chrono::milliseconds(100);

std::string ErrnoText(int err) { return std::generic_category().message(err); }

Error SpawnError(const std::string& program, const std::string& what) {
  return Error::Unavailable("spawn '" + program + "': " + what);
}

// What the child reports on the error pipe before it gives up (or, for kCgroupJoin, carries on).
enum Stage : int { kSetup = 1, kChdir, kRlimit, kExec, kCgroupJoin };
struct Report {
  int stage;
  int err;
  int resource;  // kRlimit: which limit
};

struct Rlimit {
  int resource;
  rlim_t value;
};

// Everything the child needs between fork and exec, prepared by the parent so that the child
// only makes async-signal-safe calls (no allocation, no locks, no PATH lookup).
struct ChildPlan {
  pid_t parent = 0;
  int parent_death_signal = SIGKILL;
  bool ignore_sighup = false;
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: stay in the parent's directory
  int devnull = -1;
  int out_w = -1;
  int report_w = -1;
  const int* cgroup_fds = nullptr;
  std::size_t cgroup_fd_count = 0;
  std::array<Rlimit, 4> rlimits{};  // at most RLIMIT_CPU, _NOFILE, _NPROC and _AS
  std::size_t rlimit_count = 0;
  // RLIMIT_AS to fall back to when joining the memory cgroup fails; 0 = none.
  rlim_t fallback_as = 0;
  int max_fd = 0;  // close_range fallback: close descriptors below this
};

void Send(int fd, const Report& r) {
  // A short write cannot happen for a pipe write of fewer than PIPE_BUF bytes.
  ssize_t n = ::write(fd, &r, sizeof r);
  (void)n;
}

// Closes every descriptor from 3 up except `keep`. close_range needs Linux 5.9.
void CloseOtherFds(int keep, int max_fd) {
  bool ok = true;
#ifdef SYS_close_range
  if (keep > 3) ok = ::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u) == 0;
  if (ok) ok = ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0;
#else
  ok = false;
#endif
  if (ok) return;
  for (int fd = 3; fd < max_fd; ++fd) {
    if (fd != keep) ::close(fd);
  }
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  auto fail = [&p](int stage, int err, int resource = 0) {
    Send(p.report_w, Report{stage, err, resource});
    ::_exit(127);
  };
  // Our own process group, so that signals to the group reach grandchildren and nothing else.
  ::setpgid(0, 0);
  // And no controlling terminal: an agent of a worker started from a shell must not reach it
  // (/dev/tty, or keystrokes pushed into it with TIOCSTI).
  if (int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC); tty >= 0) {
    ::ioctl(tty, TIOCNOTTY);
    ::close(tty);
  }
  if (::prctl(PR_SET_PDEATHSIG, p.parent_death_signal) != 0) fail(kSetup, errno);
  // The parent may have died before the signal was armed; then nobody would ever deliver it.
  if (::getppid() != p.parent) ::_exit(127);

  // The worker may ignore or handle signals (SIGPIPE, SIGTERM, ...); the agent starts clean.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  if (p.ignore_sighup) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigemptyset(&ign.sa_mask);
    ::sigaction(SIGHUP, &ign, nullptr);
  }

  // Join the cgroup first, so that everything after is accounted to it. Not fatal: the limit
  // falls back to RLIMIT_AS and the parent warns.
  for (std::size_t i = 0; i < p.cgroup_fd_count; ++i) {
    if (::write(p.cgroup_fds[i], "0", 1) != 1) {
      Send(p.report_w, Report{kCgroupJoin, errno, 0});
      if (p.fallback_as > 0) {
        const rlimit lim{p.fallback_as, p.fallback_as};
        ::setrlimit(RLIMIT_AS, &lim);
      }
      break;
    }
  }

  if (::dup2(p.devnull, STDIN_FILENO) < 0) fail(kSetup, errno);
  if (::dup2(p.out_w, STDOUT_FILENO) < 0) fail(kSetup, errno);
  if (::dup2(p.out_w, STDERR_FILENO) < 0) fail(kSetup, errno);
  if (p.cwd != nullptr && ::chdir(p.cwd) != 0) fail(kChdir, errno);
  for (std::size_t i = 0; i < p.rlimit_count; ++i) {
    const rlimit lim{p.rlimits[i].value, p.rlimits[i].value};
    if (::setrlimit(p.rlimits[i].resource, &lim) != 0) fail(kRlimit, errno, p.rlimits[i].resource);
  }
  CloseOtherFds(p.report_w, p.max_fd);

  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(p.program, p.argv, p.envp);
  fail(kExec, errno);
  ::_exit(127);  // not reached: fail() exits
}

// Starts RunChild(plan) in a new process. The child shares the parent's memory and the parent
// waits until it has exec'd or exited (clone with CLONE_VM | CLONE_VFORK, as posix_spawn does),
// so nothing of the worker's address space is copied and no page of it is faulted afterwards —
// most of what a spawn cost. RunChild only reads the plan and makes system calls, which is what
// sharing the memory allows. Under AddressSanitizer, whose shadow memory the child would poison
// on its own stack, a plain fork.
#if defined(TX_ADDRESS_SANITIZER)
pid_t StartChild(const ChildPlan& plan) {
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(plan);
  return pid;
}
#else
int ChildEntry(void* plan) { RunChild(*static_cast<const ChildPlan*>(plan)); }

pid_t StartChild(const ChildPlan& plan) {
  // Pages the child never touches cost nothing; the lowest is a guard, so an overflow faults
  // rather than writes into the memory it shares.
  constexpr std::size_t kStackSize = 256 * 1024;
  const std::size_t guard = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* stack = ::mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  if (::mprotect(stack, guard, PROT_NONE) != 0) {
    const int err = errno;
    ::munmap(stack, kStackSize);
    errno = err;
    return -1;
  }
  const pid_t pid = ::clone(ChildEntry, static_cast<char*>(stack) + kStackSize,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<ChildPlan*>(&plan));
  const int err = errno;
  ::munmap(stack, kStackSize);  // the child no longer runs on it: it has exec'd or exited
  errno = err;
  return pid;
}
#endif

std::string RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_AS:
      return "RLIMIT_AS";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_NPROC:
      return "RLIMIT_NPROC";
  }
  return "rlimit " + std::to_string(resource);
}

// argv[0] as execvp would find it, but in the parent (the child may not allocate) and with the
// PATH of the child's environment. A relative PATH entry is relative to the child's cwd.
Result<std::string> ResolveProgram(const SpawnSpec& spec) {
  Result<std::string> found = FindProgram(spec.argv[0], spec.env, spec.cwd);
  if (!found.ok()) return SpawnError(spec.argv[0], found.error().message());
  return found;
}

// Waits until the child has output or has exited, or `timeout` passes.
void AwaitActivity(const Child& child, std::chrono::milliseconds timeout) {
  std::array<pollfd, 2> fds{};
  nfds_t n = 0;
  if (child.output_fd() >= 0) fds[n++] = {child.output_fd(), POLLIN, 0};
  if (child.exit_fd() >= 0) fds[n++] = {child.exit_fd(), POLLIN, 0};
  // Without a pidfd nothing signals the exit: look again soon.
  if (child.exit_fd() < 0) timeout = std::min(timeout, std::chrono::milliseconds(20));
  ::poll(fds.data(), n, static_cast<int>(timeout.count()));
}

}  // namespace

// The pipe and the log file.
struct Child::Output {
  UniqueFd pipe;            // read end, non-blocking; closed at EOF
  CappedLog log;            // invalid: discard output
  std::uint64_t total = 0;  // bytes the child has written
  std::function<void(std::string_view)> observer;
  // Allocated on the first read: a child writing straight to its log never needs it, and an
  // orchestrator holds dozens of such children.
  std::vector<char> buf;
};

struct Child::Group {
  Cgroup cgroup;
};

Result<Child> Child::Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return Error::InvalidArgument("spawn: empty argv");
  }
  const std::string& name = spec.argv[0];
  const ResourceLimits& limits = spec.limits;
  if (limits.cpu_percent && *limits.cpu_percent <= 0) {
    return Error::InvalidArgument("spawn '" + name + "': cpu_percent must be positive");
  }
  if (limits.memory_bytes && *limits.memory_bytes == 0) {
    return Error::InvalidArgument("spawn '" + name + "': memory_bytes must be positive");
  }
  TX_ASSIGN_OR_RETURN(const std::string program, ResolveProgram(spec));

  Child child;
  child.out_ = std::make_unique<Output>();
  Output& out = *child.out_;
  if (!spec.log_path.empty()) {
    // Through the pipe, the log is made when the child first prints.
    Result<CappedLog> log = spec.output_straight_to_log
                                ? CappedLog::Open(spec.log_path, spec.log_cap_bytes)
                                : CappedLog::OpenOnFirstWrite(spec.log_path, spec.log_cap_bytes);
    if (!log.ok()) return SpawnError(name, log.error().message());
    out.log = std::move(*log);
  }

  UniqueFd devnull(AboveStdio(::open("/dev/null", O_RDONLY | O_CLOEXEC)));
  if (!devnull.valid()) return SpawnError(name, "/dev/null: " + ErrnoText(errno));
  int fds[2];
  UniqueFd out_w;
  const bool direct = spec.output_straight_to_log && out.log.valid();
  if (direct) {
    out_w.Reset(::fcntl(out.log.fd(), F_DUPFD_CLOEXEC, 3));
  } else {
    if (::pipe2(fds, O_CLOEXEC) != 0) return SpawnError(name, "pipe: " + ErrnoText(errno));
    out.pipe.Reset(AboveStdio(fds[0]));
    out_w.Reset(AboveStdio(fds[1]));
  }
  if (::pipe2(fds, O_CLOEXEC) != 0) return SpawnError(name, "pipe: " + ErrnoText(errno));
  UniqueFd report_r(fds[0]);
  UniqueFd report_w(AboveStdio(fds[1]));
  if ((!direct && !out.pipe.valid()) || !out_w.valid() || !report_w.valid()) {
    return SpawnError(name, "fcntl: " + ErrnoText(errno));
  }
  if (!direct && ::fcntl(out.pipe.get(), F_SETFL, O_NONBLOCK) != 0) {
    return SpawnError(name, "fcntl: " + ErrnoText(errno));
  }
  // A larger pipe for an agent that prints megabytes a second: a quarter of the wake-ups and
  // reads. Best effort: the default (64 KiB) or the system's cap stays otherwise.
  if (!direct) (void)::fcntl(out.pipe.get(), F_SETPIPE_SZ, kPipeSize);

  ChildPlan plan;
  std::vector<Rlimit> rlimits;
  if (limits.cpu_seconds) rlimits.push_back({RLIMIT_CPU, *limits.cpu_seconds});
  if (limits.open_files) rlimits.push_back({RLIMIT_NOFILE, *limits.open_files});
  if (limits.processes) rlimits.push_back({RLIMIT_NPROC, *limits.processes});
  std::optional<std::uint64_t> address_space = limits.address_space_bytes;
  // RLIMIT_AS stands in for a memory cgroup that cannot be had. It counts address space, not
  // memory in use, so it is stricter than the cgroup; never looser than an explicit one.
  std::uint64_t fallback_as = 0;
  if (limits.memory_bytes) {
    fallback_as = std::min(*limits.memory_bytes,
                           address_space.value_or(std::numeric_limits<std::uint64_t>::max()));
  }
  if (limits.memory_bytes || limits.cpu_percent) {
    Cgroup cg = Cgroup::Create(CurrentCgroupLayout(), limits);
    if (!cg.problem().empty()) {
      child.limits_warning_ = "resource limits: " + cg.problem();
      if (limits.memory_bytes && !cg.memory_limited()) {
        child.limits_warning_ +=
            "; memory is limited with RLIMIT_AS=" + std::to_string(fallback_as) + " instead";
        address_space = fallback_as;
      }
      if (limits.cpu_percent && !cg.cpu_limited()) child.limits_warning_ += "; cpu is not limited";
    }
    if (cg.memory_limited()) plan.fallback_as = static_cast<rlim_t>(fallback_as);
    if (!cg.empty()) {
      child.cgroup_ = std::make_unique<Group>();
      child.cgroup_->cgroup = std::move(cg);
    }
  }
  if (address_space) rlimits.push_back({RLIMIT_AS, *address_space});
  std::vector<int> cgroup_fds;
  if (child.cgroup_) cgroup_fds = child.cgroup_->cgroup.procs_fds();

  // execve takes char* const[] but does not write through it.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  plan.parent = ::getpid();
  plan.parent_death_signal = spec.parent_death_signal;
  plan.ignore_sighup = spec.ignore_sighup;
  plan.program = program.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.devnull = devnull.get();
  plan.out_w = out_w.get();
  plan.report_w = report_w.get();
  plan.cgroup_fds = cgroup_fds.data();
  plan.cgroup_fd_count = cgroup_fds.size();
  for (const Rlimit& r : rlimits) plan.rlimits[plan.rlimit_count++] = r;
  rlimit nofile{};
  plan.max_fd = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < (1u << 20)
                    ? static_cast<int>(nofile.rlim_cur)
                    : 1 << 20;

  // Signals stay blocked across the start so that no handler of the worker runs in the child
  // before it has reset the dispositions; the child unblocks them just before exec.
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = StartChild(plan);
  const int fork_err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return SpawnError(name, "fork: " + ErrnoText(fork_err));
  // Also in the child: whichever runs first, the group exists before either goes on. EACCES
  // (the child already exec'd) means the child did it.
  ::setpgid(pid, pid);
  child.pid_ = pid;  // from here on, an early return kills and reaps it (~Child)
  child.last_output_at_ = SteadyClock::now();
  out_w.Reset();
  report_w.Reset();
  devnull.Reset();
  // The child has the log as its stdout and stderr; a descriptor kept here would hold the file
  // (its disk space, once the child rotates it away) for the child's whole life.
  if (direct) out.log = CappedLog();

  // EOF on the report pipe: the child exec'd (CLOEXEC closed it) or died.
  std::optional<Report> fatal;
  int join_err = 0;
  while (true) {
    Report r{};
    ssize_t n = ::read(report_r.get(), &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof r)) break;
    if (r.stage == kCgroupJoin) {
      join_err = r.err;
    } else if (!fatal) {
      fatal = r;
    }
  }
  if (fatal) {
    const std::string err = ErrnoText(fatal->err);
    switch (fatal->stage) {
      case kExec:
        return SpawnError(name, err);
      case kChdir:
        return SpawnError(name, "cwd '" + spec.cwd + "': " + err);
      case kRlimit:
        return SpawnError(name, "setrlimit " + RlimitName(fatal->resource) + ": " + err);
      default:
        return SpawnError(name, "child setup: " + err);
    }
  }
  if (join_err != 0) {
    if (!child.limits_warning_.empty()) child.limits_warning_ += "; ";
    child.limits_warning_ += "resource limits: cannot join the cgroup: " + ErrnoText(join_err);
    if (plan.fallback_as > 0) {
      child.limits_warning_ +=
          "; memory is limited with RLIMIT_AS=" + std::to_string(fallback_as) + " instead";
    }
  }

#ifdef SYS_pidfd_open
  child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (child.pidfd_ < 0) child.pidfd_ = -1;  // ENOSYS before Linux 5.3: exit_fd() is -1
#endif
  return child;
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      reaped_(other.reaped_.load()),
      outcome_(std::move(other.outcome_)),
      limits_warning_(std::move(other.limits_warning_)),
      last_output_at_(other.last_output_at_),
      out_(std::move(other.out_)),
      cgroup_(std::move(other.cgroup_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Reset();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    reaped_ = other.reaped_.load();
    outcome_ = std::move(other.outcome_);
    limits_warning_ = std::move(other.limits_warning_);
    last_output_at_ = other.last_output_at_;
    out_ = std::move(other.out_);
    cgroup_ = std::move(other.cgroup_);
  }
  return *this;
}

Child::~Child() { Reset(); }

void Child::Reset() noexcept {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    if (cgroup_) cgroup_->cgroup.KillMembers();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  out_.reset();
  cgroup_.reset();
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  pid_ = -1;
}

void Child::SetOutputObserver(std::function<void(std::string_view)> observer) {
  if (out_) out_->observer = std::move(observer);
}

int Child::output_fd() const { return out_ && out_->pipe.valid() ? out_->pipe.get() : -1; }

std::uint64_t Child::output_bytes() const { return out_ ? out_->total : 0; }

bool Child::PumpOutput() {
  if (!out_ || !out_->pipe.valid()) return false;
  Output& out = *out_;
  if (out.buf.empty()) out.buf.resize(kReadChunk);
  for (int i = 0; i < kMaxReadsPerPump; ++i) {
    ssize_t n = ::read(out.pipe.get(), out.buf.data(), out.buf.size());
    if (n > 0) {
      out.total += static_cast<std::uint64_t>(n);
      last_output_at_ = SteadyClock::now();
      std::string_view chunk(out.buf.data(), static_cast<std::size_t>(n));
      out.log.Append(chunk);
      if (out.observer) out.observer(chunk);
      // Less than asked for: the pipe is empty now, and one more read would only say so.
      if (static_cast<std::size_t>(n) < out.buf.size()) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    out.pipe.Reset();  // EOF (or a read error, which no later read would fix)
    return false;
  }
  return true;
}

void Child::DrainAfterExit() {
  if (!out_) return;
  const auto deadline = SteadyClock::now() + kDrainBudget;
  while (PumpOutput()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    pollfd p{out_->pipe.get(), POLLIN, 0};
    // Quiet for a while yet not at EOF: a process that left the group holds the pipe open.
    if (::poll(&p, 1, static_cast<int>(std::min(left, kDrainQuiet).count())) == 0) break;
  }
  out_->pipe.Reset();
}

void Child::Reap() noexcept {
  // The zombie leader keeps the group id from being reused, so this reaches only its group.
  ::kill(-pid_, SIGKILL);
  if (cgroup_) cgroup_->cgroup.KillMembers();
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    outcome_ = ExitOutcome::FromWaitStatus(status);
    int sig = outcome_->signal;
    outcome_->sent_by_tx = sig > 0 && sig < 64 && (sent_.load() >> sig & 1) != 0;
  } else {
    // Someone else reaped it (SIGCHLD set to SIG_IGN): the status is gone.
    ExitOutcome lost;
    lost.exit_code = -1;
    lost.detail = "exit status lost: " + ErrnoText(errno);
    outcome_ = lost;
  }
  reaped_ = true;
  DrainAfterExit();
  cgroup_.reset();
}

std::optional<ExitOutcome> Child::TryWait() {
  if (pid_ <= 0) return std::nullopt;
  if (reaped_) return outcome_;
  PumpOutput();
  // WNOWAIT: look without reaping, so the group can still be killed safely (see Reap).
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
    if (info.si_pid == 0) return std::nullopt;
  } else if (errno == EINTR) {
    return std::nullopt;
  }
  Reap();
  return outcome_;
}

ExitOutcome Child::Wait() {
  while (true) {
    if (std::optional<ExitOutcome> o = TryWait()) return *o;
    if (pid_ <= 0) {
      ExitOutcome none;  // a moved-from Child: there is nothing to wait for
      none.exit_code = -1;
      none.detail = "no child";
      return none;
    }
    AwaitActivity(*this, std::chrono::milliseconds(200));
  }
}

void Child::Signal(int sig) const {
  if (pid_ <= 0 || reaped_) return;
  if (sig > 0 && sig < 64) sent_ |= std::uint64_t{1} << sig;
  ::kill(-pid_, sig);
}

StopResult Terminate(Child& child, std::chrono::milliseconds grace) {
  if (std::optional<ExitOutcome> o = child.TryWait()) return {StopPhase::kAlreadyExited, *o};
  child.Signal(SIGTERM);
  // A frozen group would act on SIGTERM only once continued.
  child.Signal(SIGCONT);
  const auto deadline = SteadyClock::now() + grace;
  while (true) {
    if (std::optional<ExitOutcome> o = child.TryWait()) return {StopPhase::kTerminated, *o};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) break;
    AwaitActivity(child, std::min(left, std::chrono::milliseconds(50)));
  }
  child.Signal(SIGKILL);
  // SIGKILL cannot be caught: this wait is short unless the process is stuck in the kernel.
  return {StopPhase::kKilled, child.Wait()};
}

void Freeze(const Child& child) { child.Signal(SIGSTOP); }

void Thaw(const Child& child) { child.Signal(SIGCONT); }

}  // namespace tx::exec
