// Issue 23, items 9 and 10: a thousand hostile connections — idle ones, slowloris ones that send a
// header byte every 0.8 s, and event streams that are never read — against a server that also
// serves a heartbeating remote worker and a latency probe of /healthz. Before the server ran on an
// event loop, 300 such connections took every thread: /healthz stopped answering and the remote
// worker was declared dead. Speed is measured by bench/http_siege.sh; this test holds the
// behaviour: every probe answered, none slow beyond a generous bound, streams past the cap refused
// with 503, the worker alive and its task done.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http_client.h"
#include "orchestrator_fixture.h"

namespace {

using namespace tx::testing;
using Steady = std::chrono::steady_clock;

// A non-blocking connection to 127.0.0.1:port, or -1.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void SendSome(int fd, const std::string& s) {
  (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// What arrived on `fd` so far (non-blocking).
std::string Received(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

class HttpSiegeTest : public OrchestratorTest {};

TEST_F(HttpSiegeTest, AThousandHostileConnectionsStarveNeitherHealthzNorARemoteWorker) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 8192);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  ASSERT_GE(files.rlim_cur, 2048u) << "this test needs 2048 open files";

  std::ofstream(Path(".tx/tokens")) << "worker w-secret\n";
  StartOrchestrator({"--workers", "0", "--http", "127.0.0.1:0", "--reconcile-interval", "1s"});
  std::string url = Status()["config"].value("http", "");
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  // The worker is dead after two beats missed. Under a sanitizer build on a 2-core machine shared
  // with other tests, its beats under siege came 500 ms late (three busy loops beside it: the
  // oldest beat seen 1.5 s at a 1 s pace), and at a 500 ms pace CI saw it declared dead. 2 s
  // is still 15 times the default's pace; the old server, starved, answered nothing at all.
  constexpr const char* kBeat = "2s";
  fs::path home = dir_.path() / "remote";
  fs::create_directories(home);
  BackgroundProcess remote(TX_BINARY,
                           {"worker", "start", "--server", url, "--token", "w-secret", "--name",
                            "far", "--heartbeat-interval", kBeat},
                           Env{}, home.string(), (home / "worker.out").string());
  std::string far_id;
  ASSERT_TRUE(WaitFor([&] {
    RunResult r = Tx({"--json", "worker", "status", "far"});
    if (r.exit_code != 0) return false;
    json w = json::parse(r.out);
    far_id = w.value("id", "");
    return w.value("status", "") == "idle";
  })) << remote.Output();

  // The oldest the worker's last heartbeat was seen, polled through the API all along: what the
  // siege cost the worker's liveness, printed to tell a starved server from a starved machine.
  std::atomic<bool> watching{true};
  std::atomic<long> oldest_beat_ms{0};
  std::thread watcher([&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(5, 0);
    while (watching) {
      if (auto r = c.Get("/api/workers/" + far_id); r && r->status == 200) {
        json w = json::parse(r->body, nullptr, false);
        if (w.is_object() && w["heartbeat_age_ms"].is_number()) {
          long age = w["heartbeat_age_ms"].get<long>();
          if (age > oldest_beat_ms) oldest_beat_ms = age;
        }
      }
      std::this_thread::sleep_for(100ms);
    }
  });

  // The siege: 400 idle, 400 slowloris, 200 streams never read.
  constexpr int kIdle = 400, kSlow = 400, kStreams = 200;
  std::vector<int> idle, slow, streams;
  for (int i = 0; i < kIdle; ++i) idle.push_back(Connect(port));
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(Connect(port));
  }
  for (int i = 0; i < kStreams; ++i) streams.push_back(Connect(port));
  std::this_thread::sleep_for(200ms);  // connected
  for (int fd : slow) SendSome(fd, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n");
  for (int fd : streams) {
    SendSome(fd,
             "GET /api/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
  }
  std::atomic<bool> besieging{true};
  std::thread slowloris([&] {
    // A header byte every 0.8 s on each; a connection the server closed is opened again.
    while (besieging) {
      for (int& fd : slow) {
        if (::send(fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
          ::close(fd);
          fd = Connect(port);
          SendSome(fd, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n");
        }
      }
      std::this_thread::sleep_for(800ms);
    }
  });

  // The probe: /healthz on a new connection every 50 ms for 15 s, and a task for the remote
  // worker half way.
  std::vector<double> ms;
  int failed = 0;
  std::string id;
  const auto end = Steady::now() + 15s;
  while (Steady::now() < end) {
    if (id.empty() && Steady::now() > end - 8s) id = AddShellTask("echo under siege");
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(5, 0);
    auto t0 = Steady::now();
    auto r = c.Get("/healthz");
    double took = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
    if (!r || r->status != 200) {
      ++failed;
    } else {
      ms.push_back(took);
    }
    std::this_thread::sleep_for(50ms);
  }
  besieging = false;
  slowloris.join();
  watching = false;
  watcher.join();
  std::cout << "the remote worker's heartbeat was at most " << oldest_beat_ms
            << " ms old under siege (beating every " << kBeat << ", dead after two missed)\n";

  std::sort(ms.begin(), ms.end());
  ASSERT_FALSE(ms.empty());
  double p99 = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  EXPECT_EQ(failed, 0) << "probes that got no answer";
  // The target is 100 ms (bench/http_siege.sh measures it); a sanitizer build on a busy 2-core
  // machine gets a generous bound. The old server did not answer at all.
  EXPECT_LT(p99, 1000.0) << "p99 " << p99 << " ms over " << ms.size() << " probes";
  std::cout << "healthz under siege: " << ms.size() << " probes, median " << ms[ms.size() / 2]
            << " ms, p99 " << p99 << " ms\n";

  // Streams past the cap were refused with 503, the others are open.
  int refused = 0, open = 0;
  for (int fd : streams) {
    std::string got = Received(fd);
    if (got.starts_with("HTTP/1.1 503")) ++refused;
    if (got.starts_with("HTTP/1.1 200")) ++open;
  }
  EXPECT_GT(refused, 0);
  EXPECT_LE(open, 8) << "more streams than one client may hold";
  EXPECT_EQ(refused + open, kStreams);

  // The remote worker was never declared dead, and did its task.
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(WaitFor([&] { return TaskStatus(id) == "done"; }, 30s)) << remote.Output();
  json far = json::parse(Tx({"--json", "worker", "status", "far"}).out);
  EXPECT_NE(far.value("status", ""), "dead") << far.dump();
  EXPECT_EQ(Show(id)["attempts"].size(), 1u);

  for (auto* set : {&idle, &slow, &streams}) {
    for (int fd : *set) {
      if (fd >= 0) ::close(fd);
    }
  }
  remote.Signal(SIGTERM);
  EXPECT_EQ(remote.Wait(30s), 0) << remote.Output();
}

// The header must arrive within its deadline: a connection that sends part of one and stops is
// closed, and a body over the cap is a 413 whether its length is given or it comes chunked.
TEST_F(HttpSiegeTest, SlowHeadersAreCutOffAndBigChunkedBodiesAre413) {
  StartOrchestrator({"--workers", "0", "--http", "127.0.0.1:0"});
  std::string url = Status()["config"].value("http", "");
  int port = std::stoi(url.substr(url.rfind(':') + 1));

  int fd = Connect(port);
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(100ms);
  SendSome(fd, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n");
  bool closed = WaitFor(
      [&] {
        char c;
        ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      },
      20s);
  EXPECT_TRUE(closed) << "an unfinished header kept its connection past the deadline";
  ::close(fd);

  std::string token = tx::testing::ReadFile(Path(".tx/token"));
  while (!token.empty() && token.back() == '\n') token.pop_back();
  httplib::Client c("127.0.0.1", port);
  c.set_bearer_token_auth(token);
  std::string big(5 << 20, 'x');
  auto chunked = c.Post(
      "/api/tasks",
      [&](std::size_t offset, httplib::DataSink& sink) {
        if (offset < big.size()) {
          sink.write(big.data() + offset, std::min<std::size_t>(64 << 10, big.size() - offset));
        } else {
          sink.done();
        }
        return true;
      },
      "application/json");
  if (chunked) {  // the server may close before the client has sent it all
    EXPECT_EQ(chunked->status, 413) << chunked->body;
  }
  auto sized = c.Post("/api/tasks", big, "application/json");
  if (sized) {
    EXPECT_EQ(sized->status, 413) << sized->body;
  }
  EXPECT_TRUE(chunked || sized) << "neither got an answer";
  EXPECT_EQ(c.Get("/healthz")->status, 200);
}

}  // namespace
