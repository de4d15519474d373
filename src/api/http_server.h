#pragma once
// HttpServer: the API's HTTP/1.1 server. One event loop (Boost.Asio and Beast, Debian's
// libboost-dev) owns every connection; complete requests run on handler threads, started as they
// are needed and ended when idle (api/handler_pool.h); an
// event stream or a followed log runs on a thread of its own.
//
// Why not cpp-httplib's server, which tx used before: it gives a connection a thread from the
// moment it is accepted until it closes, so 300 idle or slow connections (slowloris: a header byte
// every 0.8 s) left no thread for /healthz or a remote worker's heartbeat, which then was declared
// dead (issue 23). Here a connection holds a socket and a small buffer until its request is whole,
// and no thread: the headers must arrive within `header_timeout_ms` of the connection's first byte
// wait (else it is closed), the body within `body_timeout_ms`, a body over `max_body_bytes` is a
// 413 whether chunked or not, and a client that stops reading a reply is dropped after
// `write_timeout_ms`. Streams are capped in all and per client address (503 past either).
//
// A handler thread that has answered a request sends the answer itself and waits a few
// milliseconds for the connection's next request, which it then reads and handles: a client
// sending requests one after another (a producer adding tasks) wakes one thread a request, not
// the loop and then a handler. It waits only while no request of another connection waits for a
// thread, and reads only what has arrived: a request not whole at once goes back to the loop.
//
// Routes keep cpp-httplib's Request and Response types (the client side still uses the library):
// a route is a method and a regular expression matched against the whole decoded path, its
// groups in `req.matches`; a response with a chunked content provider is a stream. The hooks run
// as cpp-httplib's did: the pre-routing handler first (it may answer), the exception handler when
// a route throws, the error handler for any status >= 400 left without a body (an unknown route
// is a 404, HEAD runs the GET route and sends no body).
//
// Thread safety: register routes and hooks before Listen; Stop from the thread that started it.

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "core/error.h"

namespace tx::api {

class HttpServer {
 public:
  struct Options {
    int handler_threads = 256;  // at most; started as requests need them (api/handler_pool.h)
    std::chrono::milliseconds handler_idle_timeout{10'000};  // a handler idle this long ends
    std::size_t max_body_bytes = 1 << 20;
    std::chrono::milliseconds header_timeout{10'000};  // for the whole header, keep-alive included
    std::chrono::milliseconds body_timeout{30'000};
    std::chrono::milliseconds write_timeout{30'000};
    int max_streams = 64;            // open streams in all
    int max_streams_per_client = 8;  // per client address
    int max_connections = 20'000;    // and no more than the open-files limit allows
  };
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  enum class Pre { kHandled, kUnhandled };
  using PreRouting = std::function<Pre(const httplib::Request&, httplib::Response&)>;
  using ExceptionHandler =
      std::function<void(const httplib::Request&, httplib::Response&, std::exception_ptr)>;

  explicit HttpServer(Options options);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Get(const std::string& pattern, Handler handler);
  void Post(const std::string& pattern, Handler handler);
  void Patch(const std::string& pattern, Handler handler);
  void Delete(const std::string& pattern, Handler handler);
  void SetPreRouting(PreRouting handler);
  void SetErrorHandler(Handler handler);
  void SetExceptionHandler(ExceptionHandler handler);

  // Binds `host`:`port` (0: any free port) and starts serving; returns the port. Raises the
  // process's open-files limit to its hard limit, so connections are not refused for fds first.
  Result<int> Listen(const std::string& host, int port);
  // Stops accepting, closes idle connections, lets the requests in flight finish and the streams
  // end (the caller ends them first: EventHub::Stop), joins every thread. Idempotent.
  void Stop();

  int handler_threads() const;          // at most
  int running_handler_threads() const;  // now
  int open_streams() const;

  struct Impl;  // the loop, the pools and the connections (http_server.cc)

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tx::api
