#pragma once
// Model prices, for the cost of an attempt whose agent reports tokens but no cost (Codex), and
// for the running estimate that a budget stops an agent by (docs/agents.md). USD per million
// tokens; `[prices."MODEL"]` in config.toml sets or adds one.

#include <map>
#include <string>
#include <string_view>

#include "core/usage.h"

namespace tx::agent {

struct Price {
  double input = 0;
  double output = 0;
  double cache_read = 0;
  double cache_write = 0;
  bool operator==(const Price&) const = default;
};

class PriceTable {
 public:
  // The published list prices of the models the built-in profiles run (docs/agents.md gives the
  // date), with "default" (a mid-range model's price) for a model the table does not name.
  static PriceTable Defaults();

  void Set(const std::string& model, const Price& price) { prices_[model] = price; }
  // The entry whose name is the longest prefix of `model` ("claude-sonnet-4-5" prices
  // "claude-sonnet-4-5-20250929"), else "default", else null.
  const Price* For(std::string_view model) const;
  double Cost(std::string_view model, const TokenCounts& tokens) const;
  const std::map<std::string, Price>& entries() const { return prices_; }

 private:
  std::map<std::string, Price> prices_;
};

}  // namespace tx::agent
