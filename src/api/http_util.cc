#include "api/http_util.h"

#include <algorithm>
#include <charconv>

#include "core/duration.h"

namespace tx::api {

void Reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void Reply(httplib::Response& res, int status, JsonText body) {
  res.status = status;
  // What set_content does, without its copy of the body.
  res.body = std::move(body.text);
  res.headers.erase("Content-Type");
  res.set_header("Content-Type", "application/json");
}

void ReplyError(httplib::Response& res, int status, std::string_view code, std::string message) {
  Reply(res, status, {{"error", {{"code", code}, {"message", std::move(message)}}}});
}

void ReplyError(httplib::Response& res, const Error& e) {
  ReplyError(res, HttpStatus(e.code()), CodeName(e.code()), e.message());
}

std::string_view CodeOfStatus(int status) {
  switch (status) {
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return "payload_too_large";
    case 429:
      return "backpressure";
    case 503:
      return "unavailable";
    default:
      return status >= 500 ? "internal" : "invalid_argument";
  }
}

Result<int> CountParam(const httplib::Request& req, const char* name, int fallback, int lo,
                       int hi) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
    return Error::InvalidArgument("parameter '" + std::string(name) + "' must be a number from " +
                                  std::to_string(lo) + " to " + std::to_string(hi));
  }
  return n;
}

Result<std::int64_t> CursorParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::int64_t{0};
  std::string v = req.get_param_value(name);
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0) {
    return Error::InvalidArgument("parameter '" + std::string(name) + "' is not a cursor: " + v);
  }
  return n;
}

Result<std::int64_t> TimeParam(const httplib::Request& req, const char* name, std::int64_t now) {
  if (!req.has_param(name)) return std::int64_t{0};
  std::string v = req.get_param_value(name);
  if (Result<Millis> t = ParseTime(v); t.ok()) return *t;
  if (Result<Millis> d = ParseDuration(v); d.ok() && *d > 0) return std::max<Millis>(1, now - *d);
  return Error::InvalidArgument("parameter '" + std::string(name) +
                                "' must be a time such as 2026-11-22T04:31:24.123Z or a duration "
                                "such as 24h, not '" +
                                v + "'");
}

Status OnlyParams(const httplib::Request& req, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : req.params) {
    if (key != kAccessTokenParam && std::find(known.begin(), known.end(), key) == known.end()) {
      return Error::InvalidArgument("unknown parameter '" + key + "'");
    }
  }
  return Ok();
}

}  // namespace tx::api
