#pragma once
// The small pieces every route of the HTTP API shares: replies in the one error shape, and
// strict reading of query parameters.

#include <httplib.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/store_pool.h"
#include "core/error.h"

namespace tx::api {

inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;
// The query parameter that may carry a bearer token on reads (an EventSource cannot set headers).
inline constexpr const char* kAccessTokenParam = "access_token";

void Reply(httplib::Response& res, int status, const nlohmann::json& body);
// A body already written as JSON text (core/json.h's ToJsonText): sent as it is.
struct JsonText {
  std::string text;
};
void Reply(httplib::Response& res, int status, JsonText body);
// {"error": {"code", "message"}} with `status`.
void ReplyError(httplib::Response& res, int status, std::string_view code, std::string message);
// The same for an Error: its code's HTTP status and name.
void ReplyError(httplib::Response& res, const Error& e);
// The error code name of a status the library or the auth rules set (401, 403, 404, 405, 413).
std::string_view CodeOfStatus(int status);

// Runs `fn(store)` with a store of `pool` and replies with the JSON (a json or JsonText) it
// returns (`ok_status`), or with its error.
template <typename Fn>
void ReplyWithStore(StorePool& pool, httplib::Response& res, int ok_status, Fn&& fn) {
  Result<StorePool::Lease> s = pool.Acquire();
  if (!s.ok()) return ReplyError(res, s.error());
  auto body = fn(**s);
  if (!body.ok()) return ReplyError(res, body.error());
  Reply(res, ok_status, std::move(*body));
}

// A query parameter as a count in [lo, hi], or `fallback` when absent.
Result<int> CountParam(const httplib::Request& req, const char* name, int fallback, int lo, int hi);
// A query parameter as a non-negative number (a cursor or an event id), 0 when absent.
Result<std::int64_t> CursorParam(const httplib::Request& req, const char* name);
// A query parameter as a time: ISO-8601 UTC as the API writes times (2026-11-22T04:31:24.123Z),
// or a duration (24h, 7d) meaning that long before `now`; 0 when absent.
Result<std::int64_t> TimeParam(const httplib::Request& req, const char* name, std::int64_t now);
// Refuses query parameters a route does not know (access_token aside), so a misspelt filter is
// not silently ignored.
Status OnlyParams(const httplib::Request& req, std::initializer_list<std::string_view> known);

}  // namespace tx::api
