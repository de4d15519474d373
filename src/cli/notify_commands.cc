// tx notify test|list: notifications (docs/notifications.md).

#include <memory>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/duration.h"
#include "core/ids.h"
#include "core/json.h"
#include "notify/config.h"
#include "notify/sinks.h"
#include "service/notify_outbox.h"

namespace tx::cli {

Handler SetupNotifyTest(CLI::App& cmd) {
  (void)cmd;
  return [](Context& ctx) -> Status {
    std::string path = ctx.ConfigPath();
    TX_ASSIGN_OR_RETURN(std::vector<SinkSpec> sinks, notify::ReadNotifyFile(path));
    if (sinks.empty()) {
      return Error::InvalidArgument("no [[notify]] sinks in " + path + " (docs/notifications.md)");
    }
    if (notify::HasWebhooks(sinks)) TX_RETURN_IF_ERROR(notify::CheckWebhooks());
    Event e;
    e.type = "notify.test";
    e.at = ctx.now();
    Delivery d;
    d.event_type = e.type;
    d.body = NotificationBody(e, nullptr).dump();
    nlohmann::json results = nlohmann::json::array();
    Table table({"SINK", "RESULT"});
    int failed = 0;
    std::string failures;
    for (const SinkSpec& spec : sinks) {
      d.id = "dlv-test-" + NewToken().substr(0, 8);
      d.sink = spec.Key();
      Result<std::unique_ptr<notify::Sink>> sink = notify::MakeSink(spec);
      Status sent = sink.ok() ? (*sink)->Send(d) : Status(sink.error());
      if (!sent.ok()) {
        ++failed;
        failures += (failures.empty() ? "" : "; ") + d.sink + ": " + sent.error().message();
      }
      std::string said = sent.ok() ? "delivered" : sent.error().message();
      results.push_back(
          {{"sink", d.sink}, {"delivery", d.id}, {"ok", sent.ok()}, {"result", said}});
      table.Add({d.sink, said});
    }
    // With --json a failure is the error document alone, naming what failed.
    if (!ctx.json()) table.Print(ctx.out(), 100);
    if (failed > 0) {
      return Error::Unavailable(std::to_string(failed) + " of " + std::to_string(sinks.size()) +
                                " sinks did not take the test notification (" + failures + ")");
    }
    if (ctx.json()) ctx.PrintJson(results);
    return Ok();
  };
}

Handler SetupNotifyList(CLI::App& cmd) {
  struct Args {
    std::string status, limit = "50";
  };
  auto a = std::make_shared<Args>();
  NonEmpty(cmd.add_option("--status", a->status, "Only deliveries in this state")
               ->type_name("pending|delivered|failed"));
  NonEmpty(cmd.add_option("--limit", a->limit, "At most N, newest first (default 50; 0 = all)")
               ->type_name("N"));
  return [a](Context& ctx) -> Status {
    std::optional<DeliveryStatus> status;
    if (!a->status.empty()) {
      TX_ASSIGN_OR_RETURN(status, ParseDeliveryStatus(a->status));
    }
    int limit = 0;
    if (a->limit != "0") {
      TX_ASSIGN_OR_RETURN(limit, ParseCount("--limit", a->limit));
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::NotifyOutbox outbox(*store, ctx.clock());
    TX_ASSIGN_OR_RETURN(std::vector<Delivery> list, outbox.List(status, limit));
    if (ctx.json()) {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& d : list) arr.push_back(ToJson(d));
      ctx.PrintJson(arr);
      return Ok();
    }
    if (list.empty()) {
      ctx.out() << "no deliveries" << (status ? " " + std::string(ToString(*status)) : "") << '\n';
      return Ok();
    }
    Table table({"DELIVERY", "STATUS", "EVENT", "TASK", "SINK", "TRIES", "WHEN", "LAST ERROR"});
    for (const auto& d : list) {
      std::string when = d.status == DeliveryStatus::kPending
                             ? "next " + FormatTime(d.next_at)
                             : FormatTime(d.last_at > 0 ? d.last_at : d.created_at);
      table.Add({d.id, std::string(ToString(d.status)), d.event_type,
                 d.task_id.empty() ? "-" : d.task_id, d.sink, std::to_string(d.attempts), when,
                 d.last_error.empty() ? "-" : d.last_error});
    }
    table.Print(ctx.out());
    return Ok();
  };
}

}  // namespace tx::cli
