#pragma once
// Writes a whole file so that a reader sees the old content or the new, never a mix, and a crash
// leaves one of the two: a temporary file beside it, fsync, rename over, fsync of the directory.
// For the mirrored heartbeat document (--heartbeat-file) that other tools poll.

#include <string>

#include "core/error.h"

namespace tx::orchestrator {

Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace tx::orchestrator
