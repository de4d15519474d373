#pragma once
// Human-readable views of the domain types (JSON views are in core/json.h).

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "core/claim.h"
#include "core/event.h"
#include "core/orchestrator.h"
#include "core/task.h"
#include "core/usage.h"
#include "core/worker.h"

namespace tx::cli {

// Waiting tasks that no running worker could claim (TaskService::Unclaimable) are marked, with
// the reasons under the table.
void PrintTaskTable(std::ostream& out, const std::vector<Task>& tasks,
                    const std::map<std::string, std::string>& unclaimable = {});
// With the usage ledger's rows of its attempts (docs/agents.md): a cost, tokens and session per
// attempt, their total, and the permission denials an agent met.
void PrintTaskDetail(std::ostream& out, const Task& t, const std::vector<Claim>& attempts,
                     const std::vector<AttemptUsage>& usage, Millis now,
                     const std::string& unclaimable = "");
// The agents' limits in force ("agents: claude limited until 14:05 UTC (in 12m): ...") and the
// day's budgets, from AgentService::Status's document; nothing when neither applies.
void PrintAgentStatus(std::ostream& out, const nlohmann::json& agents, Millis now);
// "$0.0123", "$12.40": dollars as a person reads them.
std::string Dollars(double usd);
// "2.6k", "1.2M": a token count.
std::string Count(std::int64_t n);
void PrintWorkerTable(std::ostream& out, const std::vector<Worker>& workers, const Moment& now);
void PrintWorkerDetail(std::ostream& out, const Worker& w, const Moment& now);
void PrintEventLine(std::ostream& out, const Event& e);
void PrintReport(std::ostream& out, const ReconcileReport& r);
std::string Age(Millis since, Millis now);  // "12s ago", "never"

}  // namespace tx::cli
