// HttpServer's reading of requests, end to end over real sockets: a handler thread that has
// answered reads the connection's next request itself when it comes at once (a pipelined one
// from its buffer), and hands anything slower back to the loop, with the loop's timeouts and
// limits. Each test checks the answers, not which thread read them.

#include "api/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace tx::api {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// A blocking connection whose reads give up after 10 s (a hung server fails the test instead of
// hanging it). Closed on destruction.
class Connection {
 public:
  explicit Connection(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const { return connected_; }

  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // The next answer's status line and body ("" when the connection ended first).
  struct Answer {
    std::string status_line;
    std::string body;
  };
  Answer Read() {
    std::size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!More()) return {};
    }
    std::string head = pending_.substr(0, end);
    pending_.erase(0, end + 4);
    std::size_t length = 0;
    if (std::size_t at = head.find("Content-Length: "); at != std::string::npos) {
      length = std::stoul(head.substr(at + 16));
    }
    while (pending_.size() < length) {
      if (!More()) return {};
    }
    Answer a{head.substr(0, head.find("\r\n")), pending_.substr(0, length)};
    pending_.erase(0, length);
    return a;
  }

  // Whether the server closed the connection (end of stream) within the read timeout.
  bool Closed() {
    while (More()) {
    }
    return eof_;
  }

 private:
  bool More() {
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = n == 0;
      return false;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  bool eof_ = false;
  std::string pending_;
};

std::string Post(const std::string& body) {
  return "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

// Posts `body` to /echo on `c` and expects it back.
void Echoed(Connection& c, const std::string& body) {
  c.Send(Post(body));
  EXPECT_EQ(c.Read().body, body);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(int handler_threads) {
    server_.emplace(HttpServer::Options{.handler_threads = handler_threads,
                                        .max_body_bytes = 1024,
                                        .header_timeout = 1'000ms,
                                        .body_timeout = 1'000ms});
    server_->Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "text/plain");
    });
    // As the API's: a refusal's reason becomes its body.
    server_->SetErrorHandler([](const httplib::Request&, httplib::Response& res) {
      res.set_content(res.reason, "text/plain");
    });
    server_->Get("/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hello", "text/plain");
    });
    Result<int> port = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.error().message();
    port_ = *port;
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  std::optional<HttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpServerTest, RequestsOneAfterAnotherOnOneConnectionAreEachAnswered) {
  Start(2);
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 300; ++i) {
    // Now and then a pause longer than a handler waits for the next request: read by the loop.
    if (i % 50 == 49) std::this_thread::sleep_for(30ms);
    if (i % 3 == 0) {
      c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
      EXPECT_EQ(c.Read().body, "hello") << i;
    } else {
      std::string body(static_cast<std::size_t>(i), 'a' + static_cast<char>(i % 26));
      c.Send(Post(body));
      auto answer = c.Read();
      EXPECT_EQ(answer.status_line, "HTTP/1.1 200 OK") << i;
      EXPECT_EQ(answer.body, body) << i;
    }
  }
}

// Requests sent together in one write: the second and third are in the server's buffer when the
// first is answered.
TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start(2);
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  c.Send(Post("one") + "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n" + Post("three"));
  EXPECT_EQ(c.Read().body, "one");
  EXPECT_EQ(c.Read().body, "hello");
  EXPECT_EQ(c.Read().body, "three");
  // And after an answer, two more at once.
  c.Send(Post("four") + Post("five"));
  EXPECT_EQ(c.Read().body, "four");
  EXPECT_EQ(c.Read().body, "five");
}

TEST_F(HttpServerTest, ANextRequestArrivingInPiecesIsStillServed) {
  Start(2);
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  Echoed(c, "first");
  // Its header cut in two, then its body.
  const std::string second = Post("0123456789");
  c.Send(second.substr(0, 20));
  std::this_thread::sleep_for(100ms);
  c.Send(second.substr(20, second.size() - 25));
  std::this_thread::sleep_for(100ms);
  c.Send(second.substr(second.size() - 5));
  EXPECT_EQ(c.Read().body, "0123456789");
  // A client that waits for 100 Continue before its body.
  c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(c.Read().status_line, "HTTP/1.1 100 Continue");
  c.Send("body");
  EXPECT_EQ(c.Read().body, "body");
}

// The one handler thread answers B while A, having had an answer, stalls in the middle of its
// next request's header, then of its body: A is closed at the header (body) timeout.
TEST_F(HttpServerTest, AClientStallingInItsNextRequestHoldsNoThread) {
  Start(1);
  const std::string whole = Post("0123456789");
  for (const std::string& stalled : {whole.substr(0, 40), whole.substr(0, whole.size() - 5)}) {
    Connection a(port_);
    ASSERT_TRUE(a.connected());
    Echoed(a, "a");
    a.Send(stalled);
    std::this_thread::sleep_for(50ms);
    Connection b(port_);
    ASSERT_TRUE(b.connected());
    for (int i = 0; i < 20; ++i) {
      auto begin = Steady::now();
      Echoed(b, "b");
      EXPECT_LT(Steady::now() - begin, 900ms) << "B waited for a thread A held";
    }
    auto begin = Steady::now();
    EXPECT_TRUE(a.Closed());
    EXPECT_LT(Steady::now() - begin, 5s);
  }
}

TEST_F(HttpServerTest, ANextRequestOverTheBodyLimitIs413) {
  Start(2);
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  Echoed(c, "fine");
  c.Send(Post(std::string(2000, 'x')));
  auto answer = c.Read();
  EXPECT_EQ(answer.status_line, "HTTP/1.1 413 Payload Too Large");
  EXPECT_NE(answer.body.find("request body over 1024 bytes"), std::string::npos) << answer.body;
  EXPECT_TRUE(c.Closed());
}

// A client gone right after its answer, or halfway through its next request: the server goes on.
TEST_F(HttpServerTest, AClientThatHangsUpAfterAnAnswerLeavesTheServerServing) {
  Start(1);
  for (int i = 0; i < 20; ++i) {
    Connection c(port_);
    ASSERT_TRUE(c.connected());
    Echoed(c, "x");
    if (i % 2 == 1) c.Send("GET /hel");
  }
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(c.Read().body, "hello");
}

TEST_F(HttpServerTest, StopEndsAConnectionWhoseHandlerWaitsForItsNextRequest) {
  Start(1);
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  Echoed(c, "x");
  auto begin = Steady::now();
  server_->Stop();
  EXPECT_LT(Steady::now() - begin, 5s);
  EXPECT_TRUE(c.Closed());
}

// A server that waits for nothing holds two handler threads, whatever its maximum; requests that
// are handled at once get a thread each as they arrive, and those threads end once idle.
TEST(HttpServerThreads, HandlerThreadsStartForConcurrentRequestsAndEndWhenIdle) {
  Mutex mu;
  CondVar changed;
  int waiting = 0;
  bool open = false;
  HttpServer server(HttpServer::Options{.handler_threads = 256, .handler_idle_timeout = 100ms});
  // However the test ends, the handlers are let go before the server joins them.
  struct OpenAtEnd {
    Mutex& mu;
    CondVar& changed;
    bool& open;
    ~OpenAtEnd() {
      MutexLock lock(mu);
      open = true;
      changed.NotifyAll();
    }
  } open_at_end{mu, changed, open};
  server.Get("/wait", [&](const httplib::Request&, httplib::Response& res) {
    MutexLock lock(mu);
    ++waiting;
    changed.NotifyAll();
    changed.Wait(mu, [&] { return open; });
    res.set_content("done", "text/plain");
  });
  Result<int> port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message();
  EXPECT_EQ(server.running_handler_threads(), 2);

  std::vector<std::unique_ptr<Connection>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<Connection>(*port));
    ASSERT_TRUE(clients.back()->connected());
    clients.back()->Send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n");
  }
  {
    MutexLock lock(mu);
    ASSERT_TRUE(changed.WaitFor(mu, 10s, [&] { return waiting == 6; }));  // all six at once
    EXPECT_EQ(server.running_handler_threads(), 6);
    open = true;
    changed.NotifyAll();
  }
  for (auto& c : clients) EXPECT_EQ(c->Read().body, "done");
  auto deadline = Steady::now() + 10s;
  while (server.running_handler_threads() > 2 && Steady::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(server.running_handler_threads(), 2);
  server.Stop();
  EXPECT_EQ(server.running_handler_threads(), 0);
}

}  // namespace
}  // namespace tx::api
