#pragma once
// Event: an append-only, numbered record of a state change, written in the same transaction.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"

namespace tx {

struct Event {
  std::int64_t id = 0;  // assigned by the store, increasing
  std::string type;     // "task.created", "task.claimed", "worker.dead", ...
  Millis at = 0;
  std::string task_id;
  std::string worker_id;
  nlohmann::json data = nlohmann::json::object();
};

// An event as the store holds it, its data the JSON text of an object (what Event::data.dump()
// writes). A reader that needs few events' data parses only those: parsing is most of the cost
// of reading an event.
struct StoredEvent {
  std::int64_t id = 0;
  std::string type;
  Millis at = 0;
  std::string task_id;
  std::string worker_id;
  std::string data = "{}";
};

}  // namespace tx
