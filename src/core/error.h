#pragma once
// Error and Result: the one error type of tx. A closed set of codes, each mapped once to an exit
// code (cli) and an HTTP status (api). Library exceptions and errno are converted at the edge.

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tx {

enum class ErrorCode {
  kInvalidArgument,  // bad input: exit 2, HTTP 400
  kNotFound,         // unknown task / worker / claim: exit 3, HTTP 404
  kConflict,         // wrong state, stale token, already claimed: exit 4, HTTP 409
  kBackpressure,     // queue full, no capacity: exit 5, HTTP 429
  kUnavailable,      // store busy or unreachable: exit 1, HTTP 503
  kInternal,         // a bug or corrupt data: exit 1, HTTP 500
};

std::string_view CodeName(ErrorCode code);  // "invalid_argument", "not_found", ...
int ExitCode(ErrorCode code);
int HttpStatus(ErrorCode code);
// The code of an HTTP error reply, as a client reads it back: by its code name when it is one of
// ours, else by its status (401, 403 and other 4xx: invalid argument; 5xx: unavailable).
ErrorCode CodeOfHttpReply(int status, std::string_view name);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  static Error InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error Conflict(std::string m) { return {ErrorCode::kConflict, std::move(m)}; }
  static Error Backpressure(std::string m) { return {ErrorCode::kBackpressure, std::move(m)}; }
  static Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Error Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

 private:
  ErrorCode code_;
  std::string message_;
};

// Result<T> holds a T or an Error. Result<void> holds nothing or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  // By reference, not by value: a by-value parameter costs one more move of T, and results
  // carrying a Task (30 fields) are built on the hot path of every claim and report.
  Result(const T& value) : v_(std::in_place_index<0>, value) {}        // NOLINT
  Result(T&& value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  // Constructs the value in place from `args`.
  template <typename... Args>
  explicit Result(std::in_place_t, Args&&... args)
      : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  // By value, so `for (auto& x : F().value())` does not dangle.
  T value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status Ok() { return {}; }

// A failed system call as an Error, the one way errno becomes one: "WHAT: <strerror(err)>", e.g.
// "cannot open /x: No such file or directory". `what` names the call or the file; callers above
// add the task or worker it was for. Most failures of the machine around tx (a file, a pipe, a
// fork) are kUnavailable: the request may succeed later. A descriptor the kernel refuses for a
// process's own waiting (eventfd, timerfd, signalfd, inotify) is kInternal: tx asks for few of
// them, so running out is a leak or a broken machine, not a passing state.
Error PosixError(std::string_view what, int err, ErrorCode code = ErrorCode::kUnavailable);

}  // namespace tx

#define TX_CONCAT_INNER(a, b) a##b
#define TX_CONCAT(a, b) TX_CONCAT_INNER(a, b)

// Returns the error of `expr` (a Status or Result) from the enclosing function.
#define TX_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    auto&& tx_status_ = (expr);                      \
    if (!tx_status_.ok()) return tx_status_.error(); \
  } while (0)

// Declares or assigns `lhs` from a Result, or returns its error. The value is moved straight out
// of the Result (not through the by-value rvalue value()), so assigning costs one move, not two.
#define TX_ASSIGN_OR_RETURN(lhs, expr) \
  TX_ASSIGN_OR_RETURN_IMPL(TX_CONCAT(tx_r_, __LINE__), lhs, expr)
#define TX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.error();             \
  lhs = std::move(tmp.value())
