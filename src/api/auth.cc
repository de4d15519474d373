#include "api/auth.h"

#include <fstream>
#include <sstream>

namespace tx::api {

std::string_view ToString(Scope s) {
  switch (s) {
    case Scope::kRead:
      return "read";
    case Scope::kWorker:
      return "worker";
    case Scope::kAdmin:
      return "admin";
  }
  return "?";
}

Result<Scope> ParseScope(std::string_view name) {
  if (name == "read") return Scope::kRead;
  if (name == "worker") return Scope::kWorker;
  if (name == "admin") return Scope::kAdmin;
  return Error::InvalidArgument("unknown scope '" + std::string(name) +
                                "' (read, worker or admin)");
}

namespace {

// Compares in time independent of where the strings differ, so a token cannot be guessed byte by
// byte from response times.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::optional<Scope> ScopeOf(const Tokens& tokens, std::string_view bearer) {
  std::optional<Scope> found;
  for (const auto& [token, scope] : tokens.by_token) {
    if (SameSecret(token, bearer)) found = scope;
  }
  return found;
}

bool Covers(Scope s, Access need) {
  switch (need) {
    case Access::kRead:
      return true;
    case Access::kWorker:
      return s == Scope::kWorker || s == Scope::kAdmin;
    case Access::kAdmin:
      return s == Scope::kAdmin;
  }
  return false;
}

std::string Trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

Result<Tokens> LoadTokens(const std::string& store_dir) {
  Tokens out;
  if (std::ifstream admin(store_dir + "/token"); admin) {
    std::string line;
    std::getline(admin, line);
    line = Trim(line);
    if (!line.empty()) out.by_token[line] = Scope::kAdmin;
  }
  std::string path = store_dir + "/tokens";
  std::ifstream scoped(path);
  std::string line;
  for (int n = 1; scoped && std::getline(scoped, line); ++n) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string scope, token, extra;
    words >> scope >> token >> extra;
    Result<Scope> s = ParseScope(scope);
    if (!s.ok() || token.empty() || !extra.empty()) {
      return Error::InvalidArgument(path + ":" + std::to_string(n) +
                                    ": expected 'SCOPE TOKEN' with SCOPE read, worker or admin");
    }
    out.by_token[token] = *s;
  }
  return out;
}

Verdict Authorize(const Tokens& tokens, bool loopback_listener, bool mutating, Access need,
                  std::optional<std::string_view> bearer) {
  if (bearer) {
    std::optional<Scope> scope = ScopeOf(tokens, *bearer);
    if (!scope) return {401, "unknown bearer token"};
    if (!Covers(*scope, need)) {
      return {403, "a " + std::string(ToString(*scope)) + " token may not do this"};
    }
    return {};
  }
  if (!loopback_listener) return {401, "a bearer token is required on a non-loopback address"};
  if (mutating || need != Access::kRead) {
    return {401, "a bearer token is required for this request (see .tx/token)"};
  }
  return {};
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (authorization.size() <= kPrefix.size() ||
      authorization.substr(0, kPrefix.size()) != kPrefix) {
    return std::nullopt;
  }
  return authorization.substr(kPrefix.size());
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

}  // namespace tx::api
