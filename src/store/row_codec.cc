#include "store/row_codec.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/json.h"
#include "core/usage.h"

namespace tx::store {

namespace {

using nlohmann::json;

// Parses ["a","b",...] of plain strings without escapes, the form ListText writes for them:
// every worker read on the claim path parses its queues this way, and nlohmann::json costs a
// dozen allocations for it. False when `text` is anything else.
bool ParsePlainList(std::string_view text, std::vector<std::string>& out) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  std::string_view rest = text.substr(1, text.size() - 2);
  while (!rest.empty()) {
    if (rest.front() != '"') return false;
    std::size_t end = rest.find('"', 1);
    if (end == std::string_view::npos) return false;
    std::string_view item = rest.substr(1, end - 1);
    if (!PlainJsonString(item)) return false;
    out.emplace_back(item);
    rest.remove_prefix(end + 1);
    if (rest.empty()) break;
    if (rest.front() != ',' || rest.size() == 1) return false;
    rest.remove_prefix(1);
  }
  return true;
}

}  // namespace

std::vector<std::string> StringList(const std::string& text) {
  if (text.empty() || text == "[]") return {};
  std::vector<std::string> plain;
  if (ParsePlainList(text, plain)) return plain;
  json j = json::parse(text, nullptr, false);
  std::vector<std::string> out;
  if (j.is_array()) {
    for (const auto& v : j) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

std::string ListText(const std::vector<std::string>& v) {
  if (v.empty()) return "[]";
  if (std::all_of(v.begin(), v.end(), [](const std::string& s) { return PlainJsonString(s); })) {
    std::string out = "[";  // what json(v).dump() writes, without building a json array
    for (const auto& s : v) {
      if (out.size() > 1) out += ',';
      out += '"';
      out += s;
      out += '"';
    }
    return out + "]";
  }
  return json(v).dump();
}

json Object(const std::string& text) {
  if (text.empty() || text == "{}") return json::object();
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::vector<Event> Parsed(std::vector<StoredEvent> stored) {
  std::vector<Event> out;
  out.reserve(stored.size());
  for (StoredEvent& e : stored) {
    out.push_back(Event{e.id, std::move(e.type), e.at, std::move(e.task_id), std::move(e.worker_id),
                        Object(e.data)});
  }
  return out;
}

}  // namespace tx::store

namespace tx::store {

nlohmann::json JsonArray(const std::string& text) {
  if (text.empty() || text == "[]") return nlohmann::json::array();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_array() ? j : nlohmann::json::array();
}

// Bounded as the ledger takes costs (core/usage.h), so that a sum of rows never overflows.
std::int64_t UsdToMicro(double usd) { return std::llround(BoundCost(usd) * 1e6); }
double MicroToUsd(std::int64_t micro) { return static_cast<double>(micro) / 1e6; }

}  // namespace tx::store
