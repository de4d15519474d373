#include "cli/print.h"

#include <cstdio>

#include "cli/table.h"
#include "core/duration.h"
#include "core/question.h"

namespace tx::cli {

std::string Age(Millis since, Millis now) {
  if (since <= 0) return "never";
  Millis d = now - since;
  if (d < 0) return "in " + FormatDuration(-(d / 1000) * 1000);
  return FormatDuration(d >= 1000 ? d / 1000 * 1000 : d) + " ago";
}

namespace {
// How long ago the worker last beat, as its staleness is judged (core/worker.h).
std::string HeartbeatAge(const Worker& w, const Moment& now) {
  if (w.last_heartbeat_at <= 0) return "never";
  return Age(now.wall - SilentFor(w, now), now.wall);
}

std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string Time(Millis t) { return t > 0 ? FormatTime(t) : "-"; }
}  // namespace

std::string Dollars(double usd) {
  char buf[48];
  std::snprintf(buf, sizeof buf, usd > 0 && usd < 0.995 ? "$%.4f" : "$%.2f", usd);
  return buf;
}

std::string Count(std::int64_t n) {
  char buf[32];
  if (n < 1000) return std::to_string(n);
  if (n < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  }
  return buf;
}

void PrintTaskTable(std::ostream& out, const std::vector<Task>& tasks,
                    const std::map<std::string, std::string>& unclaimable) {
  if (tasks.empty()) {
    out << "no tasks\n";
    return;
  }
  Table table({"ID", "STATUS", "PRI", "QUEUE", "ATTEMPT", "TITLE"});
  for (const auto& t : tasks) {
    std::string status(ToString(t.status));
    if (unclaimable.contains(t.id)) status += " (!)";
    table.Add({t.id, status, std::to_string(t.priority), t.queue,
               std::to_string(t.attempt) + "/" + std::to_string(t.max_attempts), t.title});
  }
  table.Print(out);
  if (unclaimable.empty()) return;
  out << "(!) no worker can claim it now:\n";
  for (const auto& t : tasks) {
    if (auto it = unclaimable.find(t.id); it != unclaimable.end()) {
      out << "  " << t.id << ": " << it->second << '\n';
    }
  }
}

void PrintTaskDetail(std::ostream& out, const Task& t, const std::vector<Claim>& attempts,
                     const std::vector<AttemptUsage>& usage, Millis now,
                     const std::string& unclaimable) {
  auto line = [&](const char* k, const std::string& v) {
    if (!v.empty()) {
      out << k << std::string(14 - std::string(k).size(), ' ') << Printable(v, true) << '\n';
    }
  };
  line("id", t.id);
  line("title", t.title);
  line("status", std::string(ToString(t.status)));
  if (!unclaimable.empty()) line("waits", "no worker can claim it now: " + unclaimable);
  line("priority", std::to_string(t.priority));
  line("queue", t.queue);
  line("attempt", std::to_string(t.attempt) + " of " + std::to_string(t.max_attempts));
  line("requires", Join(t.requires_caps));
  line("after", Join(t.after));
  line("owner", t.owner);
  line("workdir", t.workdir);
  line("command", Join(t.command, " "));
  line("agent", t.agent);
  line("timeout", FormatDuration(t.timeout_ms));
  if (double budget = BudgetUsd(t); budget > 0) line("budget", Dollars(budget));
  if (t.review) line("review", "yes");
  line("repo", t.repo);
  line("base", t.base_branch);
  line("created", Time(t.created_at));
  if (t.status == TaskStatus::kReady && t.run_after > now) line("runs after", Time(t.run_after));
  if (t.started_at > 0) line("started", Time(t.started_at));
  if (t.finished_at > 0) line("finished", Time(t.finished_at));
  line("description", t.description);
  line("instructions", t.instructions);
  line("deliverables", t.deliverables);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    line(i == 0 ? "steps" : "", std::to_string(i + 1) + ". " + t.steps[i]);
  }
  // The questions are shown on their own below.
  std::vector<Question> questions = Questions(t);
  nlohmann::json metadata = t.metadata;
  if (!questions.empty() && metadata.is_object()) metadata.erase("questions");
  if (!metadata.empty()) line("metadata", metadata.dump());
  line("result", t.result);
  line("error", t.error);
  if (std::optional<Question> open = OpenQuestion(t); open && t.status == TaskStatus::kWaiting) {
    line("question", open->question);
    line("", "answer with: tx task answer " + t.id + " \"<answer>\"");
  }
  UsageTotal total;
  for (const auto& u : usage) total.Add(u);
  if (total.attempts > 0) {
    line("usage", Dollars(total.cost_usd) + (total.estimated ? " (estimated)" : "") + " · " +
                      Count(total.tokens.input) + " in, " + Count(total.tokens.output) + " out, " +
                      Count(total.tokens.cache_read) + " cache read, " +
                      Count(total.tokens.cache_write) + " cache write · " +
                      std::to_string(total.turns) + " turns");
  }
  if (!questions.empty()) {
    out << "\nquestions\n";
    for (const auto& q : questions) {
      out << "  attempt " << q.attempt << ", " << Time(q.asked_at) << ": "
          << Printable(q.question, true) << '\n';
      if (q.answer) {
        out << "    answered " << Time(q.answered_at) << ": " << Printable(*q.answer, true) << '\n';
      } else {
        out << "    not answered\n";
      }
    }
  }
  if (attempts.empty()) return;
  out << "\nattempts\n";
  Table table({"N", "TOKEN", "WORKER", "STARTED", "DURATION", "STATUS", "END REASON", "EXIT",
               "COST", "SESSION"});
  std::vector<std::string> denials;
  for (const auto& c : attempts) {
    Millis end = c.ended_at > 0 ? c.ended_at : now;
    const AttemptUsage* u = nullptr;
    for (const auto& row : usage) {
      if (row.token == c.token) u = &row;
    }
    table.Add({std::to_string(c.attempt), std::to_string(c.token), c.worker_id, Time(c.claimed_at),
               FormatDuration(end - c.claimed_at), std::string(ToString(c.status)),
               c.end_reason == EndReason::kNone ? "-" : std::string(ToString(c.end_reason)),
               c.exit_code ? std::to_string(*c.exit_code) : "-",
               u != nullptr ? Dollars(u->cost_usd) + (u->cost_estimated ? "~" : "") : "-",
               u != nullptr && !u->session_id.empty() ? u->session_id : "-"});
    if (u == nullptr) continue;
    for (const auto& d : u->denials) {
      if (!d.is_object()) continue;
      std::string input = d.value("input", "");
      denials.push_back("attempt " + std::to_string(c.attempt) + ": " + d.value("tool", "?") +
                        (input.empty() ? "" : "(" + input + ")"));
    }
  }
  table.Print(out);
  if (!denials.empty()) {
    out << "\npermission denials\n";
    for (const auto& d : denials) out << "  " << d << '\n';
  }
}

void PrintWorkerTable(std::ostream& out, const std::vector<Worker>& workers, const Moment& now) {
  if (workers.empty()) {
    out << "no workers\n";
    return;
  }
  Table table({"ID", "NAME", "SLOT", "STATUS", "TASK", "HEARTBEAT", "HOST", "PID"});
  for (const auto& w : workers) {
    std::string status(ToString(w.status));
    if (IsLive(w.status) && IsStale(w, now)) status += " (stale)";
    table.Add({w.id, w.name, w.slot.empty() ? "-" : w.slot, status,
               w.current_task_id.empty() ? "-" : w.current_task_id, HeartbeatAge(w, now),
               w.hostname, std::to_string(w.pid)});
  }
  table.Print(out);
}

void PrintWorkerDetail(std::ostream& out, const Worker& w, const Moment& now) {
  auto line = [&](const char* k, const std::string& v) {
    if (!v.empty()) out << k << std::string(16 - std::string(k).size(), ' ') << v << '\n';
  };
  line("id", w.id);
  line("name", w.name);
  line("slot", w.slot);
  std::string status(ToString(w.status));
  if (IsLive(w.status) && IsStale(w, now)) status += " (stale)";
  line("status", status);
  line("reason", w.reason);
  line("task", w.current_task_id);
  line("host", w.hostname);
  line("pid", std::to_string(w.pid));
  line("capabilities", Join(w.capabilities));
  line("queues", Join(w.queues));
  std::string promise = "every " + FormatDuration(w.heartbeat_interval_ms);
  if (BusyIntervalMs(w) != w.heartbeat_interval_ms) {
    promise += " (" + FormatDuration(BusyIntervalMs(w)) + " busy)";
  }
  line("heartbeat", promise + ", last " + HeartbeatAge(w, now));
  line("registered", FormatTime(w.registered_at));
  if (!w.metadata.empty()) line("metadata", w.metadata.dump());
}

void PrintEventLine(std::ostream& out, const Event& e) {
  out << e.id << "  " << FormatTime(e.at) << "  " << e.type;
  if (!e.task_id.empty()) out << "  " << e.task_id;
  if (!e.worker_id.empty()) out << "  " << e.worker_id;
  if (!e.data.empty()) out << "  " << e.data.dump();
  out << '\n';
}

void PrintReport(std::ostream& out, const ReconcileReport& r) {
  out << "reconciled at " << FormatTime(r.at) << "\n"
      << "  dead workers           " << r.dead_workers << "\n"
      << "  expired leases         " << r.expired_leases << "\n"
      << "  orphaned tasks         " << r.orphaned_tasks << "\n"
      << "  inconsistencies fixed  " << r.inconsistencies_fixed << "\n"
      << "  overdue reviews        " << r.overdue_reviews << "\n"
      << "  expired questions      " << r.expired_questions << "\n";
}

}  // namespace tx::cli

namespace tx::cli {

void PrintAgentStatus(std::ostream& out, const nlohmann::json& agents, Millis now) {
  if (!agents.is_object()) return;
  for (const auto& l : agents.value("limits", nlohmann::json::array())) {
    Result<Millis> until = ParseTime(l.value("until", ""));
    if (!until.ok()) continue;
    std::string account = l.value("account", "");
    out << "agents: " << l.value("agent", "?") << (account.empty() ? "" : " (" + account + ")")
        << " limited until " << FormatTime(*until).substr(11, 5) << " UTC (in "
        << FormatDuration(std::max<Millis>(0, *until - now) / 1000 * 1000) << ")";
    std::string reason = l.value("reason", "");
    if (!reason.empty()) out << ": " << Printable(reason.substr(0, 160));
    out << '\n';
  }
  const nlohmann::json& b = agents["budget"];
  if (!b.is_object()) return;
  double daily = b.value("daily_usd", 0.0);
  if (daily > 0) {
    out << "budget: " << Dollars(b.value("spent_usd", 0.0)) << " of " << Dollars(daily)
        << " today (UTC)";
    if (b.value("reached", false)) {
      out << " — reached: no agent starts until " << b.value("next_day_at", std::string("?"));
    }
    out << '\n';
  }
  const nlohmann::json& queues = b["queue_daily_usd"];
  if (!queues.is_object()) return;
  for (const auto& [queue, usd] : queues.items()) {
    double spent = b["queue_spent_usd"].value(queue, 0.0);
    bool reached = false;
    for (const auto& q : b.value("reached_queues", nlohmann::json::array())) {
      reached = reached || q == queue;
    }
    out << "budget of queue " << queue << ": " << Dollars(spent) << " of " << Dollars(usd)
        << " today" << (reached ? " — reached" : "") << '\n';
  }
}

}  // namespace tx::cli
