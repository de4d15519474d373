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
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

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

// Compares two secrets in time independent of where they differ, so that a secret cannot be
// guessed byte by byte from response times.
bool SameSecret(std::string_view a, std::string_view b);

// The token of an "Authorization: Bearer T" header value; nullopt when it is not one.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// True for an address in 127.0.0.0/8 or ::1, written as numbers ("127.0.0.1", "::1", "[::1]").
// A name is judged by what it resolves to (IsLoopbackListener in server.cc), never by its text.
bool IsLoopbackAddress(std::string_view host);

// Whether a request's Host header may reach a server listening on a loopback address: only
// loopback names ("localhost", "*.localhost", a loopback address, with any port) and those in
// `allowed` (case-insensitive), so that a page on another site cannot reach the API through a
// name it rebinds to 127.0.0.1 (DNS rebinding). A request without a Host header passes (no
// browser sends one).
bool HostAllowedOnLoopback(std::string_view host_header, const std::vector<std::string>& allowed);

// Slows down a client that keeps presenting wrong tokens: each client (its address) may fail
// kBurst times at once, then once per kRefillMs; past that its requests get 429 until the wait
// passes, whatever token they carry. Thread-safe; remembers at most kMaxClients clients (the
// oldest dropped first).
class AuthFailures {
 public:
  static constexpr int kBurst = 10;
  static constexpr Millis kRefillMs = 1'000;
  static constexpr std::size_t kMaxClients = 10'000;

  // 0 when `client` may try now, else how long it must wait.
  Millis WaitFor(const std::string& client, Millis now);
  void Failed(const std::string& client, Millis now);

 private:
  struct Bucket {
    double tokens = kBurst;
    Millis at = 0;
  };
  static void Refill(Bucket& b, Millis now);
  Mutex mu_;
  std::map<std::string, Bucket> buckets_ TX_GUARDED_BY(mu_);
};

}  // namespace tx::api
