#include "cli/agent_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/agent_gate.h"
#include "exec/unique_fd.h"

namespace tx::cli {
namespace {

int Unreachable(const std::string& socket, const std::string& why) {
  std::cerr << "tx: cannot reach this agent's worker at " << socket << ": " << why << '\n';
  return 1;
}

}  // namespace

std::optional<int> RelayToWorker(const std::vector<std::string>& args) {
  const char* socket = std::getenv("TX_AGENT_SOCKET");
  if (socket == nullptr || *socket == '\0') return std::nullopt;
  for (const auto& a : args) {
    if (a.starts_with("-")) continue;
    if (a == "mcp") return std::nullopt;
    break;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = socket;
  if (path.size() >= sizeof addr.sun_path) return Unreachable(path, "path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  exec::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return Unreachable(path, std::strerror(errno));
  }
  const char* key = std::getenv("TX_AGENT_KEY");
  std::string request = EncodeAgentRequest({args, key != nullptr ? key : ""});
  for (std::size_t at = 0; at < request.size();) {
    ssize_t n = ::send(fd.get(), request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return Unreachable(path, std::strerror(errno));
    at += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  if (auto nl = reply.find('\n'); nl != std::string::npos) reply.resize(nl);
  Result<AgentReply> r = DecodeAgentReply(reply);
  if (!r.ok()) return Unreachable(path, reply.empty() ? "no reply" : r.error().message());
  std::cout << r->out << std::flush;
  std::cerr << r->err << std::flush;
  return r->exit_code;
}

}  // namespace tx::cli
