#include "exec/program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace tx::exec {

Result<std::string> FindProgram(const std::string& name, const std::vector<std::string>& env,
                                const std::string& cwd) {
  if (name.find('/') != std::string::npos) {
    std::string check = name[0] != '/' && !cwd.empty() ? cwd + "/" + name : name;
    struct stat st {};
    if (::stat(check.c_str(), &st) != 0) {
      return Error::NotFound(std::generic_category().message(errno));
    }
    if (!S_ISREG(st.st_mode) || ::access(check.c_str(), X_OK) != 0) {
      return Error::InvalidArgument(std::generic_category().message(EACCES));
    }
    return name;
  }
  std::string path;
  bool found = false;
  for (const std::string& e : env) {
    if (e.rfind("PATH=", 0) == 0) {
      path = e.substr(5);
      found = true;
      break;
    }
  }
  if (!found) {
    const char* mine = std::getenv("PATH");
    path = mine != nullptr ? mine : "/usr/local/bin:/usr/bin:/bin";
  }
  int err = ENOENT;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    std::string check = candidate;
    if (check[0] != '/' && !cwd.empty()) check = cwd + "/" + check;
    struct stat st {};
    if (::stat(check.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(check.c_str(), X_OK) == 0) return candidate;
    err = EACCES;
  }
  std::string why = std::generic_category().message(err);
  if (err == EACCES) return Error::InvalidArgument(why);
  return Error::NotFound(why);
}

}  // namespace tx::exec
