#pragma once
// Sandboxes for agents (docs/sandbox.md): `[worker] sandbox` and `[sandbox]` of config.toml, and
// the bubblewrap command line that runs an agent inside one (pure: paths in, argv out), and the
// check a worker makes at its start.
//
// bwrap: the host's root read-only; a private /tmp, /run, /proc and /dev; the agent's working
// directory and the listed writable paths bound read-write; the store's directory and the
// worker's local directory hidden under empty read-only ones (so neither the store, its token
// nor its config can be read or written); no network unless `network` is on; its own pid, IPC and
// UTS namespaces; it dies with its worker (the outer bwrap gets the worker's parent-death signal
// and takes the namespace down with it). The agent stays in the worker's process group for it, so a
// stop still reaches every process of it.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "exec/spawn_spec.h"

namespace tx::worker {

enum class SandboxKind { kNone, kBwrap, kPodman, kDocker };

struct SandboxSettings {
  SandboxKind kind = SandboxKind::kNone;
  bool network = false;               // [sandbox] network = "host" | "none" (default)
  std::vector<std::string> writable;  // [sandbox] writable: more read-write paths ("~/" = HOME)
  // [sandbox.images]: the image an agent runs in, by capability a task requires, else "default".
  std::map<std::string, std::string> images;
  // [sandbox] engine_args: the engine's global options, before `run` (e.g. podman's --runtime).
  std::vector<std::string> engine_args;
  // [sandbox] image_gc_after: `tx sandbox gc` removes the images tx ran that went unused this
  // long (image_usage.h).
  Millis image_gc_after_ms = 7 * 24 * 3'600'000;
  bool operator==(const SandboxSettings&) const = default;
};

bool IsContainer(SandboxKind kind);

// How strict a kind is: none (0) < bwrap (1) < a container (2).
int Strictness(SandboxKind kind);
// The stricter of two kinds; at equal strictness `over` (the more specific one: a task's over its
// queue's over its worker's), but never none over none's equal.
SandboxKind Stricter(SandboxKind base, SandboxKind over);

// The engine's command with its global options ({} without a container sandbox).
std::vector<std::string> EngineCommand(const SandboxSettings& settings);

// "none" | "bwrap" | "podman" | "docker"; invalid_argument naming the value otherwise.
Result<SandboxKind> ParseSandboxKind(const std::string& text);
const char* SandboxName(SandboxKind kind);

// What one attempt's sandbox binds. Absolute paths.
struct SandboxPaths {
  std::string workdir;                 // read-write; where the agent starts
  std::vector<std::string> writable;   // read-write when they exist: git's
  std::vector<std::string> hidden;     // covered by an empty directory: the store's, .tx
  std::vector<std::string> programs;   // read-only, for programs under /tmp (tx's directory)
  std::vector<std::string> read_only;  // read-only over what is writable around them: a
                                       // repository's .git, a worktree's .git file, the
                                       // worker's socket directory
  std::string home;                    // expands "~/" in the settings' writable paths
};

// `bwrap [options] -- argv...`. Mounts go parent before child, so a path bound inside a hidden
// directory (a worktree under the repository's .tx) is seen, and /tmp's own tmpfs comes first.
std::vector<std::string> BwrapArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                   const std::vector<std::string>& argv);

// This process's hard limits of open files and processes, where they are finite (processes at
// most the kernel's pid_max).
void WorkerRlimits(std::uint64_t& open_files, std::uint64_t& processes);

// One attempt's container: its name and labels (tx.task, tx.attempt, tx.worker), the image, and
// what the worker passes through: the variables by name (their values stay out of the command
// line: the engine reads them from its own environment), the limits as the engine's, the
// worker's own rlimits where the task sets none (an engine asked for more than its caller's hard
// limit cannot start a container), and the relay that is the agent's `tx` inside.
struct ContainerRun {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string image;
  std::vector<std::string> env_names;
  exec::ResourceLimits limits;
  std::uint64_t open_files = 1024;  // the worker's own hard limits, when the task sets none
  std::uint64_t processes = 1024;
  std::string relay;     // the host's tx-agent binary
  std::string relay_at;  // where the agent's PATH looks for tx (the tx binary's path)
};

// tx-<task id>-<attempt>: the container of one attempt.
std::string ContainerName(const std::string& task_id, int attempt);

// The image for a task requiring `requires`: the first of them [sandbox.images] names, else its
// "default". invalid_argument when there is none.
Result<std::string> ImageFor(const SandboxSettings& settings,
                             const std::vector<std::string>& requires_caps);

// `<engine> [engine_args] run --rm ... <image> argv...`: the workdir and the writable paths bound
// at the same paths, hidden paths under the workdir covered by read-only tmpfs, the relay bound
// read-only, the network off unless `network`, the limits passed, the agent's working directory
// as the container's.
std::vector<std::string> ContainerArgv(const SandboxSettings& settings, const SandboxPaths& paths,
                                       const ContainerRun& run,
                                       const std::vector<std::string>& argv);

// Whether this machine can run the sandbox: bwrap found and able to make its namespaces (it runs
// `true` in one); for a container engine, the default image configured and the engine able to
// run `true` in it. unavailable (invalid_argument for a missing image), in one line, saying why
// and what to do, otherwise.
Status CheckSandbox(const SandboxSettings& settings);

}  // namespace tx::worker
