#include "service/notify_outbox.h"

#include "core/ids.h"
#include "core/json.h"

namespace tx::service {
namespace {

// "dlv-" and 16 hex characters (64 random bits): unique among any store's deliveries.
std::string NewDeliveryId() { return "dlv-" + NewToken().substr(0, 16); }

Result<nlohmann::json> TaskJson(store::Txn& txn, const std::string& task_id) {
  if (task_id.empty()) return nlohmann::json();
  TX_ASSIGN_OR_RETURN(std::optional<Task> task, txn.GetTask(task_id));
  if (!task) return nlohmann::json();
  TX_ASSIGN_OR_RETURN(std::vector<Claim> attempts, txn.ListClaimsForTask(task_id));
  TX_ASSIGN_OR_RETURN(std::vector<AttemptUsage> usage, txn.ListUsageForTask(task_id));
  return ToJson(*task, attempts, usage);
}

}  // namespace

Result<FanOutReport> NotifyOutbox::FanOut(const std::vector<SinkSpec>& sinks, int limit) {
  FanOutReport report;
  Millis now = clock_.Now();
  // Most rounds find nothing new: a read says so without taking the write lock.
  bool news = false;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(report.cursor, txn.GetNotifyCursor());
    TX_ASSIGN_OR_RETURN(std::int64_t last, txn.LastEventId());
    news = last > report.cursor;
    return Ok();
  }));
  if (!news) return report;
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    report = {};
    TX_ASSIGN_OR_RETURN(report.cursor, txn.GetNotifyCursor());
    TX_ASSIGN_OR_RETURN(std::vector<Event> events, txn.ListEvents(report.cursor, limit));
    if (events.empty()) return Ok();
    for (const Event& e : events) {
      ++report.events;
      if (now - e.at >= kDeliveryWindowMs) {
        ++report.too_old;
        continue;
      }
      std::vector<const SinkSpec*> wanting;
      for (const SinkSpec& sink : sinks) {
        if (SinkWants(sink, e)) wanting.push_back(&sink);
      }
      if (wanting.empty()) continue;
      TX_ASSIGN_OR_RETURN(nlohmann::json task, TaskJson(txn, e.task_id));
      std::string body = NotificationBody(e, task).dump();
      for (const SinkSpec* sink : wanting) {
        Delivery d;
        d.id = NewDeliveryId();
        d.sink = sink->Key();
        d.event_id = e.id;
        d.event_type = e.type;
        d.task_id = e.task_id;
        d.body = body;
        d.created_at = now;
        d.next_at = now;
        TX_RETURN_IF_ERROR(txn.InsertDelivery(d));
        ++report.queued;
      }
    }
    report.cursor = events.back().id;
    return txn.SetNotifyCursor(report.cursor);
  }));
  return report;
}

Result<std::vector<Delivery>> NotifyOutbox::Due(int limit) {
  std::vector<Delivery> out;
  Millis now = clock_.Now();
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListDueDeliveries(now, limit));
    return Ok();
  }));
  return out;
}

Result<std::optional<Millis>> NotifyOutbox::NextDueAt() {
  return store_.ReadReturning([&](store::Txn& txn) { return txn.NextDeliveryAt(); });
}

Result<Delivery> NotifyOutbox::RecordTry(std::string_view id, const Status& outcome, bool give_up,
                                         Millis window_ms) {
  Delivery out;
  Millis now = clock_.Now();
  TX_RETURN_IF_ERROR(store_.Write([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(std::optional<Delivery> d, txn.GetDelivery(id));
    if (!d) return Error::NotFound("no delivery " + std::string(id));
    out = *d;
    if (d->status != DeliveryStatus::kPending) return Ok();
    ++d->attempts;
    d->last_at = now;
    if (outcome.ok()) {
      d->status = DeliveryStatus::kDelivered;
      d->last_error.clear();
    } else {
      d->last_error = outcome.error().message();
      d->next_at = now + DeliveryRetryDelay(d->attempts);
      if (give_up || d->next_at - d->created_at >= window_ms) {
        d->status = DeliveryStatus::kFailed;
        Event e;
        e.type = "notify.failed";
        e.at = now;
        e.task_id = d->task_id;
        e.data = {{"sink", d->sink},         {"delivery", d->id},
                  {"event_id", d->event_id}, {"event_type", d->event_type},
                  {"attempts", d->attempts}, {"error", d->last_error}};
        TX_RETURN_IF_ERROR(txn.AppendEvent(e));
      }
    }
    TX_RETURN_IF_ERROR(txn.UpdateDelivery(*d));
    out = *d;
    return Ok();
  }));
  return out;
}

Result<std::vector<Delivery>> NotifyOutbox::List(std::optional<DeliveryStatus> status, int limit) {
  std::vector<Delivery> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListDeliveries(status, limit));
    return Ok();
  }));
  return out;
}

}  // namespace tx::service
