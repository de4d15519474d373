#include "core/body_fields.h"

namespace tx {

using nlohmann::json;

Status OnlyKnownFields(const json& body, const std::set<std::string_view>& known) {
  for (const auto& [key, value] : body.items()) {
    if (!known.contains(key)) return Error::InvalidArgument("unknown field '" + key + "'");
  }
  return Ok();
}

Error WrongType(std::string_view field, std::string_view want) {
  return Error::InvalidArgument("field '" + std::string(field) + "' must be " + std::string(want));
}

Status ReadString(const json& body, std::string_view field, std::string& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  if (!it->is_string()) return WrongType(field, "a string");
  out = it->get<std::string>();
  return Ok();
}

Status ReadInteger(const json& body, std::string_view field, std::int64_t& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  if (!it->is_number_integer()) return WrongType(field, "an integer");
  // nlohmann keeps a non-negative integer unsigned: one past INT64_MAX would wrap to negative.
  if (it->is_number_unsigned() &&
      it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    return Error::InvalidArgument("field '" + std::string(field) + "' is out of range");
  }
  out = it->get<std::int64_t>();
  return Ok();
}

Status ReadBool(const json& body, std::string_view field, bool& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  if (!it->is_boolean()) return WrongType(field, "true or false");
  out = it->get<bool>();
  return Ok();
}

Status ReadStrings(const json& body, std::string_view field, std::vector<std::string>& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  if (!it->is_array()) return WrongType(field, "an array of strings");
  std::vector<std::string> v;
  for (const auto& x : *it) {
    if (!x.is_string()) return WrongType(field, "an array of strings");
    v.push_back(x.get<std::string>());
  }
  out = std::move(v);
  return Ok();
}

Status ReadObject(const json& body, std::string_view field, std::optional<json>& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Ok();
  if (!it->is_object()) return WrongType(field, "a JSON object");
  out = *it;
  return Ok();
}

}  // namespace tx
