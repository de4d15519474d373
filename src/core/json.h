#pragma once
// The wire form of each domain type, written once and shared by `--json` output and the HTTP API.
// Times are ISO-8601 UTC strings; absent times are null.

#include <nlohmann/json.hpp>
#include <vector>

#include "core/claim.h"
#include "core/event.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/worker.h"

namespace tx {

nlohmann::json ToJson(const Task& t, const std::vector<Claim>& attempts);
nlohmann::json ToJson(const Claim& c);
nlohmann::json ToJson(const Worker& w, Millis now);
nlohmann::json ToJson(const Event& e);
nlohmann::json ToJson(const ReconcileReport& r);

}  // namespace tx
