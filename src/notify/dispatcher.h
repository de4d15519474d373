#pragma once
// Dispatcher: one round of notifications (docs/notifications.md) over the outbox
// (service/notify_outbox.h): fan the new events out to the sinks that want them, then try each
// due delivery once and record how it went. The loop around it (orchestrator/notify_loop.h) only
// sleeps between rounds.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "notify/sinks.h"
#include "service/notify_outbox.h"

namespace tx::notify {

struct DispatchReport {
  service::FanOutReport fan_out;
  int delivered = 0;
  int retrying = 0;  // failed tries that will be tried again
  int failed = 0;    // deliveries given up: their window spent, or their sink gone
  int Sent() const { return delivered + retrying + failed; }
};

class Dispatcher {
 public:
  // `sinks` by SinkSpec::Key of each spec.
  Dispatcher(store::Store& store, const Clock& clock, std::vector<SinkSpec> specs,
             std::map<std::string, std::unique_ptr<Sink>> sinks);
  // MakeSink for each spec; the first error (a webhook without an HTTP client) if any.
  static Result<std::unique_ptr<Dispatcher>> Make(store::Store& store, const Clock& clock,
                                                  std::vector<SinkSpec> specs);

  // Fans out, then tries at most `batch` due deliveries. A delivery whose sink is no longer
  // configured fails at once. Sends happen outside any transaction; each outcome is its own.
  // `stopping`, asked before each send, ends the round early (the rest stay due).
  Result<DispatchReport> Step(int batch = 64, const std::function<bool()>& stopping = {});
  // When the next round is due: the next pending delivery, or `poll_ms` from now for new events.
  Result<Millis> NextRoundAt(Millis poll_ms);

 private:
  const Clock& clock_;
  std::vector<SinkSpec> specs_;
  std::map<std::string, std::unique_ptr<Sink>> sinks_;
  service::NotifyOutbox outbox_;
};

}  // namespace tx::notify
