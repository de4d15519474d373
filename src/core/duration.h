#pragma once
// Durations as people write them: "250ms", "30s", "5m", "1h", "1h30m". Printed back in the same
// form, largest unit first.

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"

namespace tx {

// Parses a duration; rejects garbage with a message that quotes it.
Result<Millis> ParseDuration(std::string_view text);

// Formats milliseconds as "1h30m", "250ms", "0s".
std::string FormatDuration(Millis ms);

// ISO-8601 UTC with milliseconds: "2026-11-22T04:31:24.123Z".
std::string FormatTime(Millis epoch_ms);
// The inverse of FormatTime, exactly that form; anything else is an invalid argument.
Result<Millis> ParseTime(std::string_view text);

}  // namespace tx
