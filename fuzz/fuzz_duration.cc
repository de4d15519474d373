// Fuzz target "duration": ParseDuration on any text, FormatDuration on what it accepts and on
// any 64-bit value.
//
// Besides "no crash, no sanitizer report" (a signed overflow is one), it checks:
//  - a refusal is an invalid argument that quotes the text;
//  - an accepted duration is not negative and is made of digits and unit letters only;
//  - formatting an accepted duration and parsing it again gives the same value, and formatting
//    is canonical (format, parse, format gives the same text);
//  - FormatDuration of any value parses back to it (after its sign, for a negative one), as far
//    as ParseDuration's range goes.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "core/duration.h"

namespace {

[[noreturn]] void Fail(std::string_view input, std::string_view what) {
  std::fprintf(stderr, "fuzz_duration: '%.*s': %.*s\n", static_cast<int>(input.size()),
               input.data(), static_cast<int>(what.size()), what.data());
  std::abort();
}

void Expect(bool ok, std::string_view input, std::string_view what) {
  if (!ok) Fail(input, what);
}

void CheckRoundTrip(std::string_view input, tx::Millis ms) {
  std::string text = tx::FormatDuration(ms);
  auto again = tx::ParseDuration(text);
  Expect(again.ok(), input, "FormatDuration gave '" + text + "', which does not parse");
  Expect(*again == ms, input, "'" + text + "' parses to " + std::to_string(*again));
  Expect(tx::FormatDuration(*again) == text, input, "formatting is not canonical: " + text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto parsed = tx::ParseDuration(text);
  if (!parsed.ok()) {
    Expect(parsed.error().code() == tx::ErrorCode::kInvalidArgument, text, "not invalid_argument");
    std::string quoted = "'" + std::string(text) + "'";
    Expect(parsed.error().message().find(quoted) != std::string::npos, text,
           "the refusal does not quote the text: " + parsed.error().message());
  } else {
    Expect(*parsed >= 0, text, "negative: " + std::to_string(*parsed));
    for (char c : text) {
      Expect((c >= '0' && c <= '9') || c == 'm' || c == 's' || c == 'h' || c == 'd', text,
             "accepted a character that is neither a digit nor a unit");
    }
    CheckRoundTrip(text, *parsed);
  }

  // A time the worker protocol reads back (ParseTime) is exactly one FormatTime writes.
  if (auto t = tx::ParseTime(text); t.ok()) {
    Expect(*t >= 0 && tx::FormatTime(*t) == text, text, "a time that does not format back");
  }

  // The first 8 bytes as a value to format.
  std::int64_t v = 0;
  std::memcpy(&v, data, std::min(size, sizeof v));
  std::string formatted = tx::FormatDuration(v);
  std::string_view magnitude = formatted;
  if (v < 0) {
    Expect(magnitude.starts_with('-'), formatted, "a negative value without its sign");
    magnitude.remove_prefix(1);
  }
  auto back = tx::ParseDuration(magnitude);
  if (back.ok()) {
    Expect(v < 0 ? *back == -static_cast<__int128>(v) : *back == v, formatted,
           "parses back to " + std::to_string(*back) + ", not " + std::to_string(v));
  } else {
    // Refused only beyond the range ParseDuration accepts.
    Expect(v > std::numeric_limits<tx::Millis>::max() / 4 ||
               v < -(std::numeric_limits<tx::Millis>::max() / 4),
           formatted, "FormatDuration gave text ParseDuration refuses");
  }
  return 0;
}
