#pragma once
// Containers an agent ran in (worker/sandbox.h), removed by their labels: what a worker does at
// the end of every attempt, and an orchestrator for a worker that died without doing it.

#include <string>
#include <vector>

#include "core/error.h"

namespace tx::exec {

// An engine the workers may run agents with: its command with its global options, and whether a
// config names it (a worker's, a slot's or a queue's sandbox) or it is only installed here for
// a task that may ask for it, whose failures (docker without its daemon) are nobody's concern.
struct ContainerEngine {
  std::vector<std::string> command;
  bool configured = true;
  bool operator==(const ContainerEngine&) const = default;
};

// `engine` is the engine's command with its global options (e.g. {"podman", "--runtime",
// "runc"}). Removes, forcibly, every container (running or not) that carries all of `labels`
// ("KEY=VALUE" each). Returns how many it removed; unavailable, quoting the engine, when it
// cannot list them.
Result<int> RemoveContainersLabelled(const std::vector<std::string>& engine,
                                     const std::vector<std::string>& labels);

}  // namespace tx::exec
