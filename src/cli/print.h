#pragma once
// Human-readable views of the domain types (JSON views are in core/json.h).

#include <ostream>
#include <vector>

#include "core/claim.h"
#include "core/event.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/worker.h"

namespace tx::cli {

void PrintTaskTable(std::ostream& out, const std::vector<Task>& tasks);
void PrintTaskDetail(std::ostream& out, const Task& t, const std::vector<Claim>& attempts,
                     Millis now);
void PrintWorkerTable(std::ostream& out, const std::vector<Worker>& workers, Millis now);
void PrintWorkerDetail(std::ostream& out, const Worker& w, Millis now);
void PrintEventLine(std::ostream& out, const Event& e);
void PrintReport(std::ostream& out, const ReconcileReport& r);
std::string Age(Millis since, Millis now);  // "12s ago", "never"

}  // namespace tx::cli
