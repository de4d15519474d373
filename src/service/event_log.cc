#include "service/event_log.h"

#include <utility>

#include "store/row_codec.h"

namespace tx::service {

Result<std::vector<StoredEvent>> EventLog::StoredSince(std::int64_t after_id, int limit) {
  std::vector<StoredEvent> out;
  TX_RETURN_IF_ERROR(store_.Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(out, txn.ListStoredEvents(after_id, limit));
    return Ok();
  }));
  return out;
}

Result<std::vector<Event>> EventLog::Since(std::int64_t after_id, int limit) {
  TX_ASSIGN_OR_RETURN(std::vector<StoredEvent> stored, StoredSince(after_id, limit));
  return store::Parsed(std::move(stored));
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
