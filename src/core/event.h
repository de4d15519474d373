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

}  // namespace tx
