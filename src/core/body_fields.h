#pragma once
// Reading the fields of a JSON request body, one way for every decoder of the HTTP API (api/
// requests.h, api/new_task.h, the remote-worker protocol's service/worker_wire.h): each
// reader leaves `out` as it is when the field is absent or null, and refuses a wrong type with an
// invalid argument naming the field. Pure: no I/O.

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx {

// Refuses any key of `body` not in `known`, naming it.
Status OnlyKnownFields(const nlohmann::json& body, const std::set<std::string_view>& known);
Error WrongType(std::string_view field, std::string_view want);
Status ReadString(const nlohmann::json& body, std::string_view field, std::string& out);
Status ReadInteger(const nlohmann::json& body, std::string_view field, std::int64_t& out);
Status ReadBool(const nlohmann::json& body, std::string_view field, bool& out);
Status ReadStrings(const nlohmann::json& body, std::string_view field,
                   std::vector<std::string>& out);
Status ReadObject(const nlohmann::json& body, std::string_view field,
                  std::optional<nlohmann::json>& out);

}  // namespace tx
