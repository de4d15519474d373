#include "core/suggest.h"

#include <algorithm>
#include <vector>

namespace tx {

int EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  // d[i][j]: the distance between a's first i characters and b's first j.
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> Suggest(std::string_view typed,
                                   std::span<const std::string> candidates) {
  std::optional<std::string> best;
  int best_distance = 0;
  for (const std::string& c : candidates) {
    if (c == typed) return std::nullopt;
    int limit = std::min(typed.size(), c.size()) <= 3 ? 1 : 2;
    int distance = EditDistance(typed, c);
    if (distance > limit) continue;
    if (!best || distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace tx
