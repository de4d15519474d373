#pragma once
// Where a program would be found: the PATH lookup a spawn makes, done ahead of it, so that a
// worker can say a profile's program is missing before it claims tasks for it.

#include <string>
#include <vector>

#include "core/error.h"

namespace tx::exec {

// `name` as execve would run it: itself when it holds a '/', else the first executable regular
// file of that name in the PATH of `env` ("NAME=value" entries; this process's PATH when it has
// none; relative PATH entries are taken from `cwd`). not_found ("No such file or directory") or
// invalid_argument ("Permission denied": found, not executable) otherwise.
Result<std::string> FindProgram(const std::string& name, const std::vector<std::string>& env,
                                const std::string& cwd = "");

}  // namespace tx::exec
