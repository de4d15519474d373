#pragma once
// Parsing a config file's text with toml++, for every reader of config.toml ([worker], [agents],
// [orchestrator]): a syntax error becomes one line naming the file, line and column, never an
// exception. Header-only, so core links nothing for it; its users link tomlplusplus.

#include <toml++/toml.h>

#include <string>

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

}  // namespace tx
