#pragma once
// NotifyLoop: the thread that runs the notifications' rounds (notify::Dispatcher) for an
// orchestrator while it leads the store's reconciler, so that one process at a time sends
// (docs/notifications.md). It has a connection of its own; an orchestrator without sinks runs
// none.

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/notify.h"

namespace tx::orchestrator {

class NotifyLoop {
 public:
  // Opens its connection and makes the sinks (an error for a webhook in a binary without HTTP),
  // then runs until destroyed, sending only while `leads()` says so.
  static Result<std::unique_ptr<NotifyLoop>> Start(const std::string& db_path,
                                                   std::vector<SinkSpec> sinks,
                                                   std::function<bool()> leads);
  ~NotifyLoop();  // stops: a send in flight finishes first (at most notify::kSendTimeoutMs)

  NotifyLoop(const NotifyLoop&) = delete;
  NotifyLoop& operator=(const NotifyLoop&) = delete;

  struct State;  // what the thread works with; made by Start
  explicit NotifyLoop(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace tx::orchestrator
