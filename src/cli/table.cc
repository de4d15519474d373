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
  std::string flat = Printable(s);
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

std::string Printable(std::string_view s, bool keep_lines) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t') {
      out += keep_lines ? static_cast<char>(c) : ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      unsigned char c1 = static_cast<unsigned char>(s[++i]);  // U+0080..U+009F
      out += "\\u00";
      out += kHex[c1 >> 4];
      out += kHex[c1 & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void Table::Print(std::ostream& out, std::size_t max_cell) const {
  for (const std::string& line : Lines(max_cell)) out << line << '\n';
}

std::vector<std::string> Table::Lines(std::size_t max_cell, const Painter& paint) const {
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
  std::vector<std::string> lines;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    const auto& row = cells[r];
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      std::string sgr = paint ? paint(r, i, row[i]) : std::string();
      if (sgr.empty()) {
        line += row[i];
      } else {
        line += "\x1b[" + sgr + "m" + row[i] + "\x1b[0m";
      }
      if (i + 1 < row.size()) line += std::string(widths[i] - Width(row[i]) + 2, ' ');
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace tx::cli
