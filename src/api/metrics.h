#pragma once
// GET /metrics in the Prometheus text format (version 0.0.4). Pure: the counters are folded from
// the event log, one event at a time in id order, and the gauges are read by the caller from the
// store at scrape time; no I/O here, so tests feed it events and check the text.
//
// Counters count since the store began (the server folds the whole log in at start), so they
// survive restarts of the server and agree between two servers on one store.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/event.h"
#include "core/orchestrator.h"
#include "core/usage.h"
#include "core/worker.h"
#include "store/store.h"

namespace tx::api {

// What the store holds now: read at each scrape.
struct MetricsSnapshot {
  std::vector<store::StatusCount> tasks;  // per status and queue
  std::map<WorkerStatus, std::int64_t> workers;
  ReconcilerRecord reconciler;
  int orchestrators_up = 0;  // running on this store (PostgreSQL: maybe several)
  // The usage ledger summed by agent profile (store::Txn::UsageByAgent).
  std::vector<std::pair<std::string, UsageTotal>> usage_by_agent;
  std::int64_t last_event_id = 0;
};

class Metrics {
 public:
  // Upper bounds of the task-duration histogram, in seconds (+Inf is implied).
  static constexpr std::array<double, 12> kDurationBuckets = {0.1, 0.5, 1,    5,    15,   60,
                                                              300, 900, 1800, 3600, 7200, 14400};

  // Folds one event in; events must come in id order (the hub guarantees it). Only the data of
  // the few types counted by a field of it is parsed.
  void Add(const StoredEvent& e);

  // The exposition text: counters from the events folded so far, gauges from `now`.
  std::string Render(const MetricsSnapshot& now) const;

 private:
  struct Histogram {
    std::array<std::int64_t, kDurationBuckets.size()> buckets{};  // non-cumulative counts
    std::int64_t count = 0;
    double sum = 0;
  };
  void Observe(const std::string& outcome, const StoredEvent& e);

  std::map<std::string, std::int64_t> events_;          // by type
  std::map<std::string, std::int64_t> finished_;        // by outcome: done, failed, review, ...
  std::map<std::string, std::int64_t> requeued_;        // by reason
  std::map<std::string, std::int64_t> crashed_;         // by exit class
  std::map<std::string, std::int64_t> repaired_;        // by kind of reconcile repair
  std::map<std::string, Histogram> durations_;          // by outcome
  std::unordered_map<std::string, Millis> claimed_at_;  // running attempts, by task id
};

}  // namespace tx::api
