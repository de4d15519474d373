#include "exec/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "core/error.h"

namespace tx::exec {

namespace {

using SteadyClock = std::chrono::steady_clock;

// v1 controllers as they appear in mount options; everything else there is a mount flag.
constexpr std::array<std::string_view, 14> kV1Controllers = {
    "blkio",  "cpu",     "cpuacct",  "cpuset",     "devices", "freezer", "hugetlb",
    "memory", "net_cls", "net_prio", "perf_event", "pids",    "rdma",    "misc"};

bool IsV1Controller(std::string_view name) {
  return std::find(kV1Controllers.begin(), kV1Controllers.end(), name) != kV1Controllers.end();
}

constexpr std::uint64_t kCpuPeriodUs = 100'000;

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const char a = field[i + 1], b = field[i + 2], c = field[i + 3];
      if (a >= '0' && a <= '7' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

struct Mount {
  std::string root;   // the path inside the hierarchy that is mounted
  std::string point;  // where it is mounted
};

// The directory of cgroup `path` (as /proc/self/cgroup names it) under `mount`, or nullopt when
// the mount does not show it.
std::optional<std::string> DirUnder(const Mount& mount, std::string_view path) {
  if (mount.root == "/") return mount.point + (path == "/" ? "" : std::string(path));
  if (path == mount.root) return mount.point;
  if (path.size() > mount.root.size() && path.substr(0, mount.root.size()) == mount.root &&
      path[mount.root.size()] == '/') {
    return mount.point + std::string(path.substr(mount.root.size()));
  }
  return std::nullopt;
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return PosixError("open " + path, errno);
  std::string text;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno != EINTR) {
      return PosixError("read " + path, errno);
    }
  }
}

Status WriteFile(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return PosixError("open " + path, errno);
  ssize_t n;
  do {
    n = ::write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return PosixError("write " + path, errno);
  return Ok();
}

bool HasWord(std::string_view text, std::string_view word) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n' && text[j] != '\t') ++j;
    if (text.substr(i, j - i) == word) return true;
    i = j;
  }
  return false;
}

std::vector<pid_t> ReadPids(const std::string& procs_path) {
  std::vector<pid_t> pids;
  Result<std::string> text = ReadFile(procs_path);
  if (!text.ok()) return pids;
  for (std::string_view line : Split(*text, '\n')) {
    if (line.empty()) continue;
    pid_t pid = 0;
    for (char c : line) pid = pid * 10 + (c - '0');
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

// Whether the unified directory hands out `controller` to groups made beneath it, enabling it in
// its cgroup.subtree_control when it is offered but not yet enabled.
Status EnableV2Controller(const std::string& dir, const std::string& controller) {
  TX_ASSIGN_OR_RETURN(std::string offered, ReadFile(dir + "/cgroup.controllers"));
  if (!HasWord(offered, controller)) {
    return Error::Unavailable("cgroup v2 at " + dir + " offers no " + controller + " controller");
  }
  TX_ASSIGN_OR_RETURN(std::string enabled, ReadFile(dir + "/cgroup.subtree_control"));
  if (HasWord(enabled, controller)) return Ok();
  // Fails with EBUSY when `dir` holds processes itself (the no-internal-processes rule).
  return WriteFile(dir + "/cgroup.subtree_control", "+" + controller);
}

bool V2Offers(const CgroupLayout& layout, const std::string& controller) {
  if (layout.unified.empty()) return false;
  Result<std::string> offered = ReadFile(layout.unified + "/cgroup.controllers");
  return offered.ok() && HasWord(*offered, controller);
}

void RemoveDir(const std::string& path) {
  // The kernel may still count an exiting member for a moment: EBUSY, then it empties.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(1);
  while (::rmdir(path.c_str()) != 0 && errno == EBUSY && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

CgroupLayout ParseCgroupLayout(std::string_view mountinfo, std::string_view self_cgroup) {
  std::optional<Mount> unified;
  std::map<std::string, Mount> v1;
  for (std::string_view line : Split(mountinfo, '\n')) {
    std::vector<std::string_view> f = Split(line, ' ');
    auto sep = std::find(f.begin(), f.end(), "-");
    if (sep == f.end() || f.end() - sep < 2 || sep - f.begin() < 5) continue;
    const std::string_view fstype = sep[1];
    Mount mount{Unescape(f[3]), Unescape(f[4])};
    if (fstype == "cgroup2") {
      if (!unified) unified = mount;
    } else if (fstype == "cgroup" && f.end() - sep >= 4) {
      for (std::string_view opt : Split(sep[3], ',')) {
        if (IsV1Controller(opt)) v1.emplace(std::string(opt), mount);
      }
    }
  }

  CgroupLayout layout;
  for (std::string_view line : Split(self_cgroup, '\n')) {
    // "hierarchy-id:controller,list:/path"; v2 is "0::/path".
    std::size_t a = line.find(':');
    std::size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string_view path = line.substr(b + 1);
    if (controllers.empty()) {
      if (!unified) continue;
      if (auto dir = DirUnder(*unified, path)) layout.unified = *dir;
      continue;
    }
    for (std::string_view c : Split(controllers, ',')) {
      auto it = v1.find(std::string(c));
      if (it == v1.end()) continue;
      if (auto dir = DirUnder(it->second, path)) layout.v1[it->first] = *dir;
    }
  }
  return layout;
}

CgroupLayout CurrentCgroupLayout() {
  Result<std::string> mountinfo = ReadFile("/proc/self/mountinfo");
  Result<std::string> self = ReadFile("/proc/self/cgroup");
  if (!mountinfo.ok() || !self.ok()) return {};
  return ParseCgroupLayout(*mountinfo, *self);
}

Cgroup Cgroup::Create(const CgroupLayout& layout, const ResourceLimits& limits) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string name =
      "tx-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1) + 1);
  Cgroup cg;

  // The directory for `name` beneath `parent`, made on first use. `made` says whether this call
  // made it (so a limit that then fails can take it away again).
  auto dir_under = [&](const std::string& parent, bool v2, bool& made) -> Result<std::size_t> {
    const std::string path = parent + "/" + name;
    for (std::size_t i = 0; i < cg.dirs_.size(); ++i) {
      if (cg.dirs_[i].path == path) return i;
    }
    if (::mkdir(path.c_str(), 0755) != 0) {
      return PosixError("cannot create " + path, errno);
    }
    UniqueFd procs(::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!procs.valid()) {
      const int err = errno;
      ::rmdir(path.c_str());
      return PosixError("cannot open " + path + "/cgroup.procs", err);
    }
    cg.dirs_.push_back(Dir{path, v2, std::move(procs)});
    made = true;
    return cg.dirs_.size() - 1;
  };
  auto drop_if_made = [&](bool made) {
    if (!made) return;
    RemoveDir(cg.dirs_.back().path);
    cg.dirs_.pop_back();
  };
  auto note = [&](const std::string& what, const Error& e) {
    if (!cg.problem_.empty()) cg.problem_ += "; ";
    cg.problem_ += what + ": " + e.message();
  };

  // One controller: v2 when the unified hierarchy offers it, else its v1 hierarchy. `write`
  // applies the limit inside the directory.
  auto apply = [&](const std::string& controller, auto write) -> Status {
    const bool v2 = V2Offers(layout, controller);
    std::string parent;
    if (v2) {
      TX_RETURN_IF_ERROR(EnableV2Controller(layout.unified, controller));
      parent = layout.unified;
    } else {
      auto it = layout.v1.find(controller);
      if (it == layout.v1.end()) {
        return Error::Unavailable("no " + controller + " controller (neither cgroup v2" +
                                  (layout.unified.empty() ? "" : " at " + layout.unified) +
                                  " nor a v1 hierarchy offers it)");
      }
      parent = it->second;
    }
    bool made = false;
    TX_ASSIGN_OR_RETURN(std::size_t i, dir_under(parent, v2, made));
    Status s = write(cg.dirs_[i].path, v2);
    if (!s.ok()) drop_if_made(made);
    return s;
  };

  if (limits.memory_bytes) {
    const std::string bytes = std::to_string(*limits.memory_bytes);
    Status s = apply("memory", [&](const std::string& dir, bool v2) -> Status {
      if (v2) {
        TX_RETURN_IF_ERROR(WriteFile(dir + "/memory.max", bytes));
        // Without this an agent past the limit would swap instead of being stopped. Optional:
        // the file is absent when swap accounting is off.
        (void)WriteFile(dir + "/memory.swap.max", "0");
        return Ok();
      }
      TX_RETURN_IF_ERROR(WriteFile(dir + "/memory.limit_in_bytes", bytes));
      // memory+swap: same reason; must come after memory.limit_in_bytes (memsw >= memory).
      (void)WriteFile(dir + "/memory.memsw.limit_in_bytes", bytes);
      return Ok();
    });
    if (s.ok()) {
      cg.memory_limited_ = true;
    } else {
      note("memory", s.error());
    }
  }
  if (limits.cpu_percent) {
    const int percent = *limits.cpu_percent;
    Status s = Ok();
    if (percent <= 0) {
      s = Error::InvalidArgument("cpu_percent must be positive, got " + std::to_string(percent));
    } else {
      // quota per period: 100% = one full core per period.
      const std::string quota =
          std::to_string(kCpuPeriodUs * static_cast<std::uint64_t>(percent) / 100);
      s = apply("cpu", [&](const std::string& dir, bool v2) -> Status {
        if (v2) return WriteFile(dir + "/cpu.max", quota + " " + std::to_string(kCpuPeriodUs));
        TX_RETURN_IF_ERROR(WriteFile(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
        return WriteFile(dir + "/cpu.cfs_quota_us", quota);
      });
    }
    if (s.ok()) {
      cg.cpu_limited_ = true;
    } else {
      note("cpu", s.error());
    }
  }
  return cg;
}

LimitsProbe ProbeLimits(const CgroupLayout& layout) {
  ResourceLimits limits;
  limits.memory_bytes = 1ull << 30;
  limits.cpu_percent = 100;
  Cgroup cg = Cgroup::Create(layout, limits);
  LimitsProbe probe;
  probe.memory = cg.memory_limited();
  probe.cpu = cg.cpu_limited();
  probe.problem = cg.problem();
  std::vector<std::string> dirs = cg.dirs();
  probe.v2 = !dirs.empty() && !layout.unified.empty() &&
             std::all_of(dirs.begin(), dirs.end(),
                         [&](const std::string& d) { return d.starts_with(layout.unified + "/"); });
  return probe;  // the group goes with `cg`
}

Cgroup& Cgroup::operator=(Cgroup&& other) noexcept {
  if (this != &other) {
    Remove();
    dirs_ = std::move(other.dirs_);
    other.dirs_.clear();
    memory_limited_ = other.memory_limited_;
    cpu_limited_ = other.cpu_limited_;
    problem_ = std::move(other.problem_);
  }
  return *this;
}

Cgroup::~Cgroup() { Remove(); }

std::vector<std::string> Cgroup::dirs() const {
  std::vector<std::string> out;
  for (const Dir& d : dirs_) out.push_back(d.path);
  return out;
}

std::vector<int> Cgroup::procs_fds() const {
  std::vector<int> out;
  for (const Dir& d : dirs_) out.push_back(d.procs.get());
  return out;
}

std::vector<pid_t> Cgroup::Members() const {
  std::set<pid_t> all;
  for (const Dir& d : dirs_) {
    for (pid_t pid : ReadPids(d.path + "/cgroup.procs")) all.insert(pid);
  }
  return {all.begin(), all.end()};
}

void Cgroup::KillMembers() const {
  if (dirs_.empty()) return;
  // Members can fork while being killed; repeat until a pass finds none. cgroup.kill (v2, Linux
  // 5.14) does it atomically where it exists.
  for (const Dir& d : dirs_) {
    if (d.v2) (void)WriteFile(d.path + "/cgroup.kill", "1");
  }
  const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
  while (true) {
    std::vector<pid_t> members = Members();
    if (members.empty() || SteadyClock::now() >= deadline) return;
    for (pid_t pid : members) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Cgroup::Remove() noexcept {
  if (dirs_.empty()) return;
  KillMembers();
  for (Dir& d : dirs_) {
    d.procs.Reset();
    RemoveDir(d.path);
  }
  dirs_.clear();
}

}  // namespace tx::exec
