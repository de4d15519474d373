#pragma once
// Notifications (docs/notifications.md): which events reach which sink, in what words, and how
// often a delivery that did not arrive is tried again. Pure: the outbox is service/notify_outbox.h,
// the sending notify/.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/event.h"

namespace tx {

// Events older than this are not sent (the default time a delivery is tried).
inline constexpr Millis kDeliveryWindowMs = 24 * 60 * 60'000;

// A place notifications go, as a [[notify]] table of config.toml gives it: a webhook (`url`) or a
// program (`command`, the delivery's JSON on its standard input), never both.
struct SinkSpec {
  std::string url;
  std::vector<std::string> command;
  std::string secret;                     // signs a webhook's body (X-Tx-Signature); "" = unsigned
  std::vector<std::string> events;        // event types, "prefix.*" patterns; empty = the defaults
  Millis give_up_ms = kDeliveryWindowMs;  // a delivery is tried this long, then failed
  // Names the sink in the store's deliveries: its URL, or its command joined by spaces.
  std::string Key() const;
  bool operator==(const SinkSpec&) const = default;
};

// The events a sink gets when it names none: what needs a person.
const std::vector<std::string>& DefaultNotifyEvents();

// Whether the sink wants this event. A notify.failed event never goes to the sink whose delivery
// failed (it would only fail again).
bool SinkWants(const SinkSpec& sink, const Event& event);

enum class DeliveryStatus { kPending, kDelivered, kFailed };
std::string_view ToString(DeliveryStatus s);
Result<DeliveryStatus> ParseDeliveryStatus(std::string_view name);

// One event's delivery to one sink. Its id is the X-Tx-Delivery header, the same on every try.
struct Delivery {
  std::int64_t seq = 0;  // set by the store
  std::string id;
  std::string sink;  // SinkSpec::Key
  std::int64_t event_id = 0;
  std::string event_type;
  std::string task_id;
  std::string body;  // the JSON the sink receives, fixed when the delivery is queued
  DeliveryStatus status = DeliveryStatus::kPending;
  int attempts = 0;  // tries so far
  Millis created_at = 0;
  Millis next_at = 0;  // when a pending delivery is due
  Millis last_at = 0;  // the last try; 0 = none yet
  std::string last_error;
};

nlohmann::json ToJson(const Delivery& d);  // without the body

// The wait after the n-th failed try (n >= 1): 1 s, doubling, at most an hour.
Millis DeliveryRetryDelay(int failed_tries);

// One line for a person: what happened, to which task, and what to do where it says.
// `task` is the task's JSON (ToJson(Task, ...)) or null.
std::string NotificationText(const Event& event, const nlohmann::json& task);

// What a sink receives: {"event": <as tx events --json prints it>, "task": <as tx task show
// --json prints it, or null>, "text": <NotificationText>}.
nlohmann::json NotificationBody(const Event& event, const nlohmann::json& task);

}  // namespace tx
