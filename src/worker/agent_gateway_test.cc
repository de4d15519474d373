#include "worker/agent_gateway.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

namespace tx::worker {
namespace {

// One request over the gateway's socket, as an agent's tx sends it.
AgentReply Ask(const std::string& socket, const std::vector<std::string>& args,
               const std::string& key) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
  exec::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  std::string request = EncodeAgentRequest({args, key});
  EXPECT_EQ(::write(fd.get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;) reply.append(buf, n);
  Result<AgentReply> r = DecodeAgentReply(reply.substr(0, reply.find('\n')));
  EXPECT_TRUE(r.ok()) << reply;
  return r.ok() ? *r : AgentReply{-1, "", ""};
}

AgentGateway::Attempt AttemptOf(const std::string& task, const std::string& token) {
  return {{task, token, ""}, {"TX_MARK=" + task}, "/"};
}

// The worker's tx stands in as /bin/echo: the reply's output is the command line it was given.
class AgentGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<AgentGateway>> made = AgentGateway::Start("/bin/echo", "/tmp");
    ASSERT_TRUE(made.ok()) << made.error().message();
    gateway_ = std::move(*made);
  }
  std::unique_ptr<AgentGateway> gateway_;
};

TEST_F(AgentGatewayTest, AnAttemptsKeyRunsItsGatedCommandOnItsOwnTask) {
  EXPECT_EQ(std::filesystem::status(gateway_->dir()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  AgentGateway::Admission a = gateway_->Admit(AttemptOf("task-aaaaaaaa", "7"));
  EXPECT_EQ(a.access().socket, gateway_->socket_path());
  EXPECT_EQ(a.access().key.size(), 64u);
  AgentReply r = Ask(a.access().socket, {"task", "done", "--result", "ok"}, a.access().key);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "task done task-aaaaaaaa --result ok\n");
  // Refused by the gate: nothing runs.
  r = Ask(a.access().socket, {"task", "cancel", "task-bbbbbbbb"}, a.access().key);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
}

TEST_F(AgentGatewayTest, AnotherKeyOrAnEndedAttemptsIsRefused) {
  std::string old_key;
  {
    AgentGateway::Admission a = gateway_->Admit(AttemptOf("task-aaaaaaaa", "7"));
    old_key = a.access().key;
    AgentReply r = Ask(gateway_->socket_path(), {"task", "show"}, "0123456789abcdef");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not the key of an attempt"), std::string::npos) << r.err;
    EXPECT_EQ(Ask(gateway_->socket_path(), {"task", "show"}, "").exit_code, 2);
  }
  // Between attempts, nothing is answered.
  EXPECT_EQ(Ask(gateway_->socket_path(), {"task", "show"}, old_key).exit_code, 2);
  // The next attempt has its own key; the last one's no longer acts, not even on its old task.
  AgentGateway::Admission b = gateway_->Admit(AttemptOf("task-bbbbbbbb", "8"));
  EXPECT_NE(b.access().key, old_key);
  AgentReply r = Ask(gateway_->socket_path(), {"task", "done"}, old_key);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  r = Ask(gateway_->socket_path(), {"task", "show"}, b.access().key);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "task show task-bbbbbbbb\n");
}

// A directory as AgentGateway::Start makes it under `parent`, its mtime set `age` in the past;
// with `socket`, a Unix socket bound in it that no one listens on (its worker was SIGKILLed).
std::string GatewayDir(const std::string& parent, std::chrono::seconds age, bool socket) {
  std::string dir = parent + "/tx-agent-XXXXXX";
  EXPECT_NE(::mkdtemp(dir.data()), nullptr);
  if (socket) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = dir + "/tx.sock";
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    exec::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  }
  timespec times[2] = {{::time(nullptr) - age.count(), 0}, {::time(nullptr) - age.count(), 0}};
  EXPECT_EQ(::utimensat(AT_FDCWD, dir.c_str(), times, 0), 0);
  return dir;
}

TEST(AgentGatewaySweepTest, RemovesOnlyOldDirectoriesWhoseSocketNoOneListensOn) {
  std::string parent = (std::filesystem::temp_directory_path() / "tx-sweep-XXXXXX").string();
  ASSERT_NE(::mkdtemp(parent.data()), nullptr);
  using std::chrono::seconds;
  std::string dead = GatewayDir(parent, seconds(600), true);
  std::string never_bound = GatewayDir(parent, seconds(600), false);
  std::string young = GatewayDir(parent, seconds(0), true);
  Result<std::unique_ptr<AgentGateway>> live = AgentGateway::Start("/bin/echo", parent);
  ASSERT_TRUE(live.ok()) << live.error().message();
  timespec old[2] = {{::time(nullptr) - 600, 0}, {::time(nullptr) - 600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (*live)->dir().c_str(), old, 0), 0);
  std::string other = parent + "/not-a-gateway";
  ASSERT_TRUE(std::filesystem::create_directory(other));
  ASSERT_EQ(::utimensat(AT_FDCWD, other.c_str(), old, 0), 0);

  EXPECT_EQ(AgentGateway::SweepStale(parent, seconds(60)), 2);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(never_bound));
  EXPECT_TRUE(std::filesystem::exists(young)) << "it may be a gateway about to listen";
  EXPECT_TRUE(std::filesystem::exists((*live)->socket_path()));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(Ask((*live)->socket_path(), {"task", "show"}, "no-key").exit_code, 2)
      << "the live gateway still answers";
  live->reset();
  std::filesystem::remove_all(parent);
}

TEST_F(AgentGatewayTest, ItsDirectoryGoesWithIt) {
  std::string dir = gateway_->dir();
  ASSERT_TRUE(std::filesystem::exists(gateway_->socket_path()));
  gateway_.reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace tx::worker
