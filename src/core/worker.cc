#include "core/worker.h"

namespace tx {

namespace {
struct Name {
  WorkerStatus status;
  std::string_view name;
};
constexpr Name kNames[] = {
    {WorkerStatus::kStarting, "starting"}, {WorkerStatus::kIdle, "idle"},
    {WorkerStatus::kBusy, "busy"},         {WorkerStatus::kPaused, "paused"},
    {WorkerStatus::kStopping, "stopping"}, {WorkerStatus::kStopped, "stopped"},
    {WorkerStatus::kDead, "dead"},
};
}  // namespace

std::string_view ToString(WorkerStatus s) {
  for (const auto& n : kNames) {
    if (n.status == s) return n.name;
  }
  return "unknown";
}

Result<WorkerStatus> ParseWorkerStatus(std::string_view name) {
  for (const auto& n : kNames) {
    if (n.name == name) return n.status;
  }
  return Error::InvalidArgument("unknown worker status '" + std::string(name) +
                                "': expected starting, idle, busy, paused, stopping, stopped "
                                "or dead");
}

namespace {
struct RequestName {
  WorkerRequest request;
  std::string_view name;
};
constexpr RequestName kRequestNames[] = {
    {WorkerRequest::kNone, ""},
    {WorkerRequest::kPause, "pause"},
    {WorkerRequest::kResume, "resume"},
    {WorkerRequest::kStop, "stop"},
    {WorkerRequest::kStopNow, "stop-now"},
};
}  // namespace

std::string_view ToString(WorkerRequest r) {
  for (const auto& n : kRequestNames) {
    if (n.request == r) return n.name;
  }
  return "";
}

Result<WorkerRequest> ParseWorkerRequest(std::string_view name) {
  for (const auto& n : kRequestNames) {
    if (n.name == name) return n.request;
  }
  return Error::Internal("unknown worker request '" + std::string(name) + "'");
}

bool IsLive(WorkerStatus s) { return s != WorkerStatus::kStopped && s != WorkerStatus::kDead; }

const std::vector<WorkerStatus>& LiveWorkerStatuses() {
  static const std::vector<WorkerStatus> live = {WorkerStatus::kStarting, WorkerStatus::kIdle,
                                                 WorkerStatus::kBusy, WorkerStatus::kPaused,
                                                 WorkerStatus::kStopping};
  return live;
}

Millis SilentFor(const Worker& w, const Moment& now) {
  if (w.beat_steady && now.steady) return *now.steady - *w.beat_steady;
  return now.wall - w.last_heartbeat_at;
}

Millis PromisedIntervalMs(const Worker& w) {
  return w.status == WorkerStatus::kBusy ? BusyIntervalMs(w) : w.heartbeat_interval_ms;
}

bool IsStale(const Worker& w, const Moment& now) {
  if (w.last_heartbeat_at <= 0) return true;
  return SilentFor(w, now) >= StaleAfterMs(w);
}

}  // namespace tx
