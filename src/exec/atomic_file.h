#pragma once
// Writing a whole file at once, the one way tx does it: a reader sees the old content or the new,
// never a mix, and a crash leaves one of the two. It writes the orchestrator's mirrored heartbeat
// document (--heartbeat-file), a made-to-order worker's instructions and tx init's API token.

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/error.h"

namespace tx::exec {

// Writes `data` to a new temporary file beside `path` (".NAME.tmp", created with `mode` less the
// umask, never through a symlink planted at its name), fsyncs it, renames it over `path` (a
// symlink at `path` is replaced, not followed) and fsyncs the directory. Writes interrupted by a
// signal are resumed. Fails with kUnavailable, "cannot write|cannot fsync|cannot rename into
// PATH: <strerror>", and removes the temporary file; `path` is then as it was.
Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode);

}  // namespace tx::exec
