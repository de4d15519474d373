#pragma once
// Reading the HTTP API from tests: replies decoded, a client for one server, an event stream on a
// thread of its own, and samples of the metrics text.

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "process_probes.h"

namespace tx::testing {

using namespace std::chrono_literals;
using nlohmann::json;

// A reply: its status (-1 when the request failed), its body as JSON (discarded when it is not),
// and its Location.
struct HttpReply {
  int status = -1;
  json body;
  std::string location;
};

inline HttpReply ReplyOf(const httplib::Result& r) {
  HttpReply out;
  if (!r) return out;
  out.status = r->status;
  out.body = json::parse(r->body, nullptr, false);
  out.location = r->get_header_value("Location");
  return out;
}

// The error code of an error reply ({"error": {"code", "message"}}), or "".
inline std::string ErrorCodeOf(const HttpReply& r) {
  return r.body.is_object() && r.body.contains("error") ? r.body["error"].value("code", "") : "";
}

// Requests to one server on 127.0.0.1, with a bearer token when one is given.
class ApiClient {
 public:
  explicit ApiClient(int port, std::string token = "") : port_(port), token_(std::move(token)) {}
  // This client acting for the worker that `registration` (a reply of POST /api/worker/register)
  // registered: its calls carry that registration's credential.
  ApiClient As(const HttpReply& registration) const {
    ApiClient out = *this;
    out.credential_ = registration.body.value("credential", "");
    return out;
  }
  httplib::Client Raw() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    if (!token_.empty()) c.set_bearer_token_auth(token_);
    if (!credential_.empty()) c.set_default_headers({{"X-Tx-Worker-Credential", credential_}});
    return c;
  }
  HttpReply Get(const std::string& path) const { return ReplyOf(Raw().Get(path)); }
  HttpReply Post(const std::string& path, const json& body = json::object()) const {
    return ReplyOf(Raw().Post(path, body.dump(), "application/json"));
  }
  HttpReply Patch(const std::string& path, const json& body) const {
    return ReplyOf(Raw().Patch(path, body.dump(), "application/json"));
  }
  HttpReply Delete(const std::string& path) const { return ReplyOf(Raw().Delete(path)); }

 private:
  int port_;
  std::string token_;
  std::string credential_;
};

// An open event stream (GET /api/events with Accept: text/event-stream) read on a thread of its
// own: the frames it has delivered so far, until Close.
class EventStream {
 public:
  EventStream(int port, const std::string& path, const std::string& last_event_id = "")
      : client_("127.0.0.1", port) {
    client_.set_read_timeout(60, 0);
    httplib::Headers headers = {{"Accept", "text/event-stream"}};
    if (!last_event_id.empty()) headers.emplace("Last-Event-ID", last_event_id);
    thread_ = std::thread([this, path, headers] {
      auto r = client_.Get(
          path, headers,
          [&](const httplib::Response& res) {
            std::lock_guard lock(mu_);
            status_ = res.status;
            content_type_ = res.get_header_value("Content-Type");
            return true;
          },
          [&](const char* data, std::size_t n) {
            std::lock_guard lock(mu_);
            text_.append(data, n);
            return !closing_;
          });
      std::lock_guard lock(mu_);
      if (r && status_ == 0) status_ = r->status;
      ended_ = true;
    });
  }
  ~EventStream() { Close(); }

  void Close() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    client_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // The "data:" documents delivered so far, with the "id:" of each checked against it. Frames
  // are parsed once, as they complete (comments and the retry hint are skipped).
  std::vector<json> Events() {
    std::lock_guard lock(mu_);
    std::string::size_type end;
    while ((end = text_.find("\n\n", parsed_)) != std::string::npos) {
      std::string frame = text_.substr(parsed_, end - parsed_);
      parsed_ = end + 2;
      if (!frame.starts_with("id: ")) continue;
      auto nl = frame.find("\ndata: ");
      EXPECT_NE(nl, std::string::npos) << frame;
      if (nl == std::string::npos) continue;
      json e = json::parse(frame.substr(nl + 7), nullptr, false);
      EXPECT_EQ(e.value("id", std::int64_t{-1}), std::stoll(frame.substr(4, nl - 4))) << frame;
      events_.push_back(std::move(e));
    }
    return events_;
  }
  bool WaitForEvents(std::size_t n) {
    return WaitFor([&] { return Events().size() >= n; }, 30s);
  }
  int status() {
    std::lock_guard lock(mu_);
    return status_;
  }
  std::string content_type() {
    std::lock_guard lock(mu_);
    return content_type_;
  }
  bool ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }

 private:
  httplib::Client client_;
  std::mutex mu_;
  std::string text_, content_type_;
  std::string::size_type parsed_ = 0;
  std::vector<json> events_;
  int status_ = 0;
  bool closing_ = false, ended_ = false;
  std::thread thread_;
};

inline std::vector<std::string> TypesOf(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.value("type", ""));
  return out;
}

inline std::vector<std::int64_t> IdsOf(const std::vector<json>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e.value("id", std::int64_t{0}));
  return out;
}

// The value of the sample `series` in a metrics text, or -1 when it is missing.
inline double Sample(const std::string& text, const std::string& series) {
  std::string::size_type at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

}  // namespace tx::testing
