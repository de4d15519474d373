#pragma once
// The writes a PostgreSQL write transaction (PgTxn, pg_store.cc) keeps back until it sends
// anything else: task-state updates, claim updates, inserts of claims whose token their pick
// reserved, and events. Nothing is sent until Flush(), which the transaction calls before any
// other statement it sends (but its event fence, which these writes do not read) and before its
// COMMIT. One per transaction, used on its connection's thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/claim.h"
#include "core/clock.h"
#include "core/task.h"
#include "store/postgres/pg_conn.h"

namespace tx::store::postgres {

class WriteBehind {
 public:
  explicit WriteBehind(Conn& conn) : c_(conn) {}
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // The columns Txn::UpdateTaskState writes. A second write of the row replaces the first.
  void UpdateTaskState(const Task& t);
  // A claim inserted with the token its pick reserved (c.token).
  void InsertClaim(const Claim& c);
  // The columns a claim's update writes. A claim inserted here and still to be sent takes the
  // new values into its insert; a second update of the row replaces the first.
  void UpdateClaim(const Claim& c);
  // An event, numbered in the order of the calls. The caller has fenced the events
  // (EVENT_FENCE) before its first.
  void AppendEvent(const std::string& type, Millis at, const std::string& task_id,
                   const std::string& worker_id, std::string_view data);

  // Sends the writes kept back (queued: they go with the next statement that is answered, or the
  // COMMIT). Task-state updates, claim updates, claim inserts and events are kept back until
  // anything else is sent, then go as one statement per kind — claim updates, claim inserts, task
  // states, events, in that order — which is what lets a batch of claims cost a few statements
  // instead of six per task. Within a kind a row's last write stands for all of its writes (each
  // writes every column it owns); across kinds the order above is safe because none of them
  // reads another's rows (a claim names a task and a worker already written, and a claim ended
  // before another of its task's is inserted comes first: claims_one_active).
  // A kept-back update that finds no row fails at the server (tx_expect_one), which aborts the
  // transaction there.
  void Flush();

 private:
  void FlushClaimUpdates();
  void FlushClaimInserts();
  void FlushTaskStates();
  void FlushEvents();

  struct TaskState {
    std::string id;
    TaskStatus status;
    int attempt;
    Millis run_after;
    std::string result;
    std::string error;
    Millis updated_at;
    Millis started_at;
    Millis finished_at;
  };
  struct PendingEvent {
    std::string type;
    Millis at;
    std::string task_id;
    std::string worker_id;
    std::string data;
  };
  struct ClaimAt {
    bool inserted;  // in pending_inserts_, else in pending_updates_
    std::size_t index;
  };

  Conn& c_;
  std::vector<TaskState> pending_states_;
  std::unordered_map<std::string, std::size_t> pending_state_at_;  // id → pending_states_
  std::vector<Claim> pending_updates_;
  std::vector<Claim> pending_inserts_;
  std::unordered_map<std::int64_t, ClaimAt> pending_claim_at_;  // token → its pending write
  std::vector<PendingEvent> pending_events_;
};

}  // namespace tx::store::postgres
