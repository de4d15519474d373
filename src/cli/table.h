#pragma once
// A plain-text table for people: a header row, left-aligned columns, two spaces apart, long
// cells cut with an ellipsis.

#include <functional>
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
  // The SGR parameters ("32", "1") to colour the cell of row `row` (0: the header) and column
  // `column` with, given its text as printed; "" for none.
  using Painter =
      std::function<std::string(std::size_t row, std::size_t column, const std::string& cell)>;
  // The lines Print writes, without their newlines; with `paint`, each coloured cell's text is
  // wrapped in its escape and a reset, its padding left outside, so the columns still line up.
  std::vector<std::string> Lines(std::size_t max_cell = 60, const Painter& paint = nullptr) const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tx::cli
