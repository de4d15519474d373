#pragma once
// RequestLedger: the orchestrator's answers to operators' requests (scale, create, retire), kept
// by request id until their waiters (orchestrator/control.h) have read them from the pool it
// publishes (PoolSnapshot::results, core/pool_wire.h). A waiter polls the published pool, so an
// answer must outlive a few publishes; it cannot be kept for ever, since nothing tells the
// orchestrator that it was read.
//
// Invariants: at most kCapacity answers are kept, the newest by the time their id was first
// recorded; answering an id again replaces its answer and keeps its place (a waiter reads the
// latest). An empty id is never recorded (a request that wants no answer).
//
// Not thread-safe: the orchestrator's loop owns it.

#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/pool_wire.h"

namespace tx::orchestrator {

class RequestLedger {
 public:
  // Enough for every request of a busy operator between two reads of its waiter (which polls
  // every 50 ms).
  static constexpr std::size_t kCapacity = 64;

  // Records `answer` to request `id`, dropping the oldest past kCapacity. False (and nothing
  // recorded) for an empty id.
  bool Record(const std::string& id, PoolAnswer answer);
  // The answer to `id`, or nullptr when there is none (never given, or dropped).
  const PoolAnswer* Find(const std::string& id) const;
  std::size_t size() const { return order_.size(); }
  // The answers by id: what the published pool carries as its results.
  const std::map<std::string, PoolAnswer>& answers() const { return answers_; }
  // {id: answer, ...}, as the published pool's "results".
  nlohmann::json ToJson() const { return answers_; }

 private:
  std::map<std::string, PoolAnswer> answers_;  // by id
  std::deque<std::string> order_;              // ids, oldest first
};

}  // namespace tx::orchestrator
