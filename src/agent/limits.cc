#include "agent/limits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tx::agent {

namespace {

constexpr std::size_t kMaxSearched = 4096;

std::string Lower(std::string_view s) {
  std::string out(s.substr(0, kMaxSearched));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Has(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// "2pm", "2:30 pm", "14:05", "3:04 PM" at the start of `s` (lower case): hour and minute.
bool ParseClock(std::string_view s, int& hour, int& minute) {
  std::size_t i = 0;
  auto digits = [&](int max_len) {
    int v = 0, n = 0;
    while (i < s.size() && n < max_len && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = v * 10 + (s[i++] - '0');
      ++n;
    }
    return n == 0 ? -1 : v;
  };
  int h = digits(2);
  if (h < 0) return false;
  int m = 0;
  bool has_minutes = false;
  if (i < s.size() && s[i] == ':') {
    ++i;
    m = digits(2);
    if (m < 0 || m > 59) return false;
    has_minutes = true;
  }
  while (i < s.size() && s[i] == ' ') ++i;
  bool am = s.substr(i, 2) == "am" || s.substr(i, 4) == "a.m.";
  bool pm = s.substr(i, 2) == "pm" || s.substr(i, 4) == "p.m.";
  if (am || pm) {
    if (h < 1 || h > 12) return false;
    h = h % 12 + (pm ? 12 : 0);
  } else if (!has_minutes || h > 23) {
    return false;  // a bare number is not a time of day
  }
  hour = h;
  minute = m;
  return true;
}

// "nov 29th, 2026 " (Codex) or "jan 30, " (Claude, this year) at the start of `s` (lower
// case), as a reset on another day is written: sets the date (year 0 = the coming such day) and
// moves `s` past it.
bool ParseDate(std::string_view& s, int& year, int& month, int& day) {
  static constexpr std::string_view kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                 "jul", "aug", "sep", "oct", "nov", "dec"};
  int m = 0;
  for (int i = 0; i < 12; ++i) {
    if (s.starts_with(kMonths[i])) m = i + 1;
  }
  if (m == 0) return false;
  std::size_t i = s.find(' ');
  if (i == std::string_view::npos) return false;
  ++i;
  int d = 0, n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && n < 2) {
    d = d * 10 + (s[i++] - '0');
    ++n;
  }
  if (n == 0 || d < 1 || d > 31) return false;
  while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;  // "th", "st"
  if (i < s.size() && s[i] == ',') ++i;
  while (i < s.size() && s[i] == ' ') ++i;
  // A year when it is not this one ("Nov 29th, 2026 4:32 PM", "Jan 30, 2027, 9am"); else 0.
  int y = 0;
  std::size_t year_at = i;
  n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && n < 5) {
    y = y * 10 + (s[i++] - '0');
    ++n;
  }
  if (n != 4 || (i < s.size() && s[i] == ':')) {
    y = 0;  // the time of day, not a year
    i = year_at;
  } else {
    if (i < s.size() && s[i] == ',') ++i;
    while (i < s.size() && s[i] == ' ') ++i;
  }
  year = y;
  month = m;
  day = d;
  s.remove_prefix(i);
  return true;
}

// "(Europe/Berlin)" or "(UTC)" after the time, if any.
std::string ZoneAfter(std::string_view original, std::size_t from) {
  std::size_t open = original.find('(', from);
  if (open == std::string_view::npos || open > from + 12) return "";
  std::size_t close = original.find(')', open);
  if (close == std::string_view::npos) return "";
  std::string zone(original.substr(open + 1, close - open - 1));
  bool ok = !zone.empty() && zone.size() < 64 && std::all_of(zone.begin(), zone.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' ||
           c == '+';
  });
  return ok ? zone : "";
}

// "2 days 3 hours 4 minutes", "1h 5m", "1.5s", "30 seconds" at the start of `s`: milliseconds,
// 0 if none.
Millis ParseDelay(std::string_view s) {
  double total = 0;
  std::size_t i = 0;
  int parts = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (s.substr(i, 4) == "and ") i += 4;
    std::size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == start) break;
    double v = std::strtod(std::string(s.substr(start, i - start)).c_str(), nullptr);
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t u = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(u, i - u);
    double ms = 0;
    if (unit.starts_with("d")) {
      ms = 86'400'000;
    } else if (unit.starts_with("h")) {
      ms = 3'600'000;
    } else if (unit == "m" || unit.starts_with("min")) {
      ms = 60'000;
    } else if (unit == "ms" || unit.starts_with("milli")) {
      ms = 1;
    } else if (unit == "s" || unit.starts_with("sec")) {
      ms = 1'000;
    } else {
      break;
    }
    total += v * ms;
    ++parts;
  }
  return parts > 0 ? static_cast<Millis>(std::llround(total)) : 0;
}

// The text after `key` in `lower`, or npos.
std::size_t After(std::string_view lower, std::string_view key, std::size_t from = 0) {
  std::size_t at = lower.find(key, from);
  return at == std::string_view::npos ? at : at + key.size();
}

}  // namespace

ResetHint FindReset(std::string_view text) {
  ResetHint hint;
  // "...|1767225600": Claude's machine-readable form, epoch seconds.
  for (std::size_t bar = text.find('|'); bar != std::string_view::npos;
       bar = text.find('|', bar + 1)) {
    std::size_t i = bar + 1, n = 0;
    Millis v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 13) {
      v = v * 10 + (text[i++] - '0');
      ++n;
    }
    if (n == 10) hint.at = v * 1000;
    if (n == 13) hint.at = v;
    if (hint.at > 0) return hint;
  }
  std::string lower = Lower(text);
  // "try again in 2 days 3 hours", "retry after 30 seconds", "please try again in 1.5s".
  for (std::string_view key : {"try again in ", "retry in ", "retry after ", "try again after ",
                               "resets in ", "reset in ", "retry-after: "}) {
    std::size_t at = After(lower, key);
    if (at == std::string::npos) continue;
    std::string_view rest = std::string_view(lower).substr(at);
    Millis delay = ParseDelay(rest);
    // "retry-after: 30" (a bare number of seconds)
    if (delay == 0 && key == "retry-after: ") delay = ParseDelay(std::string(rest) + "s");
    if (delay > 0) {
      hint.after_ms = delay;
      return hint;
    }
  }
  // "resets 2pm (Europe/Berlin)", "reset at 7pm", "try again at 3:04 pm".
  for (std::string_view key :
       {"resets at ", "reset at ", "resets ", "try again at ", "available again at "}) {
    for (std::size_t at = After(lower, key); at != std::string::npos; at = After(lower, key, at)) {
      int hour = -1, minute = 0, year = 0, month = 0, day = 0;
      std::string_view rest = std::string_view(lower).substr(at);
      std::size_t before = rest.size();
      bool dated = ParseDate(rest, year, month, day);
      if (!ParseClock(rest, hour, minute)) continue;
      if (dated) at += before - rest.size();
      hint.hour = hour;
      hint.minute = minute;
      hint.year = year;
      hint.month = month;
      hint.day = day;
      // The zone keeps its case: it names a file of the time zone database.
      hint.zone = ZoneAfter(text, at);
      return hint;
    }
  }
  return hint;
}

std::optional<AgentEvent> RecognizeLimit(std::string_view line) {
  if (line.size() > kMaxSearched) line = line.substr(0, kMaxSearched);
  // Cheap refusal first: every form below names a limit, a quota or a rate.
  bool maybe = false;
  for (char c : line) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == 'l' || l == 'q' || l == 'r') {
      maybe = true;
      break;
    }
  }
  if (!maybe) return std::nullopt;
  std::string lower = Lower(line);
  // Typographic apostrophes ("You’ve", as Codex prints it) read as plain ones.
  std::string plain;
  plain.reserve(lower.size());
  for (std::size_t i = 0; i < lower.size(); ++i) {
    if (lower.compare(i, 3, "\xe2\x80\x99") == 0) {
      plain += '\'';
      i += 2;
    } else {
      plain += lower[i];
    }
  }
  lower = std::move(plain);
  bool limit = Has(lower, "usage limit reached") ||  // Claude (2025), Codex
               (Has(lower, "limit reached") &&
                Has(lower, "reset")) ||  // "5-hour limit reached ∙ resets 5am"
               ((Has(lower, "you've hit your") || Has(lower, "you've reached your")) &&
                Has(lower, "limit")) ||  // Claude (2026), Codex
               Has(lower, "out of usage credits") ||
               Has(lower, "org is out of usage") ||  // Claude
               Has(lower, "usage_limit_reached") || Has(lower, "rate_limit_error") ||
               Has(lower, "ratelimiterror") ||        // litellm (Aider)
               Has(lower, "has rate limited you") ||  // Aider's own words
               Has(lower, "rate limit reached") || Has(lower, "rate limit exceeded") ||
               Has(lower, "insufficient_quota") || Has(lower, "exceeded your current quota") ||
               Has(lower, "quota exceeded") || Has(lower, "429 too many requests") ||  // Codex
               Has(lower, "status: 429") || Has(lower, "request rejected (429)");
  if (!limit) return std::nullopt;
  AgentEvent e;
  e.kind = AgentEvent::Kind::kLimit;
  e.text = std::string(line);
  e.reset = FindReset(line);
  return e;
}

Result<LimitPatterns> LimitPatterns::Compile(const std::vector<std::string>& patterns) {
  LimitPatterns out;
  for (const auto& p : patterns) {
    try {
      out.regexes_.emplace_back(p,
                                std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return Error::InvalidArgument("limit pattern '" + p + "' does not compile: " + e.what());
    }
  }
  return out;
}

std::optional<AgentEvent> LimitPatterns::Match(std::string_view line) const {
  if (regexes_.empty() || line.size() > kMaxSearched) return std::nullopt;
  for (const auto& re : regexes_) {
    if (std::regex_search(line.begin(), line.end(), re)) {
      AgentEvent e;
      e.kind = AgentEvent::Kind::kLimit;
      e.text = std::string(line);
      e.reset = FindReset(line);
      return e;
    }
  }
  return std::nullopt;
}

}  // namespace tx::agent
