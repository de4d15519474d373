#pragma once
// A plain-text table for people: a header row, left-aligned columns, two spaces apart, long
// cells cut with an ellipsis.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tx::cli {

// `s` safe to print on a terminal: control characters (C0, DEL, and C1 as UTF-8) shown as
// escapes (\x1b, \u009b), so that a task's title cannot move the cursor, recolour or retitle the
// terminal. Newlines and tabs are kept when `keep_lines`, else a newline becomes a space.
std::string Printable(std::string_view s, bool keep_lines = false);

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, std::size_t max_cell = 60) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tx::cli
