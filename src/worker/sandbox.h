#pragma once
// Sandboxes for agents (docs/sandbox.md): `[worker] sandbox` and `[sandbox]` of config.toml, and
// the bubblewrap command line that runs an agent inside one (pure: paths in, argv out), and the
// check a worker makes at its start.
//
// bwrap: the host's root read-only; a private /tmp, /proc and /dev; the agent's working
// directory and the listed writable paths bound read-write; the store's directory and the
// worker's local directory hidden under empty read-only ones (so neither the store, its token
// nor its config can be read or written); no network unless `network` is on; its own pid, IPC and
// UTS namespaces; it dies with its worker (the outer bwrap gets the worker's parent-death signal
// and takes the namespace down with it). The agent stays in the worker's process group for it, so a
// stop still reaches every process of it.

#include <string>
#include <vector>

#include "core/error.h"

namespace tx::worker {

enum class SandboxKind { kNone, kBwrap };

struct SandboxSettings {
  SandboxKind kind = SandboxKind::kNone;
  bool network = false;               // [sandbox] network = "host" | "none" (default)
  std::vector<std::string> writable;  // [sandbox] writable: more read-write paths ("~/" = HOME)
  bool operator==(const SandboxSettings&) const = default;
};

// "none" | "bwrap"; invalid_argument naming the value otherwise.
Result<SandboxKind> ParseSandboxKind(const std::string& text);
const char* SandboxName(SandboxKind kind);

// What one attempt's sandbox binds. Absolute paths.
struct SandboxPaths {
  std::string workdir;                // read-write; where the agent starts
  std::vector<std::string> writable;  // read-write when they exist: the gateway's dir, git's
  std::vector<std::string> hidden;    // covered by an empty directory: the store's, .tx
  std::vector<std::string> programs;  // read-only, for programs under /tmp (tx's directory)
  std::string home;                   // expands "~/" in the settings' writable paths
};

// `bwrap [options] -- argv...`. Mounts go parent before child, so a path bound inside a hidden
// directory (a worktree under the repository's .tx) is seen, and /tmp's own tmpfs comes first.
std::vector<std::string> BwrapArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                   const std::vector<std::string>& argv);

// Whether this machine can run the sandbox: bwrap found and able to make its namespaces (it runs
// `true` in one). unavailable, in one line, saying why and what to do, otherwise.
Status CheckSandbox(const SandboxSettings& settings);

}  // namespace tx::worker
