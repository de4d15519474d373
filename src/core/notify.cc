#include "core/notify.h"

#include <algorithm>

#include "core/duration.h"
#include "core/json.h"

namespace tx {
namespace {

bool Matches(std::string_view pattern, std::string_view type) {
  if (pattern == "*") return true;
  if (pattern.ends_with(".*")) return type.starts_with(pattern.substr(0, pattern.size() - 1));
  return pattern == type;
}

std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const nlohmann::json& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string SinkSpec::Key() const {
  if (!url.empty()) return url;
  std::string out;
  for (const auto& a : command) out += (out.empty() ? "" : " ") + a;
  return out;
}

const std::vector<std::string>& DefaultNotifyEvents() {
  static const std::vector<std::string> kDefaults = {
      "task.review",   "task.review_overdue", "task.failed", "task.asked",      "agent.limited",
      "agent.resumed", "budget.reached",      "slot.failed", "pool.no_workers", "worker.dead",
  };
  return kDefaults;
}

bool SinkWants(const SinkSpec& sink, const Event& event) {
  if (event.type == "notify.failed" && event.data.value("sink", "") == sink.Key()) return false;
  const auto& patterns = sink.events.empty() ? DefaultNotifyEvents() : sink.events;
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return Matches(p, event.type); });
}

std::string_view ToString(DeliveryStatus s) {
  switch (s) {
    case DeliveryStatus::kPending:
      return "pending";
    case DeliveryStatus::kDelivered:
      return "delivered";
    case DeliveryStatus::kFailed:
      return "failed";
  }
  return "pending";
}

Result<DeliveryStatus> ParseDeliveryStatus(std::string_view name) {
  for (DeliveryStatus s :
       {DeliveryStatus::kPending, DeliveryStatus::kDelivered, DeliveryStatus::kFailed}) {
    if (ToString(s) == name) return s;
  }
  return Error::InvalidArgument("unknown delivery status '" + std::string(name) +
                                "' (pending, delivered, failed)");
}

nlohmann::json ToJson(const Delivery& d) {
  return {{"id", d.id},
          {"sink", d.sink},
          {"event_id", d.event_id},
          {"event_type", d.event_type},
          {"task_id", d.task_id},
          {"status", ToString(d.status)},
          {"attempts", d.attempts},
          {"created_at", FormatTime(d.created_at)},
          {"next_at", d.status == DeliveryStatus::kPending ? FormatTime(d.next_at) : ""},
          {"last_at", d.last_at > 0 ? FormatTime(d.last_at) : ""},
          {"last_error", d.last_error}};
}

Millis DeliveryRetryDelay(int failed_tries) {
  constexpr Millis kFirst = 1'000, kMax = 60 * 60'000;
  Millis delay = kFirst;
  for (int i = 1; i < failed_tries && delay < kMax; ++i) delay *= 2;
  return std::min(delay, kMax);
}

std::string NotificationText(const Event& e, const nlohmann::json& task) {
  std::string subject;
  if (!e.task_id.empty()) {
    subject = e.task_id;
    std::string title = Str(task, "title");
    if (!title.empty()) subject += " \"" + title + "\"";
  }
  const nlohmann::json& d = e.data;
  std::string text;
  if (e.type == "task.review") {
    text = subject + " is waiting for review (tx task diff " + e.task_id + ")";
  } else if (e.type == "task.review_overdue") {
    text = subject + " has waited for review past its review timeout";
  } else if (e.type == "task.failed") {
    std::string why = Str(d, "error");
    if (why.empty()) why = Str(task, "error");
    text = subject + " failed" + (why.empty() ? "" : ": " + why);
  } else if (e.type == "task.asked") {
    text = subject + " asks: " + Str(d, "question") + " (tx task answer " + e.task_id + " \"...\")";
  } else if (e.type == "agent.limited") {
    text = "agent " + Str(d, "agent") + " reached a usage limit; its tasks wait until " +
           Str(d, "until");
  } else if (e.type == "agent.resumed") {
    text = "agent " + Str(d, "agent") + " runs again";
  } else if (e.type == "budget.reached") {
    text = "the " + Str(d, "scope") + " budget of " + Str(d, "budget_usd") +
           " USD is spent; agent tasks wait";
  } else if (e.type == "slot.failed") {
    text = "slot " + Str(d, "slot") + " failed (" + Str(d, "reason") + "); retried in " +
           Str(d, "retry_in");
  } else if (e.type == "pool.no_workers") {
    text = "no live worker while " + Str(d, "ready") + " tasks wait";
  } else if (e.type == "worker.dead") {
    text = "worker " + e.worker_id + " was declared dead; its task goes back to the queue";
  } else if (e.type == "notify.failed") {
    text = "a notification to " + Str(d, "sink") + " failed for 24 hours: " + Str(d, "error");
  } else if (e.type == "notify.test") {
    text = "a test notification from tx";
  } else {
    text = e.type + (subject.empty() ? "" : " " + subject);
  }
  return "tx: " + text;
}

nlohmann::json NotificationBody(const Event& event, const nlohmann::json& task) {
  return {{"event", ToJson(event)}, {"task", task}, {"text", NotificationText(event, task)}};
}

}  // namespace tx
