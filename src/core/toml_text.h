#pragma once
// Reading config.toml, for every reader of it ([worker], [agents], [orchestrator], [[notify]]):
// a syntax error becomes one line naming the file, line and column, never an exception, and a
// table of settings is read key by key with one wording for a value that does not fit.
// Header-only, so core links nothing for it; its users link tomlplusplus.

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace tx {

inline Result<toml::table> ParseTomlText(const std::string& text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return Error::InvalidArgument(origin + ":" + std::to_string(where.line) + ":" +
                                  std::to_string(where.column) + ": " +
                                  std::string(e.description()));
  }
}

// Which TOML values an integer or a bool setting accepts.
enum class TomlTyping {
  kStrict,      // its own type only: 3 for an integer, true for a bool
  kConverting,  // also what toml++ converts without loss: 3.0 or true as an integer, 1 as a bool
};

// One table of settings, read key by key. Every key asked for is marked known, so that the rest
// can be refused by name. A refusal is one line: "ORIGIN: 'PREFIXKEY' WHAT" (without "ORIGIN: "
// when the origin is empty, for a caller that says where itself). Not thread-safe; the table it
// reads must outlive it.
class TomlTable {
 public:
  TomlTable(const toml::table& table, std::string prefix, std::string origin, TomlTyping typing)
      : table_(table), prefix_(std::move(prefix)), origin_(std::move(origin)), typing_(typing) {}

  const std::string& origin() const { return origin_; }

  // The node at `key`, or null when it is absent; `key` is known either way.
  const toml::node* Find(std::string_view key) {
    Known(key);
    return table_.get(key);
  }
  void Known(std::string_view key) { known_.emplace_back(key); }

  // Each read below leaves `out` as it was when `key` is absent, and refuses a value of another
  // type (or out of range) with Bad(key, "must be " + want).
  Status String(std::string_view key, std::string& out, std::string_view want = "a string") {
    const toml::node* n = Find(key);
    if (n == nullptr) return Ok();
    std::optional<std::string> v = n->value<std::string>();
    if (!n->is_string() || !v) return MustBe(key, want);
    out = std::move(*v);
    return Ok();
  }

  Status Strings(std::string_view key, std::vector<std::string>& out,
                 std::string_view want = "an array of strings") {
    const toml::node* n = Find(key);
    if (n == nullptr) return Ok();
    const toml::array* a = n->as_array();
    if (a == nullptr) return MustBe(key, want);
    std::vector<std::string> v;
    for (const auto& e : *a) {
      std::optional<std::string> s = e.value<std::string>();
      if (!e.is_string() || !s) return MustBe(key, want);
      v.push_back(std::move(*s));
    }
    out = std::move(v);
    return Ok();
  }

  // An integer from `lo` to `hi`.
  template <typename T>
  Status Integer(std::string_view key, std::int64_t lo, std::int64_t hi, T& out,
                 std::string_view want) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Ok();
    std::optional<std::int64_t> v = n->value<std::int64_t>();
    if ((typing_ == TomlTyping::kStrict && !n->is_integer()) || !v || *v < lo || *v > hi) {
      return MustBe(key, want);
    }
    out = static_cast<T>(*v);
    return Ok();
  }

  Status Bool(std::string_view key, bool& out, std::string_view want = "true or false") {
    const toml::node* n = Find(key);
    if (n == nullptr) return Ok();
    std::optional<bool> v = n->value<bool>();
    if ((typing_ == TomlTyping::kStrict && !n->is_boolean()) || !v) return MustBe(key, want);
    out = *v;
    return Ok();
  }

  // An integer or a float, as a double; its range is the caller's to check.
  Status Number(std::string_view key, double& out, std::string_view want) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Ok();
    std::optional<double> v = n->value<double>();
    if (!(n->is_integer() || n->is_floating_point()) || !v) return MustBe(key, want);
    out = *v;
    return Ok();
  }

  // "ORIGIN: 'PREFIXKEY' WHAT".
  Error Bad(std::string_view key, std::string_view what) const {
    std::string message = origin_.empty() ? "" : origin_ + ": ";
    message.append("'").append(prefix_).append(key).append("' ").append(what);
    return Error::InvalidArgument(std::move(message));
  }

  // The first key nobody asked for: "ORIGIN: unknown setting 'PREFIXKEY'".
  Status RefuseUnknown() const {
    for (const auto& [key, node] : table_) {
      bool known = false;
      for (const auto& k : known_) known = known || k == key.str();
      if (!known) {
        std::string message = origin_.empty() ? "" : origin_ + ": ";
        message.append("unknown setting '").append(prefix_).append(key.str()).append("'");
        return Error::InvalidArgument(std::move(message));
      }
    }
    return Ok();
  }

 protected:
  // Bad(key, "must be " + want).
  Error MustBe(std::string_view key, std::string_view want) const {
    return Bad(key, "must be " + std::string(want));
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  std::string origin_;
  TomlTyping typing_;
  std::vector<std::string> known_;
};

}  // namespace tx
