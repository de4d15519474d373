#include "worker/sandbox.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "exec/command.h"

namespace tx::worker {
namespace {

std::size_t Depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

bool Under(const std::string& path, const std::string& dir) {
  return path == dir ||
         (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

void WorkerRlimits(std::uint64_t& open_files, std::uint64_t& processes) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_max != RLIM_INFINITY) open_files = r.rlim_max;
  if (::getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_max != RLIM_INFINITY) processes = r.rlim_max;
  // Nor more processes than the kernel has pids: a runtime refused that on a machine of ours.
  std::ifstream pid_max("/proc/sys/kernel/pid_max");
  std::uint64_t max = 0;
  if (pid_max >> max && max > 0) processes = std::min(processes, max);
}

Result<SandboxKind> ParseSandboxKind(const std::string& text) {
  if (text == "none") return SandboxKind::kNone;
  if (text == "bwrap") return SandboxKind::kBwrap;
  if (text == "podman") return SandboxKind::kPodman;
  if (text == "docker") return SandboxKind::kDocker;
  return Error::InvalidArgument("unknown sandbox '" + text + "' (none, bwrap, podman or docker)");
}

const char* SandboxName(SandboxKind kind) {
  switch (kind) {
    case SandboxKind::kBwrap:
      return "bwrap";
    case SandboxKind::kPodman:
      return "podman";
    case SandboxKind::kDocker:
      return "docker";
    case SandboxKind::kNone:
      break;
  }
  return "none";
}

bool IsContainer(SandboxKind kind) {
  return kind == SandboxKind::kPodman || kind == SandboxKind::kDocker;
}

int Strictness(SandboxKind kind) {
  return IsContainer(kind) ? 2 : kind == SandboxKind::kBwrap ? 1 : 0;
}

SandboxKind Stricter(SandboxKind base, SandboxKind over) {
  return Strictness(over) >= Strictness(base) && over != SandboxKind::kNone ? over : base;
}

std::vector<std::string> EngineCommand(const SandboxSettings& settings) {
  if (!IsContainer(settings.kind)) return {};
  std::vector<std::string> out = {SandboxName(settings.kind)};
  out.insert(out.end(), settings.engine_args.begin(), settings.engine_args.end());
  return out;
}

std::string ContainerName(const std::string& task_id, int attempt) {
  return "tx-" + task_id + "-" + std::to_string(attempt);
}

Result<std::string> ImageFor(const SandboxSettings& settings,
                             const std::vector<std::string>& requires_caps) {
  for (const auto& cap : requires_caps) {
    if (auto it = settings.images.find(cap); it != settings.images.end()) return it->second;
  }
  if (auto it = settings.images.find("default"); it != settings.images.end()) return it->second;
  return Error::InvalidArgument(std::string("sandbox = ") + SandboxName(settings.kind) +
                                " needs an image: set [sandbox.images] default");
}

std::vector<std::string> ContainerArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                       const ContainerRun& run,
                                       const std::vector<std::string>& argv) {
  std::vector<std::string> out = EngineCommand(settings);
  out.insert(out.end(), {"run", "--rm", "-i", "--name", run.name});
  for (const auto& [key, value] : run.labels) out.insert(out.end(), {"--label", key + "=" + value});
  out.insert(out.end(), {"--network", settings.network ? "host" : "none"});
  auto bind = [&](const std::string& path, const char* mode) {
    out.insert(out.end(), {"-v", path + ":" + path + mode});
  };
  // Paths that do not exist are not bound: an engine would refuse them, or make them.
  std::vector<std::string> bound;
  if (!paths.workdir.empty()) bound.push_back(paths.workdir);
  for (const auto& p : paths.writable) {
    if (std::filesystem::exists(p)) bound.push_back(p);
  }
  for (const auto& p : settings.writable) {
    std::string path = p;
    if (path.starts_with("~/") && !paths.home.empty()) path = paths.home + path.substr(1);
    if (std::filesystem::exists(path)) bound.push_back(path);
  }
  for (const auto& p : bound) bind(p, "");
  for (const auto& p : paths.read_only) {
    if (std::filesystem::exists(p)) bind(p, ":ro");
  }
  for (const auto& p : paths.hidden) {
    bool inside =
        std::any_of(bound.begin(), bound.end(), [&](const std::string& b) { return Under(p, b); });
    if (inside) out.insert(out.end(), {"--tmpfs", p + ":ro"});
  }
  if (!run.relay.empty()) out.insert(out.end(), {"-v", run.relay + ":" + run.relay_at + ":ro"});
  if (!paths.workdir.empty()) out.insert(out.end(), {"-w", paths.workdir});
  for (const auto& name : run.env_names) out.insert(out.end(), {"-e", name});
  const exec::ResourceLimits& l = run.limits;
  if (l.memory_bytes) out.insert(out.end(), {"--memory", std::to_string(*l.memory_bytes) + "b"});
  if (l.cpu_percent) {
    // 150 → "1.50": the engine's CPUs.
    int p = *l.cpu_percent;
    std::string cpus = std::to_string(p / 100) + "." + std::to_string(p / 10 % 10);
    cpus += std::to_string(p % 10);
    out.insert(out.end(), {"--cpus", cpus});
  }
  if (l.processes) out.insert(out.end(), {"--pids-limit", std::to_string(*l.processes)});
  std::string files = std::to_string(l.open_files ? *l.open_files : run.open_files);
  std::string procs = std::to_string(l.processes ? *l.processes : run.processes);
  out.insert(out.end(), {"--ulimit", "nofile=" + files + ":" + files, "--ulimit",
                         "nproc=" + procs + ":" + procs});
  out.push_back(run.image);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> BwrapArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                   const std::vector<std::string>& argv) {
  struct Mount {
    std::string path;
    enum Kind { kReadOnly, kWritable, kWritableIfThere, kHidden } kind;
  };
  std::vector<Mount> mounts;
  for (const auto& p : paths.programs) {
    if (Under(p, "/tmp") || Under(p, "/run")) mounts.push_back({p, Mount::kReadOnly});
  }
  for (const auto& p : paths.read_only) mounts.push_back({p, Mount::kReadOnly});
  // /run is the sandbox's own (the host's sockets live there), but for the resolver's file a
  // systemd machine links /etc/resolv.conf to.
  std::error_code ec;
  std::string resolv = std::filesystem::canonical("/etc/resolv.conf", ec).string();
  if (!ec && Under(resolv, "/run")) mounts.push_back({resolv, Mount::kReadOnly});
  if (!paths.workdir.empty()) mounts.push_back({paths.workdir, Mount::kWritable});
  for (const auto& p : paths.hidden) mounts.push_back({p, Mount::kHidden});
  for (const auto& p : paths.writable) mounts.push_back({p, Mount::kWritableIfThere});
  for (const auto& p : settings.writable) {
    std::string path = p;
    if (path.starts_with("~/") && !paths.home.empty()) path = paths.home + path.substr(1);
    mounts.push_back({path, Mount::kWritableIfThere});
  }
  std::stable_sort(mounts.begin(), mounts.end(),
                   [](const Mount& a, const Mount& b) { return Depth(a.path) < Depth(b.path); });

  std::vector<std::string> out = {"bwrap",  "--ro-bind", "/",       "/",    "--dev",   "/dev",
                                  "--proc", "/proc",     "--tmpfs", "/tmp", "--tmpfs", "/run"};
  std::vector<std::string> read_only;  // remounted after every mount made inside them
  for (const auto& m : mounts) {
    switch (m.kind) {
      case Mount::kReadOnly:
        out.insert(out.end(), {"--ro-bind-try", m.path, m.path});
        break;
      case Mount::kWritable:
        out.insert(out.end(), {"--bind", m.path, m.path});
        break;
      case Mount::kWritableIfThere:
        out.insert(out.end(), {"--bind-try", m.path, m.path});
        break;
      case Mount::kHidden:
        out.insert(out.end(), {"--tmpfs", m.path});
        read_only.push_back(m.path);
        break;
    }
  }
  for (const auto& p : read_only) out.insert(out.end(), {"--remount-ro", p});
  out.insert(out.end(), {"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"});
  if (!settings.network) out.push_back("--unshare-net");
  if (!paths.workdir.empty()) out.insert(out.end(), {"--chdir", paths.workdir});
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Status CheckSandbox(const SandboxSettings& settings) {
  if (settings.kind == SandboxKind::kNone) return Ok();
  if (IsContainer(settings.kind)) {
    std::string engine = SandboxName(settings.kind);
    TX_ASSIGN_OR_RETURN(std::string image, ImageFor(settings, {}));
    ContainerRun probe;
    probe.name = "tx-check-" + std::to_string(::getpid());
    probe.image = image;
    WorkerRlimits(probe.open_files, probe.processes);
    Result<exec::CommandResult> ran = exec::RunCommand(
        ContainerArgv(settings, {}, probe, {"sh", "-c", "exit 0"}), "", {}, 1 << 16, 120'000);
    if (!ran.ok()) {
      return Error::Unavailable("sandbox = " + engine + ", but " + engine +
                                " cannot be run here (" + ran.error().message() + ")");
    }
    if (!ran->ok()) {
      return Error::Unavailable("sandbox = " + engine + ", but " + engine +
                                " cannot run a container of " + image +
                                " here: " + ran->FirstLine());
    }
    return Ok();
  }
  Result<exec::CommandResult> ran =
      exec::RunCommand(BwrapArgv(settings, {}, {"true"}), "", {}, 1 << 16, 10'000);
  if (!ran.ok()) {
    return Error::Unavailable("sandbox = bwrap, but bwrap cannot be run here (" +
                              ran.error().message() + "): install bubblewrap");
  }
  if (!ran->ok()) {
    return Error::Unavailable("sandbox = bwrap, but bwrap cannot make a sandbox on this machine: " +
                              ran->FirstLine());
  }
  return Ok();
}

}  // namespace tx::worker
