// tx events [--follow]: the event log, printed or followed

#include <chrono>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/print.h"
#include "core/json.h"
#include "core/validation.h"
#include "service/event_log.h"

namespace tx::cli {

Handler SetupEvents(CLI::App& cmd) {
  struct Args {
    bool follow = false;
    std::string since, limit;
  };
  auto a = std::make_shared<Args>();
  cmd.add_flag("--follow,-f", a->follow, "Keep printing new events as they happen");
  NonEmpty(
      cmd.add_option("--since", a->since, "Only events after this event number")->type_name("N"));
  NonEmpty(
      cmd.add_option("--limit", a->limit, "At most this many (without --follow)")->type_name("N"));
  return [a](Context& ctx) -> Status {
    std::int64_t since = 0;
    int limit = 0;
    if (!a->since.empty()) {
      TX_ASSIGN_OR_RETURN(since, ParseInteger("--since", a->since));
    }
    if (!a->limit.empty()) {
      TX_ASSIGN_OR_RETURN(limit, ParseCount("--limit", a->limit));
    }
    if (since < 0) return Error::InvalidArgument("invalid --since '" + a->since + "': negative");
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::EventLog log(*store);
    auto print = [&](const std::vector<Event>& events) {
      for (const auto& e : events) {
        if (ctx.json() && a->follow) {
          ctx.out() << ToJson(e).dump() << '\n';
        } else if (!ctx.json()) {
          PrintEventLine(ctx.out(), e);
        }
      }
      ctx.out().flush();
    };
    if (!a->follow) {
      TX_ASSIGN_OR_RETURN(std::vector<Event> events, log.Since(since, limit));
      if (ctx.json()) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& e : events) arr.push_back(ToJson(e));
        ctx.PrintJson(arr);
      } else {
        print(events);
      }
      return Ok();
    }
    // Follow: print what is there, then poll the store's change counter (cheap) for more.
    std::int64_t seen = -1;
    for (;;) {
      TX_ASSIGN_OR_RETURN(std::int64_t counter, store->ChangeCounter());
      if (counter != seen) {
        seen = counter;
        for (;;) {
          TX_ASSIGN_OR_RETURN(std::vector<Event> events, log.Since(since, 1000));
          if (events.empty()) break;
          print(events);
          since = events.back().id;
        }
      }
      if (!ctx.out()) return Ok();  // the reader went away
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
}

}  // namespace tx::cli
