#include "agent/prices.h"

namespace tx::agent {

PriceTable PriceTable::Defaults() {
  PriceTable t;
  // Anthropic (docs.anthropic.com, pricing; cache writes at the 5-minute rate).
  // The longest prefix wins: Opus 4.5 and every later Opus at the newer price, Opus 4 (its dated
  // ids, claude-opus-4-20250514, and the alias claude-opus-4-0) and 4.1 at the older.
  t.Set("claude-opus", {5.0, 25.0, 0.50, 6.25});
  t.Set("claude-opus-4-0", {15.0, 75.0, 1.50, 18.75});
  t.Set("claude-opus-4-1", {15.0, 75.0, 1.50, 18.75});
  t.Set("claude-opus-4-2025", {15.0, 75.0, 1.50, 18.75});
  t.Set("claude-sonnet", {3.0, 15.0, 0.30, 3.75});
  t.Set("claude-3-7-sonnet", {3.0, 15.0, 0.30, 3.75});
  t.Set("claude-haiku", {1.0, 5.0, 0.10, 1.25});
  t.Set("claude-3-5-haiku", {0.80, 4.0, 0.08, 1.0});
  // OpenAI (openai.com/api/pricing; cached input as cache reads, no cache writes).
  t.Set("gpt-5", {1.25, 10.0, 0.125, 0});
  t.Set("gpt-5-codex", {1.25, 10.0, 0.125, 0});
  t.Set("gpt-5-mini", {0.25, 2.0, 0.025, 0});
  t.Set("gpt-5-nano", {0.05, 0.40, 0.005, 0});
  t.Set("gpt-4.1", {2.0, 8.0, 0.50, 0});
  t.Set("gpt-4.1-mini", {0.40, 1.60, 0.10, 0});
  t.Set("o3", {2.0, 8.0, 0.50, 0});
  t.Set("o4-mini", {1.10, 4.40, 0.275, 0});
  t.Set("default", {3.0, 15.0, 0.30, 3.75});
  return t;
}

const Price* PriceTable::For(std::string_view model) const {
  const Price* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [name, price] : prices_) {
    if (name.size() > best_len && model.starts_with(name)) {
      best = &price;
      best_len = name.size();
    }
  }
  if (best != nullptr) return best;
  auto d = prices_.find("default");
  return d == prices_.end() ? nullptr : &d->second;
}

double PriceTable::Cost(std::string_view model, const TokenCounts& t) const {
  const Price* p = For(model);
  if (p == nullptr) return 0;
  return (static_cast<double>(t.input) * p->input + static_cast<double>(t.output) * p->output +
          static_cast<double>(t.cache_read) * p->cache_read +
          static_cast<double>(t.cache_write) * p->cache_write) /
         1e6;
}

}  // namespace tx::agent
