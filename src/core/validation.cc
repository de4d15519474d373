#include "core/validation.h"

#include <charconv>

#include "core/duration.h"
#include "core/ids.h"

namespace tx {

namespace {
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

Status CheckText(std::string_view field, const std::string& value, std::size_t max) {
  if (value.size() > max) {
    return Error::InvalidArgument(std::string(field) + " is too long (" +
                                  std::to_string(value.size()) + " bytes; at most " +
                                  std::to_string(max) + ")");
  }
  return Ok();
}
}  // namespace

Status ValidateName(std::string_view field, std::string_view value) {
  bool ok = !value.empty() && value.size() <= 64;
  for (char c : value) ok = ok && IsNameChar(c);
  if (ok) return Ok();
  return Error::InvalidArgument("invalid " + std::string(field) + " '" + std::string(value) +
                                "': use 1-64 letters, digits, '_', '.', ':' or '-'");
}

bool NestsDeeperThan(std::string_view text, int max) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, which may be a quote
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Result<nlohmann::json> ParseJsonObject(std::string_view field, std::string_view text) {
  // Checked before parsing: the parsed value would be copied, and its error message quoted.
  if (NestsDeeperThan(text)) {
    return Error::InvalidArgument("invalid " + std::string(field) + ": it nests deeper than " +
                                  std::to_string(kMaxJsonDepth) + " levels");
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string shown =
        text.size() > 200 ? std::string(text.substr(0, 200)) + "…" : std::string(text);
    return Error::InvalidArgument("invalid " + std::string(field) + ": '" + shown +
                                  "' is not valid JSON");
  }
  if (!j.is_object()) {
    return Error::InvalidArgument("invalid " + std::string(field) + ": '" + std::string(text) +
                                  "' is not a JSON object");
  }
  return j;
}

Result<std::int64_t> ParseInteger(std::string_view field, std::string_view text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Error::InvalidArgument("invalid " + std::string(field) + " '" + std::string(text) +
                                  "': expected an integer");
  }
  return v;
}

Result<TaskLimits> ParseTaskLimits(const nlohmann::json& metadata) {
  TaskLimits out;
  if (!metadata.is_object() || !metadata.contains("limits")) return out;
  const nlohmann::json& l = metadata["limits"];
  if (!l.is_object()) return Error::InvalidArgument("metadata.limits must be a JSON object");
  for (const auto& [key, value] : l.items()) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
        value.get<std::int64_t>() > (std::int64_t{1} << 40)) {
      return Error::InvalidArgument("metadata.limits." + key + " must be a positive integer, not " +
                                    value.dump());
    }
    auto n = value.get<std::uint64_t>();
    if (key == "memory_mb") {
      out.memory_mb = n;
    } else if (key == "address_space_mb") {
      out.address_space_mb = n;
    } else if (key == "cpu_seconds") {
      out.cpu_seconds = n;
    } else if (key == "open_files") {
      out.open_files = n;
    } else if (key == "processes") {
      out.processes = n;
    } else if (key == "cpu_percent" && n <= 100 * 1024) {
      out.cpu_percent = static_cast<int>(n);
    } else {
      return Error::InvalidArgument("unknown limit metadata.limits." + key +
                                    " (known: memory_mb, cpu_percent, cpu_seconds, open_files, "
                                    "processes, address_space_mb)");
    }
  }
  return out;
}

Status ValidateNewTask(const Task& t, const Limits& limits) {
  if (t.title.empty()) return Error::InvalidArgument("a task needs a title");
  TX_RETURN_IF_ERROR(CheckText("title", t.title, limits.max_title));
  TX_RETURN_IF_ERROR(CheckText("description", t.description, limits.max_text));
  TX_RETURN_IF_ERROR(CheckText("instructions", t.instructions, limits.max_text));
  TX_RETURN_IF_ERROR(CheckText("deliverables", t.deliverables, limits.max_text));
  TX_RETURN_IF_ERROR(ValidateName("queue", t.queue));
  for (const auto& cap : t.requires_caps) TX_RETURN_IF_ERROR(ValidateName("capability", cap));
  if (!t.owner.empty()) TX_RETURN_IF_ERROR(ValidateName("owner", t.owner));
  for (const auto& dep : t.after) {
    if (!LooksLikeTaskId(dep)) {
      return Error::InvalidArgument("invalid task id '" + dep + "' in --after");
    }
  }
  if (t.timeout_ms <= 0 || t.timeout_ms > limits.max_task_timeout_ms) {
    return Error::InvalidArgument("invalid timeout " + FormatDuration(t.timeout_ms) +
                                  ": must be more than 0s and at most " +
                                  FormatDuration(limits.max_task_timeout_ms));
  }
  if (t.max_attempts < 1 || t.max_attempts > limits.max_attempts_cap) {
    return Error::InvalidArgument("invalid max attempts " + std::to_string(t.max_attempts) +
                                  ": must be between 1 and " +
                                  std::to_string(limits.max_attempts_cap));
  }
  if (!t.command.empty() && !t.agent.empty()) {
    return Error::InvalidArgument("a task takes --command or --agent, not both");
  }
  if (!t.metadata.is_object()) return Error::InvalidArgument("metadata must be a JSON object");
  TX_RETURN_IF_ERROR(ParseTaskLimits(t.metadata));
  return Ok();
}

Result<int> ParseCount(std::string_view field, std::string_view text, int max) {
  TX_ASSIGN_OR_RETURN(std::int64_t n, ParseInteger(field, text));
  if (n < 1 || n > max) {
    return Error::InvalidArgument("invalid " + std::string(field) + " '" + std::string(text) +
                                  "': expected a count from 1 to " + std::to_string(max));
  }
  return static_cast<int>(n);
}

std::vector<std::string> SplitCommas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::size_t start = 0;
    while (start <= v.size()) {
      std::size_t comma = v.find(',', start);
      std::string item =
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

Result<std::pair<std::string, int>> ParseListenAddress(std::string_view text) {
  auto bad = [&] {
    return Error::InvalidArgument("invalid listen address '" + std::string(text) +
                                  "': expected HOST:PORT, e.g. 127.0.0.1:8787");
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad();
  std::string host(text.substr(0, colon));
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad();
  }
  return std::pair{host, port};
}

}  // namespace tx
