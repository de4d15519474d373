#include "service/event_log.h"

namespace tx::service {

Result<std::vector<Event>> EventLog::Since(std::int64_t after_id, int limit) {
  std::vector<Event> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListEvents(after_id, limit));
    return Ok();
  }));
  return out;
}

Result<std::vector<StoredEvent>> EventLog::StoredSince(std::int64_t after_id, int limit) {
  std::vector<StoredEvent> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListStoredEvents(after_id, limit));
    return Ok();
  }));
  return out;
}

Result<std::int64_t> EventLog::LastId() {
  std::int64_t last = 0;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(last, txn.LastEventId());
    return Ok();
  }));
  return last;
}

}  // namespace tx::service
