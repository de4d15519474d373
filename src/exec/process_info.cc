#include "exec/process_info.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tx::exec {

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string SelfExecutable() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

double SelfResidentMb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long size = 0, resident = 0;
  int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

bool ProcessHasEnvironmentEntry(pid_t pid, std::string_view entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t pos = 0; pos < env.size();) {
    std::size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (std::string_view(env).substr(pos, end - pos) == entry) return true;
    pos = end + 1;
  }
  return false;
}

void KillGroup(pid_t pgid) {
  if (pgid <= 0) return;
  ::kill(-pgid, SIGKILL);
  ::kill(pgid, SIGKILL);
}

namespace {

// The process group of `pid` from /proc/<pid>/stat (field 5, after the parenthesised command,
// which may itself hold spaces or parentheses), and its state letter.
bool ReadStat(pid_t pid, pid_t& pgid, char& state, pid_t* sid = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  int ppid = 0, group = 0, session = 0;
  if (std::sscanf(stat.c_str() + close + 2, "%c %d %d %d", &state, &ppid, &group, &session) != 4) {
    return false;
  }
  pgid = group;
  if (sid != nullptr) *sid = session;
  return true;
}

}  // namespace

bool ProcessAlive(pid_t pid) {
  pid_t pgid = 0;
  char state = 0;
  return pid > 0 && ReadStat(pid, pgid, state) && state != 'Z' && state != 'X';
}

std::string ProcessCommandLine(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!line.empty() && line.back() == '\0') line.pop_back();
  std::replace(line.begin(), line.end(), '\0', ' ');
  return line;
}

int KillGroupsCarrying(std::string_view entry) {
  const pid_t own = ::getpgrp();
  std::vector<pid_t> groups;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    pid_t group = 0, session = 0;
    char state = 0;
    if (!ReadStat(pid, group, state, &session) || group <= 1 || group == own) continue;
    // A session of its own (setsid: a container engine's monitor, its namespace keeper, the
    // container itself, a daemon) is not an agent's group; the engine's containers are removed
    // by label (exec/container.h).
    if (group == session) continue;
    if (std::find(groups.begin(), groups.end(), group) != groups.end()) continue;
    if (ProcessHasEnvironmentEntry(pid, entry)) groups.push_back(group);
  }
  for (pid_t group : groups) KillGroup(group);
  return static_cast<int>(groups.size());
}

}  // namespace tx::exec
