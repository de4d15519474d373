#pragma once
// A plain-text table for people: a header row, left-aligned columns, two spaces apart, long
// cells cut with an ellipsis.

#include <ostream>
#include <string>
#include <vector>

namespace tx::cli {

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
