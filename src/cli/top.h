#pragma once
// tx top's frame (docs/operations.md, "tx top"): the pool, the live workers, the queue and the
// newest events, drawn from what tx orchestrator status, tx worker list and tx events read, as
// the lines of one screen. Pure: reading the store and driving the terminal are top_command.cc's.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/event.h"
#include "core/worker.h"

namespace tx::cli {

struct TopData {
  std::string store;            // the store, as Store::Describe says
  Moment now;                   // when it was read
  nlohmann::json pool;          // service::PoolStatus's document
  std::vector<Worker> workers;  // the live workers of every pool, newest registration first
  std::vector<Event> events;    // the newest events, oldest first
  std::string error;  // why the last read failed ("" when it did not): shown, then retried
};

struct TopView {
  std::size_t width = 0;   // columns a line may take; 0: no limit
  std::size_t height = 0;  // lines the frame may take; 0: no limit
  bool colour = false;     // SGR colours (a terminal, NO_COLOR unset or empty)
  Millis interval = 0;     // the refresh interval the title names; 0: one frame (--once)
};

// The frame: a title, the orchestrator and its pool, the queue, the last reconcile; the pool's
// slots; the live workers no slot of the pool shows (hand-run, remote, another pool's); the
// newest events, newest first. Every line fits `view.width` (cut with "…"); with a height, the
// tables come first, cut ("… N more") where they would leave the newest five events no room,
// and the events fill what is left. Text from
// the store is made printable (table.h): the only escapes are the colours, and only with
// `view.colour`.
std::vector<std::string> RenderTop(const TopData& data, const TopView& view);

// One frame for machines: {"at", "store", "pool", "workers", "events", "error"}.
nlohmann::json TopJson(const TopData& data);

// The SGR parameters of a state's colour ("32" green: running, busy, done; "36" cyan: ready,
// idle, starting; "33" yellow: waiting states, paused, stopping, backoff; "31" red: failed,
// dead; "2" dim: cancelled, stopped); "" for a word without one.
std::string_view StateColour(std::string_view state);

// `line` cut to `width` visible characters (code points; escape sequences take none), with "…"
// as its last when cut, and a reset after it when it held a colour. 0: as it is.
std::string FitWidth(const std::string& line, std::size_t width);

}  // namespace tx::cli
