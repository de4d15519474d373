#include "api/http_server.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <string_view>
#include <thread>
#include <vector>

#include "api/handler_pool.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace tx::api {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kHeaderLimit = 16 << 10;
// How long a handler thread that has answered waits for the connection's next request before it
// hands the connection back to the loop: a producer sending one request after another sends its
// next within a fraction of this.
constexpr int kLingerMs = 5;

// Writes all of `data` to the socket `fd`, waiting for room up to `timeout` in all: false when
// the client is gone or reads too slowly. (A stream's writes; the event loop is idle meanwhile.)
bool WriteAll(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
  }
  return true;
}

// Whether the client of `fd` is still there (no hang-up, no error, not shut down for writing).
bool StillConnected(int fd) {
  pollfd p{fd, POLLOUT | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) < 0) return errno == EINTR;
  return (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) == 0;
}

std::string ReasonOf(int status) {
  return std::string(http::obsolete_reason(static_cast<http::status>(status)));
}

bool BodyAllowed(int status) { return status >= 200 && status != 204 && status != 304; }

// The status line and headers of `res`, with the framing this server decides.
std::string Head(const httplib::Response& res, bool keep_alive, std::optional<std::size_t> length) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + ReasonOf(res.status) + "\r\n";
  for (const auto& [name, value] : res.headers) {
    if (beast::iequals(name, "Content-Length") || beast::iequals(name, "Connection") ||
        beast::iequals(name, "Transfer-Encoding")) {
      continue;
    }
    out += name + ": " + value + "\r\n";
  }
  if (length) {
    if (BodyAllowed(res.status)) out += "Content-Length: " + std::to_string(*length) + "\r\n";
  } else {
    out += "Transfer-Encoding: chunked\r\n";
  }
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  return out;
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
  };

  explicit Impl(Options o)
      : options(o),
        handlers({.max_threads = o.handler_threads,
                  .min_threads = std::min(2, o.handler_threads),
                  .idle_timeout = o.handler_idle_timeout}) {
    io.emplace(1);
    acceptor.emplace(*io);
  }

  Options options;
  std::vector<Route> routes;
  PreRouting pre_routing;
  Handler error_handler;
  ExceptionHandler exception_handler;

  std::atomic<bool> stopping{false};
  std::atomic<int> connections{0};
  Mutex streams_mu;
  CondVar streams_cv;
  int streams TX_GUARDED_BY(streams_mu) = 0;
  std::map<std::string, int> streams_by_client TX_GUARDED_BY(streams_mu);

  HandlerPool handlers;
  // Requests posted to `handlers` and not yet done: more than its most threads means some wait.
  std::atomic<int> handling{0};
  bool RequestsWait() const { return handling.load() > options.handler_threads; }
  // Reset by Stop, the acceptor first: destroying the loop destroys the connections it still
  // holds, each of which holds this Impl (the cycle ends there).
  std::optional<asio::io_context> io;
  std::optional<tcp::acceptor> acceptor;
  std::thread io_thread;

  bool AcquireStream(const std::string& client) {
    MutexLock lock(streams_mu);
    if (stopping || streams >= options.max_streams ||
        streams_by_client[client] >= options.max_streams_per_client) {
      if (streams_by_client[client] == 0) streams_by_client.erase(client);
      return false;
    }
    ++streams;
    ++streams_by_client[client];
    return true;
  }
  void ReleaseStream(const std::string& client) {
    MutexLock lock(streams_mu);
    --streams;
    if (--streams_by_client[client] <= 0) streams_by_client.erase(client);
    streams_cv.NotifyAll();
  }

  // Runs the hooks and the route of `req` into `res`, as cpp-httplib did.
  void Route(httplib::Request& req, httplib::Response& res) {
    res.version = "HTTP/1.1";
    try {
      if (!pre_routing || pre_routing(req, res) == Pre::kUnhandled) {
        const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
        bool found = false;
        for (const auto& r : routes) {
          if (r.method == method && std::regex_match(req.path, req.matches, r.pattern)) {
            found = true;
            r.handler(req, res);
            break;
          }
        }
        if (!found) res.status = 404;
      }
    } catch (...) {
      res.status = 500;
      if (exception_handler) exception_handler(req, res, std::current_exception());
    }
    if (res.status == -1) res.status = 200;
    if (res.status >= 400 && res.body.empty() && !res.content_provider_ && error_handler) {
      error_handler(req, res);
    }
  }

  // A reply the server makes itself (a body too large, a malformed request, a stream refused),
  // in the error handler's shape.
  // `why` reaches the error handler as res.reason.
  httplib::Response Refusal(int status, const httplib::Request& req, const std::string& why = "") {
    httplib::Response res;
    res.status = status;
    res.reason = why;
    if (error_handler) error_handler(req, res);
    return res;
  }

  void Accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<HttpServer::Impl> server, tcp::socket socket)
      : server_(std::move(server)), stream_(std::move(socket)) {
    boost::system::error_code ec;
    tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      client_ = peer.address().to_string();
      client_port_ = peer.port();
    }
    stream_.socket().set_option(tcp::no_delay(true), ec);
    ++server_->connections;
  }
  ~Session() { --server_->connections; }

  void Start() { ReadHeader(); }

 private:
  using Parser = http::request_parser<http::string_body>;

  void NewParser() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(server_->options.max_body_bytes);
  }

  void ReadHeader() {
    if (server_->stopping) return Close();
    NewParser();
    ContinueRead();
  }

  // Hands the rest of the request being read to the loop: its header, or its body.
  void ContinueRead() {
    if (parser_->is_header_done()) return OnHeader({});
    stream_.expires_after(server_->options.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return Failed(ec);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      stream_.expires_after(server_->options.write_timeout);
      asio::async_write(stream_, asio::buffer(*interim),
                        [self = shared_from_this(), interim](beast::error_code e, std::size_t) {
                          if (e) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    stream_.expires_after(server_->options.body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->Failed(ec);
                       self->OnRequest();
                     });
  }

  // A read that ended without a whole request: answered when the client can use an answer.
  void Failed(beast::error_code ec) {
    if (server_->stopping) return Close();
    if (ec == http::error::body_limit) {
      return RefuseAndClose(
          413, "request body over " + std::to_string(server_->options.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) return RefuseAndClose(431, "request headers too large");
    // A parse error is the client's malformed request; a timeout, a hang-up or a message cut
    // short leaves no one to answer.
    bool malformed = ec.category() == http::make_error_code(http::error::bad_method).category() &&
                     ec != http::error::end_of_stream && ec != http::error::partial_message &&
                     ec != http::error::need_more;
    if (malformed) return RefuseAndClose(400, "malformed request: " + ec.message());
    Close();
  }

  httplib::Request PartialRequest() {
    httplib::Request r;
    if (parser_ && parser_->is_header_done()) {
      r.method = std::string(parser_->get().method_string());
      r.path = std::string(parser_->get().target());
    }
    r.remote_addr = client_;
    return r;
  }

  // Answers, then reads and drops what the client still sends for a moment before closing: a
  // client that writes its whole body before it reads (most do) gets the answer, not a reset.
  void RefuseAndClose(int status, const std::string& why) {
    httplib::Response res = server_->Refusal(status, PartialRequest(), why);
    auto bytes = std::make_shared<std::string>(Head(res, false, res.body.size()) + res.body);
    stream_.expires_after(server_->options.write_timeout);
    asio::async_write(stream_, asio::buffer(*bytes),
                      [self = shared_from_this(), bytes](beast::error_code ec, std::size_t) {
                        if (ec) return self->Close();
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                        self->stream_.expires_after(std::chrono::seconds(2));
                        self->Drain(0);
                      });
  }

  void Drain(std::size_t dropped) {
    constexpr std::size_t kMaxDrained = 16 << 20;
    if (dropped > kMaxDrained) return Close();
    auto scratch = std::make_shared<std::array<char, 64 << 10>>();
    stream_.async_read_some(asio::buffer(*scratch), [self = shared_from_this(), scratch, dropped](
                                                        beast::error_code ec, std::size_t n) {
      if (ec) return self->Close();
      self->Drain(dropped + n);
    });
  }

  void OnRequest() {
    stream_.expires_never();
    if (server_->stopping) return Close();
    ++server_->handling;
    server_->handlers.Post([self = shared_from_this(), req = TakeRequest()] {
      struct Done {
        std::atomic<int>& handling;
        ~Done() { --handling; }
      } done{self->server_->handling};  // also when Serve throws
      self->Serve(req);
    });
  }

  std::shared_ptr<httplib::Request> TakeRequest() {
    auto msg = parser_->release();
    auto req = std::make_shared<httplib::Request>();
    req->method = std::string(msg.method_string());
    req->target = std::string(msg.target());
    req->version = msg.version() == 10 ? "HTTP/1.0" : "HTTP/1.1";
    std::string_view target = req->target;
    std::size_t q = target.find('?');
    req->path = httplib::detail::decode_url(std::string(target.substr(0, q)), false);
    if (q != std::string_view::npos) {
      httplib::detail::parse_query_text(std::string(target.substr(q + 1)), req->params);
    }
    for (const auto& field : msg) {
      req->headers.emplace(std::string(field.name_string()), std::string(field.value()));
    }
    req->body = std::move(msg.body());
    req->remote_addr = client_;
    req->remote_port = client_port_;
    keep_alive_ = msg.keep_alive();
    return req;
  }

  // On a handler thread: the request, then each next one its client sends at once (within
  // kLingerMs of the answer, while no other connection's request waits for a thread). Such a
  // request wakes this thread alone: not the loop, which would then wake a handler.
  void Serve(std::shared_ptr<httplib::Request> req) {
    while (req && Handle(*req)) req = NextRequestNow();
  }

  // On a handler thread that owns the session (no read pending): the next request when it comes
  // whole within kLingerMs; otherwise null, and its reading is the loop's.
  std::shared_ptr<httplib::Request> NextRequestNow() {
    if (server_->stopping) {
      Close();
      return nullptr;
    }
    NewParser();
    if (server_->RequestsWait()) {
      ContinueRead();
      return nullptr;
    }
    const int fd = stream_.socket().native_handle();
    if (buffer_.size() == 0) {  // (a pipelined request may be in the buffer already)
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, kLingerMs) <= 0) {
        ContinueRead();
        return nullptr;
      }
    }
    beast::error_code ec;
    switch (ParseWhatIsThere(ec)) {
      case Parsed::kWhole:
        if (server_->stopping) {
          Close();
          return nullptr;
        }
        return TakeRequest();
      case Parsed::kPartial:
        ContinueRead();
        return nullptr;
      case Parsed::kFailed:
        Failed(ec);
        return nullptr;
    }
    return nullptr;
  }

  enum class Parsed { kWhole, kPartial, kFailed };
  // Feeds the parser what the client has sent so far, without waiting for more; the errors are
  // those of Beast's reads (kFailed).
  Parsed ParseWhatIsThere(beast::error_code& ec) {
    const int fd = stream_.socket().native_handle();
    for (;;) {
      while (buffer_.size() > 0 && !parser_->is_done()) {
        std::size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == http::error::need_more) {
          ec = {};
          break;
        }
        if (ec) return Parsed::kFailed;
        if (used == 0) break;
      }
      if (parser_->is_done()) return Parsed::kWhole;
      auto space = buffer_.prepare(beast::read_size(buffer_, 64 << 10));
      ssize_t n = ::recv(fd, space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        buffer_.commit(static_cast<std::size_t>(n));
      } else if (n == 0) {
        ec = parser_->got_some() ? http::error::partial_message : http::error::end_of_stream;
        return Parsed::kFailed;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Parsed::kPartial;
      } else if (errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return Parsed::kFailed;
      }
    }
  }

  // On a handler thread: true when the answer went whole and the connection stays open (the
  // session is still this thread's); otherwise the session is the loop's, a stream's, or closed.
  bool Handle(httplib::Request& req) {
    httplib::Response res;
    server_->Route(req, res);
    if (res.content_provider_ && res.is_chunked_content_provider_ && req.method != "HEAD") {
      if (server_->AcquireStream(client_)) {
        auto holder = std::make_shared<httplib::Response>(std::move(res));
        std::thread([session = shared_from_this(), holder, impl = server_]() mutable {
          const std::string client = session->client_;
          session->Stream(*holder);  // posts its close to the loop
          session.reset();
          holder.reset();
          impl->ReleaseStream(client);  // last: Stop waits for it before it ends the loop
        }).detach();
        return false;
      }
      res = server_->Refusal(503, req,
                             "too many open streams (at most " +
                                 std::to_string(server_->options.max_streams) + " in all, " +
                                 std::to_string(server_->options.max_streams_per_client) +
                                 " per client): try again later");
      res.set_header("Retry-After", "5");
    }
    bool head = req.method == "HEAD";
    std::string bytes = Head(res, keep_alive_, res.body.size());
    if (!head && BodyAllowed(res.status)) bytes += res.body;
    return Reply(std::move(bytes));
  }

  // On a handler thread, which owns the session until it starts the next read. A reply the
  // socket takes whole is sent from here (true when the connection stays open): the loop is not
  // woken to send. The rest of a longer reply is the loop's to send.
  bool Reply(std::string bytes) {
    const int fd = stream_.socket().native_handle();
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        Close();
        return false;
      }
    }
    if (sent == bytes.size()) {
      if (keep_alive_) return true;
      Close();
      return false;
    }
    auto rest = std::make_shared<std::string>(bytes.substr(sent));
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), rest, keep = keep_alive_] { self->Send(rest, keep); });
    return false;
  }

  // On the event loop.
  void Send(std::shared_ptr<std::string> bytes, bool keep_alive) {
    stream_.expires_after(server_->options.write_timeout);
    asio::async_write(
        stream_, asio::buffer(*bytes),
        [self = shared_from_this(), bytes, keep_alive](beast::error_code ec, std::size_t) {
          if (ec || !keep_alive) return self->Close();
          self->ReadHeader();
        });
  }

  // On a stream thread of its own: the head, then each chunk the provider writes, until it is
  // done, fails, or the client goes. The event loop does nothing with the socket meanwhile.
  void Stream(httplib::Response& res) {
    const int fd = stream_.socket().native_handle();
    const auto timeout = server_->options.write_timeout;
    bool ok = WriteAll(fd, Head(res, false, std::nullopt), timeout);
    bool done = false;
    httplib::DataSink sink;
    sink.write = [&](const char* data, std::size_t n) {
      if (!ok || n == 0) return ok;
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", n);
      std::string chunk = size;
      chunk.append(data, n).append("\r\n");
      ok = WriteAll(fd, chunk, timeout);
      return ok;
    };
    sink.done = [&] { done = true; };
    sink.is_writable = [&] { return ok && StillConnected(fd); };
    std::size_t offset = 0;
    while (ok && !done) {
      if (!res.content_provider_(offset, 0, sink)) break;
    }
    res.content_provider_success_ = done;
    if (ok && done) WriteAll(fd, "0\r\n\r\n", timeout);
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  std::shared_ptr<HttpServer::Impl> server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::string client_;
  int client_port_ = -1;
  bool keep_alive_ = false;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor->async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopping || !self->acceptor->is_open()) return;
    if (!ec) {
      if (self->connections.load() >= self->options.max_connections) {
        socket.close(ec);  // full: refused at once rather than left to wait
      } else {
        std::make_shared<Session>(self, std::move(socket))->Start();
      }
    }
    self->Accept();
  });
}

HttpServer::HttpServer(Options options) : impl_(std::make_shared<Impl>(options)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Get(const std::string& pattern, Handler handler) {
  impl_->routes.push_back({"GET", std::regex(pattern), std::move(handler)});
}
void HttpServer::Post(const std::string& pattern, Handler handler) {
  impl_->routes.push_back({"POST", std::regex(pattern), std::move(handler)});
}
void HttpServer::Patch(const std::string& pattern, Handler handler) {
  impl_->routes.push_back({"PATCH", std::regex(pattern), std::move(handler)});
}
void HttpServer::Delete(const std::string& pattern, Handler handler) {
  impl_->routes.push_back({"DELETE", std::regex(pattern), std::move(handler)});
}
void HttpServer::SetPreRouting(PreRouting handler) { impl_->pre_routing = std::move(handler); }
void HttpServer::SetErrorHandler(Handler handler) { impl_->error_handler = std::move(handler); }
void HttpServer::SetExceptionHandler(ExceptionHandler handler) {
  impl_->exception_handler = std::move(handler);
}

Result<int> HttpServer::Listen(const std::string& host, int port) {
  // Each connection is a file descriptor: take all the kernel allows this process.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    long room = static_cast<long>(files.rlim_cur) - 256;  // the store's, the logs', the children's
    impl_->options.max_connections =
        static_cast<int>(std::max<long>(64, std::min<long>(impl_->options.max_connections, room)));
  }
  boost::system::error_code ec;
  tcp::resolver resolver(*impl_->io);
  auto found = resolver.resolve(host, std::to_string(port), ec);
  if (ec || found.empty()) {
    return Error::Unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                              ec.message());
  }
  tcp::endpoint at = found.begin()->endpoint();
  tcp::acceptor& a = *impl_->acceptor;
  a.open(at.protocol(), ec);
  // SO_REUSEADDR only: SO_REUSEPORT would let a second server share the port silently.
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(at, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error::Unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                              ec.message());
  }
  int bound = a.local_endpoint(ec).port();
  impl_->Accept();
  impl_->io_thread = std::thread([impl = impl_.get()] {
    for (;;) {
      try {
        impl->io->run();
        return;
      } catch (...) {
        // A handler of a connection threw: that connection is gone, the loop goes on.
      }
    }
  });
  return bound;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  asio::post(*s.io, [impl = impl_.get()] {
    boost::system::error_code ec;
    impl->acceptor->close(ec);
  });
  // Requests in flight finish (their replies may no longer be sent); the streams end once the
  // caller has ended their sources (EventHub::Stop), or at their next write's timeout.
  s.handlers.Join();
  {
    MutexLock lock(s.streams_mu);
    s.streams_cv.Wait(s.streams_mu, [&]() TX_REQUIRES(s.streams_mu) { return s.streams == 0; });
  }
  s.io->stop();
  if (s.io_thread.joinable()) s.io_thread.join();
  s.acceptor.reset();
  s.io.reset();
}

int HttpServer::handler_threads() const { return impl_->options.handler_threads; }

int HttpServer::running_handler_threads() const { return impl_->handlers.threads(); }

int HttpServer::open_streams() const {
  MutexLock lock(impl_->streams_mu);
  return impl_->streams;
}

}  // namespace tx::api
