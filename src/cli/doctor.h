#pragma once
// tx doctor's report (docs/operations.md): what each check found, as a person reads it and as
// JSON, and the judgements that need no machine — a token file's mode, the free space under
// .tx, the clock's skew against PostgreSQL's, git's version. Pure: the checks that look at this
// machine are in doctor_checks.cc.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace tx::cli {

// ok: nothing to do; warn: tx works, but something is missing or will be (an agent's program, a
// limit that falls back, low disk space); fail: tx cannot work here as configured.
enum class Level { kOk, kWarn, kFail };

std::string_view LevelName(Level level);  // "ok", "warn", "fail"

struct Finding {
  std::string check;  // "store", "token", "agent:claude", ...
  Level level = Level::kOk;
  std::string detail;  // what was found, one line
  std::string fix;     // what to do about it; empty for ok
};

// 0 when no finding fails (warnings allowed), else 1.
int DoctorExitCode(const std::vector<Finding>& findings);

// One line per finding — level, check and detail in columns — with the fix indented under a
// warning or a failure, then a line that sums them up. Details and fixes are made printable
// (a program's version line could hold escapes).
std::string FormatDoctorText(const std::vector<Finding>& findings);

// {"ok": no failure, "findings": [{"check", "level", "detail", "fix"}, ...]}.
nlohmann::json DoctorJson(const std::vector<Finding>& findings);

// The checks' judgements.

// A token file (.tx/token, .tx/tokens) must be its owner's alone: fail when its permission bits
// give the group or others anything, the fix `chmod 600 PATH`.
Finding TokenFileFinding(const std::string& path, unsigned mode);

// Free space under `dir`: warn under 1 GiB, fail under 100 MiB (the store's next transactions,
// the logs of the agents running).
inline constexpr std::uint64_t kDiskWarnBytes = 1ull << 30;
inline constexpr std::uint64_t kDiskFailBytes = 100ull << 20;
Finding DiskFinding(const std::string& dir, std::uint64_t free_bytes);

// This machine's clock against a PostgreSQL server's (`skew_ms` = server − local): warn past 1 s.
// Leases and heartbeats use the server's time, so it never stops tx; but the times this machine
// prints and logs, and its agents', are off by as much.
inline constexpr Millis kClockSkewWarnMs = 1000;
Finding ClockSkewFinding(Millis skew_ms);

// "git version 2.39.5" → {2, 39}; nullopt when the text is not git's.
std::optional<std::pair<int, int>> ParseGitVersion(std::string_view text);
// git's version line, or nullopt when git is not on PATH (`why` then says what the lookup said).
// Missing or older than 2.17 (git worktree move and remove): a failure when tasks are configured
// to run in worktrees ([git] repo, [git.queues.*] or [git.repos.*] set), else a warning.
Finding GitFinding(const std::optional<std::string>& version_line, const std::string& why,
                   bool git_configured);

}  // namespace tx::cli
