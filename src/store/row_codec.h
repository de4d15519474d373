#pragma once
// How list and object columns are written in the store, shared by every backend: a list of
// strings is a JSON array of strings, an object is a JSON object, both as text.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/event.h"

namespace tx::store {

// ["a","b"] → {"a","b"}; anything that is not an array of strings reads as empty.
std::vector<std::string> StringList(const std::string& text);
// What nlohmann::json(v).dump() writes, without building a json array for plain strings.
std::string ListText(const std::vector<std::string>& v);
// A JSON object's text → the object; anything else → {}.
nlohmann::json Object(const std::string& text);
// A JSON array's text → the array; anything else → [].
nlohmann::json JsonArray(const std::string& text);
// Events as the store holds them → events with their data parsed (by Object).
std::vector<Event> Parsed(std::vector<StoredEvent> stored);

// Costs are kept as whole micro-dollars (exact sums, alike on every backend).
std::int64_t UsdToMicro(double usd);
double MicroToUsd(std::int64_t micro);

}  // namespace tx::store
