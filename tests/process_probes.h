#pragma once
// What the black-box tests need to look at processes and files the real binary leaves: /proc
// reads that tolerate a process exiting mid-read, and polling with a generous bound (no test
// asserts a speed). Starting the binary is run_process.h's.

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tx::testing {

// The whole file, or what could be read of it: a /proc file of a process that exits meanwhile
// fails to read (ESRCH), which is not an error here (std::ifstream would throw).
inline std::string ReadFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Alive and not a zombie (a zombie runs nothing): /proc/<pid>/stat's state field says.
inline bool Running(pid_t pid) {
  if (pid <= 0) return false;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// The NUL-separated entries of /proc/<pid>/environ (empty when unreadable or gone).
inline std::vector<std::string> EnvironOf(pid_t pid) {
  std::string raw = ReadFile("/proc/" + std::to_string(pid) + "/environ");
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    std::size_t end = raw.find('\0', pos);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

inline std::string CommandLineOf(pid_t pid) {
  std::string raw = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return raw;
}

inline std::vector<pid_t> AllPids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back(std::stoi(name));
  }
  return out;
}

// Running processes whose environment holds `entry` exactly (e.g. an agent's TX_TASK_ID=...).
inline std::vector<pid_t> ProcessesWith(const std::string& entry) {
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    if (!Running(pid)) continue;
    for (const auto& e : EnvironOf(pid)) {
      if (e == entry) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

// Polls `pred` every 50 ms until it holds or `limit` passes; the last answer.
inline bool WaitFor(const std::function<bool()>& pred,
                    std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// A number an agent wrote to a file (its pid), once a whole line of it is there; 0 if none
// comes within `limit`.
inline pid_t ReadPidFile(const std::string& path,
                         std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  pid_t pid = 0;
  WaitFor(
      [&] {
        std::string text = ReadFile(path);
        std::size_t eol = text.find('\n');
        if (eol == std::string::npos || eol == 0) return false;
        pid = static_cast<pid_t>(std::stol(text.substr(0, eol)));
        return true;
      },
      limit);
  return pid;
}

}  // namespace tx::testing
