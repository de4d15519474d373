#pragma once
// EventLog: reads the numbered event log. Events are written by the services, each in the
// transaction of the change it records.

#include <vector>

#include "core/event.h"
#include "store/store.h"

namespace tx::service {

class EventLog {
 public:
  explicit EventLog(store::Store& store) : store_(store) {}

  // Events with id > after_id, oldest first, at most `limit` (0 = all).
  Result<std::vector<Event>> Since(std::int64_t after_id, int limit = 0);
  // The same with their data unparsed (core/event.h's StoredEvent).
  Result<std::vector<StoredEvent>> StoredSince(std::int64_t after_id, int limit = 0);
  // The id of the newest event, 0 when there is none.
  Result<std::int64_t> LastId();

 private:
  store::Store& store_;
};

}  // namespace tx::service
