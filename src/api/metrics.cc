#include "api/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace tx::api {

namespace {

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string Escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void LabelledCounter(std::string& out, std::string_view name, std::string_view label,
                     const std::map<std::string, std::int64_t>& values, std::string_view help) {
  Header(out, name, "counter", help);
  for (const auto& [value, n] : values) {
    out += fmt::format("{}{{{}=\"{}\"}} {}\n", name, label, Escape(value), n);
  }
}

std::int64_t CountOf(const std::map<std::string, std::int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// An event's data as an object; {} when its text is not one.
nlohmann::json Data(const StoredEvent& e) {
  nlohmann::json j = nlohmann::json::parse(e.data, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

std::string StringField(const nlohmann::json& data, const char* key, const char* fallback) {
  auto it = data.find(key);
  return it != data.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

void Metrics::Observe(const std::string& outcome, const StoredEvent& e) {
  auto it = claimed_at_.find(e.task_id);
  if (it == claimed_at_.end()) return;  // not running (a cancel of a ready task, say)
  double seconds = static_cast<double>(std::max<Millis>(0, e.at - it->second)) / 1000.0;
  claimed_at_.erase(it);
  Histogram& h = durations_[outcome];
  auto bucket = std::lower_bound(kDurationBuckets.begin(), kDurationBuckets.end(), seconds);
  if (bucket != kDurationBuckets.end()) ++h.buckets[bucket - kDurationBuckets.begin()];
  ++h.count;
  h.sum += seconds;
}

void Metrics::Add(const StoredEvent& e) {
  ++events_[e.type];
  const std::string& t = e.type;
  if (t == "task.claimed") {
    claimed_at_[e.task_id] = e.at;
  } else if (t == "task.done" || t == "task.review" || t == "task.cancelled") {
    std::string outcome = t.substr(5);
    ++finished_[outcome];
    Observe(outcome, e);
  } else if (t == "task.failed") {
    ++finished_["failed"];
    Observe("failed", e);
  } else if (t == "task.asked") {
    Observe("asked", e);  // an attempt that ended with a question for a person
  } else if (t == "task.retry_scheduled") {
    Observe("failed", e);  // an attempt that failed, with attempts left
  } else if (t == "task.requeued") {
    std::string reason = StringField(Data(e), "reason", "unknown");
    ++requeued_[reason];
    Observe(reason, e);
  } else if (t == "worker.crashed") {
    ++crashed_[StringField(Data(e), "class", "unknown")];
  } else if (t == "reconcile.repaired") {
    const nlohmann::json data = Data(e);
    for (const char* kind :
         {"dead_workers", "expired_leases", "orphaned_tasks", "inconsistencies_fixed"}) {
      auto it = data.find(kind);
      if (it != data.end() && it->is_number_integer()) repaired_[kind] += it->get<int>();
    }
  }
}

std::string Metrics::Render(const MetricsSnapshot& now) const {
  std::string out;
  out.reserve(8192);

  // Gauges: what the store holds now. Every status is written for every queue seen, so a series
  // drops to 0 instead of vanishing when its last task moves on.
  Header(out, "tx_tasks", "gauge", "Tasks by status and queue.");
  std::set<std::string> queues;
  std::map<std::pair<std::string, std::string>, std::int64_t> counts;
  for (const auto& c : now.tasks) {
    queues.insert(c.queue);
    counts[{c.queue, std::string(ToString(c.status))}] += c.count;
  }
  for (const auto& q : queues) {
    for (TaskStatus s : {TaskStatus::kBlocked, TaskStatus::kReady, TaskStatus::kRunning,
                         TaskStatus::kWaiting, TaskStatus::kReview, TaskStatus::kApproved,
                         TaskStatus::kDone, TaskStatus::kFailed, TaskStatus::kCancelled}) {
      std::string name(ToString(s));
      auto it = counts.find({q, name});
      out += fmt::format("tx_tasks{{queue=\"{}\",status=\"{}\"}} {}\n", Escape(q), name,
                         it == counts.end() ? 0 : it->second);
    }
  }
  Header(out, "tx_workers", "gauge", "Workers by status (dead and stopped ones included).");
  for (WorkerStatus s :
       {WorkerStatus::kStarting, WorkerStatus::kIdle, WorkerStatus::kBusy, WorkerStatus::kPaused,
        WorkerStatus::kStopping, WorkerStatus::kStopped, WorkerStatus::kDead}) {
    auto it = now.workers.find(s);
    out += fmt::format("tx_workers{{status=\"{}\"}} {}\n", ToString(s),
                       it == now.workers.end() ? 0 : it->second);
  }
  Header(out, "tx_orchestrator_up", "gauge",
         "Orchestrators running on this store (one at most on SQLite).");
  out += fmt::format("tx_orchestrator_up {}\n", now.orchestrators_up);

  // The agents' usage: read from the ledger. Nearly always it grows, but an attempt's running
  // estimate may be replaced by the smaller cost its agent reports at the end, so a scrape may
  // see the total step down a little; rate() takes that for a counter reset.
  Header(out, "tx_agent_cost_usd_total", "counter",
         "What the agents cost, in USD, by agent profile (reported, else estimated).");
  for (const auto& [agent, t] : now.usage_by_agent) {
    out +=
        fmt::format("tx_agent_cost_usd_total{{agent=\"{}\"}} {:.6f}\n", Escape(agent), t.cost_usd);
  }
  Header(out, "tx_agent_tokens_total", "counter",
         "Tokens the agents used, by agent profile and kind.");
  for (const auto& [agent, t] : now.usage_by_agent) {
    for (auto [kind, n] : {std::pair{"input", t.tokens.input}, std::pair{"output", t.tokens.output},
                           std::pair{"cache_read", t.tokens.cache_read},
                           std::pair{"cache_write", t.tokens.cache_write}}) {
      out += fmt::format("tx_agent_tokens_total{{agent=\"{}\",kind=\"{}\"}} {}\n", Escape(agent),
                         kind, n);
    }
  }

  // Reconcile runs are counted in the store's reconciler record (one event per run would flood
  // the log); repairs are counted from their events.
  Header(out, "tx_reconcile_runs_total", "counter", "Reconcile passes run on this store.");
  out += fmt::format("tx_reconcile_runs_total {}\n",
                     now.reconciler.last_report.value("runs", std::int64_t{0}));
  Header(out, "tx_reconcile_last_run_timestamp_seconds", "gauge",
         "When the last reconcile pass ran (0 = never).");
  out += fmt::format("tx_reconcile_last_run_timestamp_seconds {:.3f}\n",
                     static_cast<double>(now.reconciler.last_reconcile_at) / 1000.0);
  LabelledCounter(out, "tx_reconcile_repairs_total", "kind", repaired_,
                  "What reconcile passes repaired, by kind.");

  // Counters folded from the event log.
  Header(out, "tx_tasks_created_total", "counter", "Tasks added.");
  out += fmt::format("tx_tasks_created_total {}\n", CountOf(events_, "task.created"));
  Header(out, "tx_claims_total", "counter", "Claims taken (attempts started).");
  out += fmt::format("tx_claims_total {}\n", CountOf(events_, "task.claimed"));
  Header(out, "tx_lease_renewals_total", "counter", "Leases renewed.");
  out += fmt::format("tx_lease_renewals_total {}\n", CountOf(events_, "lease.renewed"));
  Header(out, "tx_lease_expiries_total", "counter", "Leases that expired and were released.");
  out += fmt::format("tx_lease_expiries_total {}\n", CountOf(events_, "lease.expired"));
  LabelledCounter(out, "tx_tasks_finished_total", "outcome", finished_,
                  "Tasks that reached done, failed, review or cancelled.");
  LabelledCounter(out, "tx_recoveries_total", "reason", requeued_,
                  "Running tasks put back in the queue, by reason (worker_died, lease_expired, "
                  "shutdown, ...).");
  Header(out, "tx_worker_deaths_total", "counter", "Workers declared dead.");
  out += fmt::format("tx_worker_deaths_total {}\n", CountOf(events_, "worker.dead"));
  LabelledCounter(out, "tx_worker_crashes_total", "class", crashed_,
                  "Supervised workers whose process exited, by exit class.");

  Header(out, "tx_task_duration_seconds", "histogram",
         "Attempt run time from claim to outcome, by outcome.");
  for (const auto& [outcome, h] : durations_) {
    std::int64_t cumulative = 0;
    std::string label = Escape(outcome);
    for (std::size_t i = 0; i < kDurationBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      out += fmt::format("tx_task_duration_seconds_bucket{{outcome=\"{}\",le=\"{}\"}} {}\n", label,
                         kDurationBuckets[i], cumulative);
    }
    out += fmt::format("tx_task_duration_seconds_bucket{{outcome=\"{}\",le=\"+Inf\"}} {}\n", label,
                       h.count);
    out += fmt::format("tx_task_duration_seconds_sum{{outcome=\"{}\"}} {:.3f}\n", label, h.sum);
    out += fmt::format("tx_task_duration_seconds_count{{outcome=\"{}\"}} {}\n", label, h.count);
  }

  LabelledCounter(out, "tx_events_total", "type", events_, "Events recorded, by type.");
  Header(out, "tx_events_last_id", "gauge", "The number of the newest event.");
  out += fmt::format("tx_events_last_id {}\n", now.last_event_id);
  return out;
}

}  // namespace tx::api
