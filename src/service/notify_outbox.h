#pragma once
// NotifyOutbox: the durable side of notifications (docs/notifications.md). The event log is the
// outbox: every event is written in the transaction of the change it records, and a cursor in
// the store says which have been fanned out to the sinks. Fanning out queues one delivery per
// event and sink that wants it and moves the cursor in one transaction, so an event is fanned
// out exactly once whatever process dies when; a delivery then stays pending until a try of it
// is recorded as delivered, or its window (kDeliveryWindowMs) is spent. The sending is notify/.
//
// One process at a time fans out and sends (the orchestrator that leads on PostgreSQL, the one
// orchestrator of an SQLite store); every method is one transaction and safe beside others.

#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/notify.h"
#include "store/store.h"

namespace tx::service {

struct FanOutReport {
  int events = 0;           // events read past the cursor
  int queued = 0;           // deliveries queued
  int too_old = 0;          // events passed over: older than the delivery window
  std::int64_t cursor = 0;  // where the cursor stands now
};

class NotifyOutbox {
 public:
  NotifyOutbox(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}

  // Queues the deliveries of up to `limit` events past the cursor and moves the cursor past
  // them. A delivery's body (NotificationBody) carries the task as it stands at the fan-out.
  // With no sinks the cursor still moves (nothing wants those events).
  Result<FanOutReport> FanOut(const std::vector<SinkSpec>& sinks, int limit = 256);

  // Pending deliveries due now, the earliest first.
  Result<std::vector<Delivery>> Due(int limit);
  // When the next pending delivery is due; nullopt when none is pending.
  Result<std::optional<Millis>> NextDueAt();

  // Records one try of a pending delivery: ok = delivered. Otherwise it is due again after
  // DeliveryRetryDelay, or, once `window_ms` since it was queued is spent or with `give_up`,
  // failed, with a notify.failed event. A delivery that is no longer pending is returned as it
  // is. not_found: no such delivery.
  Result<Delivery> RecordTry(std::string_view id, const Status& outcome, bool give_up = false,
                             Millis window_ms = kDeliveryWindowMs);

  // Deliveries newest first, of one status or all, at most `limit` (0 = all).
  Result<std::vector<Delivery>> List(std::optional<DeliveryStatus> status, int limit);

 private:
  store::Store& store_;
  const Clock& clock_;
};

}  // namespace tx::service
