#pragma once
// A webhook receiver for the tests (issue 22): an HTTP server on the loopback that records every
// POST to /hook and answers with the statuses it is told, and can be stopped and started again
// on the same port (a receiver that restarts).

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tx::testing {

struct Request {
  httplib::Headers headers;
  std::string body;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// Records every POST to /hook and answers with the next status queued (200 when none is).
// Stop() closes it; Start() opens it again on the same port.
class Receiver {
 public:
  Receiver() {
    // A free port, kept for the restarts.
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    ::close(fd);
  }
  ~Receiver() { Stop(); }

  void Start() {
    server_ = std::make_unique<httplib::Server>();
    server_->Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      got_.push_back({req.headers, req.body});
      int status = 200;
      if (!answers_.empty()) {
        status = answers_.front();
        answers_.pop_front();
      }
      res.status = status;
    });
    ASSERT_TRUE(server_->bind_to_port("127.0.0.1", port_)) << "port " << port_;
    // Bound and listening already: connections wait in the backlog until the thread accepts.
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  void Stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }

  void AnswerNext(std::vector<int> statuses) {
    std::lock_guard lock(mu_);
    answers_.insert(answers_.end(), statuses.begin(), statuses.end());
  }
  std::vector<Request> Got() {
    std::lock_guard lock(mu_);
    return got_;
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  int port_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Request> got_;
  std::deque<int> answers_;
};

}  // namespace tx::testing
