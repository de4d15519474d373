#include "cli/doctor.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli/table.h"

namespace tx::cli {

namespace {

std::string Octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

// "12.3 GiB", "512 MiB".
std::string Bytes(std::uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(n >> 20));
  }
  return buf;
}

std::string Seconds(Millis ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ms) / 1000);
  return buf;
}

}  // namespace

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "fail";
  }
  return "fail";
}

int DoctorExitCode(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.level == Level::kFail; })
             ? 1
             : 0;
}

std::string FormatDoctorText(const std::vector<Finding>& findings) {
  std::size_t width = 10;
  for (const auto& f : findings) width = std::max(width, f.check.size() + 1);
  const std::size_t indent = 6 + width;
  std::ostringstream out;
  int warnings = 0, failures = 0;
  for (const auto& f : findings) {
    std::string level(LevelName(f.level));
    std::string check = Printable(f.check);
    out << level << std::string(6 - level.size(), ' ') << check
        << std::string(width > check.size() ? width - check.size() : 1, ' ') << Printable(f.detail)
        << '\n';
    if (f.level != Level::kOk && !f.fix.empty()) {
      out << std::string(indent, ' ') << "fix: " << Printable(f.fix) << '\n';
    }
    warnings += f.level == Level::kWarn;
    failures += f.level == Level::kFail;
  }
  if (failures > 0) {
    out << failures << (failures == 1 ? " failure" : " failures");
    if (warnings > 0) out << ", " << warnings << (warnings == 1 ? " warning" : " warnings");
    out << ": fix the failures before relying on tx here\n";
  } else if (warnings > 0) {
    out << warnings << (warnings == 1 ? " warning" : " warnings")
        << ", no failure: tx can work here\n";
  } else {
    out << "all " << findings.size() << " checks passed\n";
  }
  return out.str();
}

nlohmann::json DoctorJson(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings) {
    list.push_back({{"check", f.check},
                    {"level", std::string(LevelName(f.level))},
                    {"detail", f.detail},
                    {"fix", f.fix}});
  }
  return {{"ok", DoctorExitCode(findings) == 0}, {"findings", list}};
}

Finding TokenFileFinding(const std::string& path, unsigned mode) {
  Finding f{"token", Level::kOk, path + " is its owner's alone (" + Octal(mode) + ")", ""};
  if ((mode & 077u) != 0) {
    f.level = Level::kFail;
    f.detail = path + " can be read by others (mode " + Octal(mode) +
               "): whoever reads it may act on the fleet through the HTTP API";
    f.fix = "chmod 600 " + path;
  }
  return f;
}

Finding DiskFinding(const std::string& dir, std::uint64_t free_bytes) {
  Finding f{"disk", Level::kOk, Bytes(free_bytes) + " free under " + dir, ""};
  if (free_bytes < kDiskFailBytes) {
    f.level = Level::kFail;
    f.detail = "only " + Bytes(free_bytes) + " free under " + dir +
               ": the store's writes and the agents' logs will fail";
  } else if (free_bytes < kDiskWarnBytes) {
    f.level = Level::kWarn;
    f.detail = "only " + Bytes(free_bytes) + " free under " + dir + " (less than 1 GiB)";
  }
  if (f.level != Level::kOk) {
    f.fix = "free space on that file system (old logs under " + dir +
            "/logs can go), or move the store";
  }
  return f;
}

Finding ClockSkewFinding(Millis skew_ms) {
  Millis off = skew_ms < 0 ? -skew_ms : skew_ms;
  std::string side = skew_ms > 0 ? "behind" : "ahead of";
  Finding f{"clock", Level::kOk, "", ""};
  if (off < 1) {
    f.detail = "this machine's clock agrees with the PostgreSQL server's";
  } else {
    f.detail = "this machine's clock is " + Seconds(off) + " " + side + " the PostgreSQL server's";
  }
  if (off > kClockSkewWarnMs) {
    f.level = Level::kWarn;
    f.detail += " (leases use the server's; times printed and logged here are off by as much)";
    f.fix = "synchronise this machine's clock (chrony, systemd-timesyncd or ntpd)";
  }
  return f;
}

std::optional<std::pair<int, int>> ParseGitVersion(std::string_view text) {
  constexpr std::string_view kPrefix = "git version ";
  if (!text.starts_with(kPrefix)) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  int parts[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    std::size_t n = 0;
    while (n < text.size() && text[n] >= '0' && text[n] <= '9') {
      parts[i] = parts[i] * 10 + (text[n] - '0');
      if (parts[i] > 100000) return std::nullopt;
      ++n;
    }
    if (n == 0) return std::nullopt;
    text.remove_prefix(n);
    if (i == 0) {
      if (!text.starts_with('.')) return std::nullopt;
      text.remove_prefix(1);
    }
  }
  return std::pair{parts[0], parts[1]};
}

Finding GitFinding(const std::optional<std::string>& version_line, const std::string& why,
                   bool git_configured) {
  const Level missing = git_configured ? Level::kFail : Level::kWarn;
  const std::string who =
      git_configured ? "the tasks the config sends to a repository" : "tasks with --repo";
  if (!version_line) {
    return {"git", missing, "git is not on PATH (" + why + "): " + who + " cannot run here",
            "install git (apt-get install git) or put it on PATH"};
  }
  std::optional<std::pair<int, int>> v = ParseGitVersion(*version_line);
  if (!v) {
    return {"git", Level::kWarn, "git answers --version with '" + *version_line + "'",
            "check that the git on PATH is git"};
  }
  if (*v < std::pair{2, 17}) {
    return {"git", missing,
            *version_line + ": worktrees need 2.17 or later (git worktree move and remove): " +
                who + " cannot run here",
            "install a newer git"};
  }
  return {"git", Level::kOk, *version_line, ""};
}

}  // namespace tx::cli
