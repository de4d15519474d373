#include "worker/sandbox.h"

#include <algorithm>

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

Result<SandboxKind> ParseSandboxKind(const std::string& text) {
  if (text == "none") return SandboxKind::kNone;
  if (text == "bwrap") return SandboxKind::kBwrap;
  return Error::InvalidArgument("unknown sandbox '" + text + "' (none or bwrap)");
}

const char* SandboxName(SandboxKind kind) { return kind == SandboxKind::kBwrap ? "bwrap" : "none"; }

std::vector<std::string> BwrapArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                   const std::vector<std::string>& argv) {
  struct Mount {
    std::string path;
    enum Kind { kReadOnly, kWritable, kWritableIfThere, kHidden } kind;
  };
  std::vector<Mount> mounts;
  for (const auto& p : paths.programs) {
    if (Under(p, "/tmp")) mounts.push_back({p, Mount::kReadOnly});
  }
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

  std::vector<std::string> out = {"bwrap", "--ro-bind", "/",     "/",       "--dev",
                                  "/dev",  "--proc",    "/proc", "--tmpfs", "/tmp"};
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
