#pragma once
// The [[notify]] tables of config.toml (docs/notifications.md): where notifications go.
//
//   [[notify]]
//   url = "http://127.0.0.1:9000/hook"      # or: command = ["notify-send", "tx"]
//   secret = "s3cret"                       # optional: signs each webhook delivery
//   events = ["task.failed", "task.review"] # optional; default: DefaultNotifyEvents()
//   give_up_after = "24h"                   # optional: how long a delivery is tried

#include <string>
#include <vector>

#include "core/error.h"
#include "core/notify.h"

namespace tx::notify {

// The sinks the text names, in order; none without [[notify]] tables. Each is refused with one
// line naming the file and the table when it is not exactly one of a http(s) url or a non-empty
// command, a key is unknown, or an event is not a type ("task.failed"), "prefix.*" or "*".
Result<std::vector<SinkSpec>> ParseNotifyToml(const std::string& text, const std::string& origin);
// The same for a file; none when it does not exist.
Result<std::vector<SinkSpec>> ReadNotifyFile(const std::string& path);

}  // namespace tx::notify
