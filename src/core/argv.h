#pragma once
// Splits a command line into argv the way a POSIX shell splits words (spaces, 'single' and
// "double" quotes, backslash escapes), without expanding anything: no variables, globs or
// command substitution. The result is run directly, never through a shell.

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx {

Result<std::vector<std::string>> SplitArgv(std::string_view line);

// True when `command` (dotted, e.g. "task.done") matches the comma-separated allow-list, where
// '*' matches any run of characters ("claim.*", "task.show,task.done").
bool IsAllowed(std::string_view command, std::string_view allow_list);

// True when `text` matches `pattern` whole, where '*' matches any run of characters (none
// included) and every other character itself; O(|pattern| x |text|) at worst.
bool MatchesGlob(std::string_view pattern, std::string_view text);

}  // namespace tx
