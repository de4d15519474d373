#include "worker/agent_gateway.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/ids.h"
#include "exec/command.h"
#include "exec/signals.h"

namespace tx::worker {
namespace {

constexpr std::size_t kMaxRequestBytes = 1u << 20;
constexpr int kRequestTimeoutMs = 10'000;
// A gated command is a report or a question: seconds at most, even on a busy PostgreSQL.
constexpr long long kCommandTimeoutMs = 120'000;
constexpr std::size_t kOutputCap = 1u << 20;

// Reads one line (without its '\n') within kRequestTimeoutMs in all, or until `stop` is readable;
// false on anything but a whole line.
bool ReadLine(int fd, int stop, std::string& line) {
  char buf[4096];
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    pollfd p[] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left)) <= 0 || (p[1].revents & POLLIN) != 0) return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    line.append(buf, static_cast<std::size_t>(n));
    if (auto nl = line.find('\n'); nl != std::string::npos) {
      line.resize(nl);
      return true;
    }
    if (line.size() > kMaxRequestBytes) return false;
  }
}

// Gives up once the peer has read nothing for kRequestTimeoutMs (SO_SNDTIMEO).
void WriteAll(int fd, const std::string& data) {
  timeval limit{kRequestTimeoutMs / 1000, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  for (std::size_t at = 0; at < data.size();) {
    ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;  // the agent's tx went away: nothing to tell
    at += static_cast<std::size_t>(n);
  }
}

// Something accepts connections on the Unix socket at `path` (a full backlog counts: the
// connect does not wait).
bool Listening(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return true;  // not ours to judge
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  exec::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return true;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ||
         (errno != ECONNREFUSED && errno != ENOENT);
}

void Signal(int eventfd) {
  std::uint64_t one = 1;
  (void)!::write(eventfd, &one, sizeof one);
}

}  // namespace

Result<std::unique_ptr<AgentGateway>> AgentGateway::Start(std::string tx_binary,
                                                          const std::string& parent) {
  std::string templ = parent + "/tx-agent-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return PosixError("mkdtemp " + templ, errno);
  std::string dir = templ;
  auto remove_dir = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  std::string path = dir + "/tx.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    remove_dir();
    return Error::Unavailable("socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  exec::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) {
    remove_dir();
    return PosixError("socket", errno);
  }
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path.c_str(), 0600) != 0 || ::listen(listener.get(), 16) != 0) {
    Error e = PosixError("listen on " + path, errno);
    remove_dir();
    return e;
  }
  exec::UniqueFd stop(::eventfd(0, EFD_CLOEXEC));
  exec::UniqueFd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid() || !cancel.valid()) {
    Error e = PosixError("eventfd", errno, ErrorCode::kInternal);
    remove_dir();
    return e;
  }
  return std::unique_ptr<AgentGateway>(new AgentGateway(
      std::move(tx_binary), dir, std::move(listener), std::move(stop), std::move(cancel)));
}

int AgentGateway::SweepStale(const std::string& parent, std::chrono::seconds min_age) {
  namespace fs = std::filesystem;
  const uid_t me = ::geteuid();
  const time_t now = ::time(nullptr);
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& dir = it->path();
    if (dir.filename().string().rfind("tx-agent-", 0) != 0) continue;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me) continue;
    if (now - st.st_mtime < min_age.count() || Listening((dir / "tx.sock").string())) continue;
    std::error_code gone;
    fs::remove_all(dir, gone);
    if (!gone) ++removed;
  }
  return removed;
}

AgentGateway::AgentGateway(std::string tx_binary, std::string dir, exec::UniqueFd listener,
                           exec::UniqueFd stop, exec::UniqueFd cancel)
    : tx_binary_(std::move(tx_binary)),
      dir_(std::move(dir)),
      listener_(std::move(listener)),
      stop_(std::move(stop)),
      cancel_(std::move(cancel)),
      thread_([this] { Serve(); }) {}

AgentGateway::~AgentGateway() {
  Signal(stop_.get());
  Signal(cancel_.get());
  thread_.join();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

AgentGateway::Admission AgentGateway::Admit(Attempt attempt) {
  std::string key = NewToken();  // 256 bits from the kernel, as API tokens are
  MutexLock lock(mu_);
  // The previous admission's cancel is spent: drain the counter.
  std::uint64_t spent;
  (void)!::read(cancel_.get(), &spent, sizeof spent);
  current_ = std::move(attempt);
  key_ = key;
  return Admission(this, {socket_path(), std::move(key)});
}

void AgentGateway::Dismiss(const std::string& key) {
  MutexLock lock(mu_);
  if (key_ != key) return;  // replaced by a later admission already
  current_.reset();
  key_.clear();
  Signal(cancel_.get());
}

AgentGateway::Admission::Admission(AgentGateway* gateway, AgentAccess access)
    : gateway_(gateway), access_(std::move(access)) {}

AgentGateway::Admission::Admission(Admission&& other) noexcept
    : gateway_(std::exchange(other.gateway_, nullptr)), access_(std::move(other.access_)) {}

AgentGateway::Admission::~Admission() {
  if (gateway_ != nullptr) gateway_->Dismiss(access_.key);
}

void AgentGateway::Serve() {
  // The process's signals are the worker's main loop's (its signalfd): never delivered here.
  exec::BlockAsyncSignals();
  for (;;) {
    pollfd fds[] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("agent gateway: poll: {}", std::strerror(errno));
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    exec::UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection.valid()) Answer(connection.get());
  }
}

void AgentGateway::Answer(int connection) {
  std::string line;
  if (!ReadLine(connection, stop_.get(), line)) return;
  AgentReply reply;
  std::optional<Attempt> attempt;
  Result<AgentRequest> request = DecodeAgentRequest(line);
  Result<std::vector<std::string>> args = Error::InvalidArgument("");
  if (!request.ok()) {
    args = request.error();
  } else {
    {
      MutexLock lock(mu_);
      if (current_ && !key_.empty() && request->key == key_) attempt = current_;
    }
    args = attempt ? GateAgentCommand(request->args, attempt->agent)
                   : Result<std::vector<std::string>>(Error::InvalidArgument(
                         "not the key of an attempt this worker is running"));
  }
  if (!args.ok()) {
    reply.exit_code = ExitCode(args.error().code());
    reply.err = "tx: " + args.error().message() + "\n";
    spdlog::info("{}: refused an agent's request: {}",
                 attempt ? attempt->agent.task_id : std::string("agent gateway"),
                 args.error().message());
    WriteAll(connection, EncodeAgentReply(reply));
    return;
  }
  std::vector<std::string> argv = {tx_binary_};
  argv.insert(argv.end(), args->begin(), args->end());
  Result<exec::CommandResult> ran = exec::RunCommand(argv, attempt->cwd, attempt->env, kOutputCap,
                                                     kCommandTimeoutMs, cancel_.get());
  if (!ran.ok()) {
    reply.exit_code = ExitCode(ran.error().code());
    reply.err = "tx: " + ran.error().message() + "\n";
  } else {
    reply.exit_code = ran->exit_code;
    reply.out = std::move(ran->out);
    reply.err = std::move(ran->err);
    if (ran->timed_out) reply.err += "tx: the worker's tx did not finish within 120 s\n";
  }
  WriteAll(connection, EncodeAgentReply(reply));
}

}  // namespace tx::worker
