#pragma once
// "Did you mean ...": the known name closest to a mistyped one, for the command line's unknown
// commands and flags. Pure: no I/O.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tx {

// The optimal-string-alignment (restricted Damerau-Levenshtein) distance: the fewest insertions,
// deletions, substitutions and swaps of two adjacent characters that turn `a` into `b`.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `typed`, if it is close enough to be a typo: at distance 2 or less, or 1
// or less when either name has 3 characters or fewer. Ties go to the earlier candidate. Nothing
// when `typed` is itself a candidate, or none is close.
std::optional<std::string> Suggest(std::string_view typed, std::span<const std::string> candidates);

}  // namespace tx
