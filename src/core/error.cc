#include "core/error.h"

#include <system_error>

namespace tx {

namespace {
struct CodeRow {
  ErrorCode code;
  std::string_view name;
  int exit_code;
  int http_status;
};

// The one table that maps error codes to the outside world (design.md §5).
constexpr CodeRow kCodes[] = {
    {ErrorCode::kInvalidArgument, "invalid_argument", 2, 400},
    {ErrorCode::kNotFound, "not_found", 3, 404},
    {ErrorCode::kConflict, "conflict", 4, 409},
    {ErrorCode::kBackpressure, "backpressure", 5, 429},
    {ErrorCode::kUnavailable, "unavailable", 1, 503},
    {ErrorCode::kInternal, "internal", 1, 500},
};

const CodeRow& Row(ErrorCode code) {
  for (const auto& row : kCodes) {
    if (row.code == code) return row;
  }
  return kCodes[5];
}
}  // namespace

std::string_view CodeName(ErrorCode code) { return Row(code).name; }
int ExitCode(ErrorCode code) { return Row(code).exit_code; }
int HttpStatus(ErrorCode code) { return Row(code).http_status; }

ErrorCode CodeOfHttpReply(int status, std::string_view name) {
  for (const auto& row : kCodes) {
    if (row.name == name) return row.code;
  }
  for (const auto& row : kCodes) {
    if (row.http_status == status) return row.code;
  }
  if (status == 401 || status == 403 || (status >= 400 && status < 500)) {
    return ErrorCode::kInvalidArgument;
  }
  return ErrorCode::kUnavailable;
}

Error PosixError(std::string_view what, int err, ErrorCode code) {
  // generic_category's text is strerror's, without its shared buffer.
  std::string message(what);
  message.append(": ").append(std::generic_category().message(err));
  return {code, std::move(message)};
}

}  // namespace tx
