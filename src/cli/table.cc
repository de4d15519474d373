#include "cli/table.h"

#include <algorithm>

namespace tx::cli {

namespace {
// Display width in code points (UTF-8 continuation bytes do not count).
std::size_t Width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Cut(const std::string& s, std::size_t max) {
  std::string flat = s;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  if (Width(flat) <= max) return flat;
  std::string out;
  std::size_t n = 0;
  for (unsigned char c : flat) {
    if ((c & 0xC0) != 0x80 && ++n > max - 1) break;
    out += static_cast<char>(c);
  }
  return out + "…";
}
}  // namespace

void Table::Print(std::ostream& out, std::size_t max_cell) const {
  std::vector<std::size_t> widths(header_.size());
  std::vector<std::vector<std::string>> cells;
  cells.push_back(header_);
  for (const auto& row : rows_) {
    std::vector<std::string> cut;
    for (const auto& cell : row) cut.push_back(Cut(cell, max_cell));
    cells.push_back(std::move(cut));
  }
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  }
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Width(row[i]) + 2, ' ');
    }
    out << line << '\n';
  }
}

}  // namespace tx::cli
