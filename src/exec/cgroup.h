#pragma once
// Cgroup: a control group made for one child, to enforce ResourceLimits::memory_bytes and
// cpu_percent. Internal to exec: Child makes one when the spec asks for those limits, the child
// joins it between fork and exec, and the Child's destruction removes it.
//
// The new group `tx-<pid>-<n>` is made beneath this process's own cgroup in each hierarchy, so
// the agent stays inside the limits and accounting of whatever runs the worker (a systemd unit,
// a container). cgroup v2 is used when the unified hierarchy offers the controller; otherwise
// the v1 hierarchy of that controller. A limit that cannot be applied (no controller, no
// permission) is not an error: it is reported in problem(), and the caller falls back.
// ProbeLimits makes one for `tx doctor` alone.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/spawn_spec.h"
#include "exec/unique_fd.h"

namespace tx::exec {

// Where this process's own cgroups are, as directories.
struct CgroupLayout {
  std::string unified;                    // in the v2 hierarchy; empty when none is mounted
  std::map<std::string, std::string> v1;  // v1 controller ("memory", "cpu") -> directory

  bool operator==(const CgroupLayout&) const = default;
};

// Pure: from the text of /proc/self/mountinfo and /proc/self/cgroup. A hierarchy whose mount
// does not contain this process's cgroup (another namespace's view) is left out.
CgroupLayout ParseCgroupLayout(std::string_view mountinfo, std::string_view self_cgroup);
// The layout of the calling process (reads /proc/self); empty when /proc cannot be read.
CgroupLayout CurrentCgroupLayout();

// What `tx doctor` reports of the limits here: whether an agent started by this process could be
// limited in memory and CPU, found the way Child finds it — a group made for a memory and a CPU
// limit beneath `layout`, then removed at once.
struct LimitsProbe {
  bool memory = false;  // a memory limit applies
  bool cpu = false;     // a CPU limit applies
  bool v2 = false;      // every limit that applies is cgroup v2's (else v1's, for some)
  std::string problem;  // why a limit does not apply (Cgroup::problem()); empty when both do
};
LimitsProbe ProbeLimits(const CgroupLayout& layout);

class Cgroup {
 public:
  // Makes the group(s) for limits.memory_bytes and limits.cpu_percent beneath `layout`. Never
  // fails as a whole: each requested limit is either applied (memory_limited(), cpu_limited())
  // or explained in problem(). Directories made for a limit that then failed are removed.
  static Cgroup Create(const CgroupLayout& layout, const ResourceLimits& limits);

  Cgroup() = default;
  Cgroup(Cgroup&&) = default;
  Cgroup& operator=(Cgroup&& other) noexcept;
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;
  // Kills every process still in the group(s) and removes the directories.
  ~Cgroup();

  bool memory_limited() const { return memory_limited_; }
  bool cpu_limited() const { return cpu_limited_; }
  // Why a requested limit was not applied, one line; empty when all were.
  const std::string& problem() const { return problem_; }
  bool empty() const { return dirs_.empty(); }
  // The directories made, one per hierarchy used.
  std::vector<std::string> dirs() const;
  // Descriptors open for writing on each directory's cgroup.procs. A process joins every group
  // by writing "0" to each (a plain write(), so the child can do it between fork and exec).
  std::vector<int> procs_fds() const;

  // SIGKILLs every member process until the groups are empty (bounded: about two seconds).
  void KillMembers() const;
  // Pids currently in the group(s), for tests and diagnostics.
  std::vector<pid_t> Members() const;

 private:
  void Remove() noexcept;

  struct Dir {
    std::string path;
    bool v2 = false;
    UniqueFd procs;  // cgroup.procs, O_WRONLY
  };
  std::vector<Dir> dirs_;
  bool memory_limited_ = false;
  bool cpu_limited_ = false;
  std::string problem_;
};

}  // namespace tx::exec
