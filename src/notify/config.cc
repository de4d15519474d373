#include "notify/config.h"

#include <fstream>
#include <sstream>

#include "core/duration.h"
#include "core/toml_text.h"

namespace tx::notify {
namespace {

bool IsEventPattern(const std::string& p) {
  if (p == "*") return true;
  auto dot = p.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == p.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    bool word = (c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9');
    if (word || (c == '.' && i == dot)) continue;
    if (c == '*' && i == p.size() - 1 && i == dot + 1) continue;
    return false;
  }
  return true;
}

// Errors name the key alone ("'url' must be a string"): the caller says which sink of which file.
Status ParseSink(const toml::table& t, SinkSpec& sink) {
  TomlTable table(t, "", "", TomlTyping::kStrict);
  for (const auto& [key, node] : t) {
    std::string k(key.str());
    if (k == "url" || k == "secret") {
      TX_RETURN_IF_ERROR(table.String(k, k == "url" ? sink.url : sink.secret));
    } else if (k == "command") {
      TX_RETURN_IF_ERROR(table.Strings(k, sink.command, "a list of strings"));
    } else if (k == "events") {
      TX_RETURN_IF_ERROR(table.Strings(k, sink.events, "a list of strings"));
    } else if (k == "give_up_after") {
      auto v = node.value<std::string>();
      Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Error::InvalidArgument(""));
      if (!node.is_string() || !d.ok() || *d < 1'000 || *d > 7 * kDeliveryWindowMs) {
        return Error::InvalidArgument("'give_up_after' must be a duration from 1s to 168h");
      }
      sink.give_up_ms = *d;
    } else {
      return Error::InvalidArgument("unknown setting '" + k +
                                    "' (url, command, secret, events, give_up_after)");
    }
  }
  if (sink.url.empty() == sink.command.empty()) {
    return Error::InvalidArgument("give either a url or a command");
  }
  if (!sink.url.empty() && !sink.url.starts_with("http://") && !sink.url.starts_with("https://")) {
    return Error::InvalidArgument("'url' must start with http:// or https://: " + sink.url);
  }
  if (!sink.command.empty() && sink.command[0].empty()) {
    return Error::InvalidArgument("'command' must name a program first");
  }
  for (const auto& e : sink.events) {
    if (!IsEventPattern(e)) {
      return Error::InvalidArgument("'events' holds '" + e +
                                    "': give event types (task.failed), prefix.* or *");
    }
  }
  return Ok();
}

}  // namespace

Result<std::vector<SinkSpec>> ParseNotifyToml(const std::string& text, const std::string& origin) {
  TX_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(text, origin));
  std::vector<SinkSpec> out;
  const toml::node* n = root.get("notify");
  if (n == nullptr) return out;
  const toml::array* tables = n->as_array();
  if (tables == nullptr) {
    return Error::InvalidArgument(origin + ": 'notify' must be tables: write [[notify]]");
  }
  for (std::size_t i = 0; i < tables->size(); ++i) {
    const toml::table* t = (*tables)[i].as_table();
    std::string where = origin + ": [[notify]] number " + std::to_string(i + 1) + ": ";
    if (t == nullptr) return Error::InvalidArgument(where + "must be a table");
    SinkSpec sink;
    Status s = ParseSink(*t, sink);
    if (!s.ok()) return Error::InvalidArgument(where + s.error().message());
    out.push_back(std::move(sink));
  }
  return out;
}

Result<std::vector<SinkSpec>> ReadNotifyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::vector<SinkSpec>();
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseNotifyToml(buf.str(), path);
}

}  // namespace tx::notify
