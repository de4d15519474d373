#include "notify/dispatcher.h"

#include <algorithm>

namespace tx::notify {

Dispatcher::Dispatcher(store::Store& store, const Clock& clock, std::vector<SinkSpec> specs,
                       std::map<std::string, std::unique_ptr<Sink>> sinks)
    : clock_(clock), specs_(std::move(specs)), sinks_(std::move(sinks)), outbox_(store, clock) {}

Result<std::unique_ptr<Dispatcher>> Dispatcher::Make(store::Store& store, const Clock& clock,
                                                     std::vector<SinkSpec> specs) {
  std::map<std::string, std::unique_ptr<Sink>> sinks;
  for (const SinkSpec& spec : specs) {
    TX_ASSIGN_OR_RETURN(std::unique_ptr<Sink> sink, MakeSink(spec));
    sinks[spec.Key()] = std::move(sink);
  }
  return std::make_unique<Dispatcher>(store, clock, std::move(specs), std::move(sinks));
}

Result<DispatchReport> Dispatcher::Step(int batch, const std::function<bool()>& stopping) {
  DispatchReport report;
  TX_ASSIGN_OR_RETURN(report.fan_out, outbox_.FanOut(specs_));
  TX_ASSIGN_OR_RETURN(std::vector<Delivery> due, outbox_.Due(batch));
  for (const Delivery& d : due) {
    if (stopping && stopping()) break;
    auto sink = sinks_.find(d.sink);
    auto spec = std::find_if(specs_.begin(), specs_.end(),
                             [&](const SinkSpec& s) { return s.Key() == d.sink; });
    Status outcome = sink == sinks_.end()
                         ? Status(Error::NotFound("no sink " + d.sink + " is configured any more"))
                         : sink->second->Send(d);
    TX_ASSIGN_OR_RETURN(Delivery after,
                        outbox_.RecordTry(d.id, outcome, sink == sinks_.end(),
                                          spec == specs_.end() ? 0 : spec->give_up_ms));
    switch (after.status) {
      case DeliveryStatus::kDelivered:
        ++report.delivered;
        break;
      case DeliveryStatus::kPending:
        ++report.retrying;
        break;
      case DeliveryStatus::kFailed:
        ++report.failed;
        break;
    }
  }
  return report;
}

Result<Millis> Dispatcher::NextRoundAt(Millis poll_ms) {
  Millis at = clock_.Now() + poll_ms;
  TX_ASSIGN_OR_RETURN(std::optional<Millis> due, outbox_.NextDueAt());
  return due ? std::min(at, *due) : at;
}

}  // namespace tx::notify
