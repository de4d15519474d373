#include "core/argv.h"

namespace tx {

Result<std::vector<std::string>> SplitArgv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < line.size() &&
                 (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$')) {
        cur += line[++i];
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= line.size()) {
        return Error::InvalidArgument("invalid command '" + std::string(line) +
                                      "': it ends with a lone backslash");
      }
      cur += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return Error::InvalidArgument("invalid command '" + std::string(line) + "': unclosed " +
                                  (quote == '"' ? "double" : "single") + " quote");
  }
  if (in_word) out.push_back(std::move(cur));
  if (out.empty()) return Error::InvalidArgument("invalid command: it is empty");
  return out;
}

// On a mismatch only the last star takes one more character, so the time is
// O(|pattern| x |text|), never exponential in the number of stars.
bool MatchesGlob(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {
std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}
}  // namespace

bool IsAllowed(std::string_view command, std::string_view allow_list) {
  while (!allow_list.empty()) {
    std::size_t comma = allow_list.find(',');
    std::string_view item = Trim(allow_list.substr(0, comma));
    if (!item.empty() && MatchesGlob(item, command)) return true;
    if (comma == std::string_view::npos) break;
    allow_list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace tx
