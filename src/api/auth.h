#pragma once
// Who may do what over HTTP. Pure: the tokens are loaded by the caller (LoadTokens).
//
// The rules (README, "HTTP API"):
// - a request with a bearer token is judged by the token alone: unknown → 401, a scope that does
//   not cover the route → 403;
// - a request without one is let through only when the server listens on a loopback address and
//   the request changes nothing (GET, HEAD); every other request → 401.
// Scopes: `admin` may do everything; `read` may read; `worker` may use the worker protocol and
// read.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace tx::api {

enum class Scope { kRead, kWorker, kAdmin };
std::string_view ToString(Scope s);
Result<Scope> ParseScope(std::string_view name);

// What a route needs.
enum class Access { kRead, kWorker, kAdmin };

struct Tokens {
  std::map<std::string, Scope, std::less<>> by_token;
};

// `.tx/token` (admin, made by tx init) and `.tx/tokens` (one "SCOPE TOKEN" per line, made by
// tx token add), beside the store. A missing file holds no tokens; a malformed line is refused
// naming the file and line.
Result<Tokens> LoadTokens(const std::string& store_dir);

struct Verdict {
  int http_status = 0;  // 0 = allowed, else 401 or 403
  std::string message;
};

Verdict Authorize(const Tokens& tokens, bool loopback_listener, bool mutating, Access need,
                  std::optional<std::string_view> bearer);

// The token of an "Authorization: Bearer T" header value; nullopt when it is not one.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// True for 127.0.0.0/8, ::1 and localhost.
bool IsLoopbackHost(std::string_view host);

}  // namespace tx::api
