#include "api/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
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

bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

namespace {

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

bool IsLoopbackAddress(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  in6_addr v6{};
  if (host.find(':') != std::string_view::npos) {
    return inet_pton(AF_INET6, std::string(host).c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
  }
  in_addr v4{};
  // inet_pton takes only the dotted quad: "127.1" or "127.public.example" are not addresses.
  return inet_pton(AF_INET, std::string(host).c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool HostAllowedOnLoopback(std::string_view host_header, const std::vector<std::string>& allowed) {
  if (host_header.empty()) return true;
  std::string host(host_header);
  // Without its port: "[::1]:8787" -> "[::1]", "localhost:8787" -> "localhost".
  if (host.front() == '[') {
    std::size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(0, close + 1);
  } else if (std::size_t colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!host.empty() && host.back() == '.') host.pop_back();  // "localhost." is localhost
  if (host == "localhost" || host.ends_with(".localhost") || IsLoopbackAddress(host)) {
    return true;
  }
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    return a.size() == host.size() &&
           std::equal(a.begin(), a.end(), host.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == y;
           });
  });
}

void AuthFailures::Refill(Bucket& b, Millis now) {
  if (now > b.at) {
    b.tokens = std::min<double>(kBurst, b.tokens + static_cast<double>(now - b.at) / kRefillMs);
  }
  b.at = now;
}

Millis AuthFailures::WaitFor(const std::string& client, Millis now) {
  MutexLock lock(mu_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) return 0;
  Refill(it->second, now);
  if (it->second.tokens >= 1) return 0;
  return static_cast<Millis>((1 - it->second.tokens) * kRefillMs) + 1;
}

void AuthFailures::Failed(const std::string& client, Millis now) {
  MutexLock lock(mu_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxClients) {
      // The bucket touched longest ago goes: a flood of addresses cannot grow the map.
      auto oldest = std::min_element(buckets_.begin(), buckets_.end(),
                                     [](auto& a, auto& b) { return a.second.at < b.second.at; });
      buckets_.erase(oldest);
    }
    it = buckets_.emplace(client, Bucket{kBurst, now}).first;
  }
  Refill(it->second, now);
  it->second.tokens = std::max(0.0, it->second.tokens - 1);
}

}  // namespace tx::api
