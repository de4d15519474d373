#include "cli/http_handoff.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx::cli {

bool MayNeedHttp(int argc, char** argv) {
  // tx mcp needs none itself: its tools run tx commands, each handed over as it needs.
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--db") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    if (a == "mcp") return false;
    break;
  }
  if (const char* server = std::getenv("TX_SERVER"); server != nullptr && *server != '\0') {
    return true;
  }
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "serve" || a == "--http" || a.starts_with("--http=") || a == "--server" ||
        a.starts_with("--server=")) {
      return true;
    }
  }
  return false;
}

std::string ThisExe() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

std::string SiblingExe(const std::string& name) {
  std::string self = ThisExe();
  return self.empty() ? "" : (std::filesystem::path(self).parent_path() / name).string();
}

int RunHttpBinary(char** argv) {
  std::string http = SiblingExe("tx-http");
  if (!http.empty()) ::execv(http.c_str(), argv);
  int e = errno;
  std::cerr << "tx: this command needs tx-http, which is built and installed beside tx ("
            << (http.empty() ? "/proc/self/exe unreadable" : http) << ": " << std::strerror(e)
            << ")\n";
  return ExitCode(ErrorCode::kUnavailable);
}

Status RerunAsHttpBinary() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    args.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string http = SiblingExe("tx-http");
  if (!http.empty() && !args.empty()) ::execv(http.c_str(), argv.data());
  return Error::Unavailable("a webhook needs tx-http, which is built and installed beside tx (" +
                            (http.empty() ? std::string("/proc/self/exe unreadable") : http) +
                            ": " + std::strerror(errno) + ")");
}

}  // namespace tx::cli
