#include "orchestrator/notify_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "exec/signals.h"
#include "notify/dispatcher.h"
#include "store/store.h"

namespace tx::orchestrator {
namespace {

// How soon a new event is sent: the loop looks for them this often.
constexpr Millis kPollMs = 250;
// After a round that failed (the store unreachable), the next waits this long.
constexpr Millis kRetryMs = 1'000;

}  // namespace

struct NotifyLoop::State {
  std::unique_ptr<store::Store> store;
  std::unique_ptr<notify::Dispatcher> dispatcher;
  std::function<bool()> leads;
  Mutex mu;
  CondVar cv;
  bool stop TX_GUARDED_BY(mu) = false;

  // Waits until `at` (store clock) or a stop; false on a stop.
  bool WaitUntil(Millis at) {
    Millis now = store->clock().Now();
    MutexLock lock(mu);
    if (at > now) {
      cv.WaitFor(mu, std::chrono::milliseconds(at - now), [&]() TX_REQUIRES(mu) { return stop; });
    }
    return !stop;
  }

  void Run() {
    bool failing = false;
    for (;;) {
      Millis now = store->clock().Now();
      Millis next = now + kPollMs;
      if (leads()) {
        // A stop (the orchestrator's, or a SIGHUP replacing the sinks) waits for one send at
        // most, not for the round.
        Result<notify::DispatchReport> r = dispatcher->Step(64, [this] {
          MutexLock lock(mu);
          return stop;
        });
        if (!r.ok()) {
          if (!failing) spdlog::warn("notifications: {}", r.error().message());
          failing = true;
          next = now + kRetryMs;
        } else {
          if (failing) spdlog::info("notifications: the store answers again");
          failing = false;
          if (r->failed > 0)
            spdlog::warn("notifications: {} deliveries failed for good", r->failed);
          // A full batch may have more behind it: go on at once.
          Result<Millis> at =
              r->Sent() >= 64 ? Result<Millis>(now) : dispatcher->NextRoundAt(kPollMs);
          if (at.ok()) next = *at;
        }
      }
      if (!WaitUntil(next)) return;
    }
  }
};

NotifyLoop::NotifyLoop(std::unique_ptr<State> state) : state_(std::move(state)) {
  // The thread blocks the process's signals from its first instruction: the orchestrator reads
  // them from a signalfd, and one delivered to this thread would kill the process.
  exec::AsyncSignalsBlocked blocked;
  thread_ = std::thread([s = state_.get()] { s->Run(); });
}

NotifyLoop::~NotifyLoop() {
  {
    MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.NotifyAll();
  thread_.join();
}

Result<std::unique_ptr<NotifyLoop>> NotifyLoop::Start(const std::string& db_path,
                                                      std::vector<SinkSpec> sinks,
                                                      std::function<bool()> leads) {
  auto state = std::make_unique<State>();
  TX_ASSIGN_OR_RETURN(state->store, store::Open({db_path, false}));
  TX_ASSIGN_OR_RETURN(
      state->dispatcher,
      notify::Dispatcher::Make(*state->store, state->store->clock(), std::move(sinks)));
  state->leads = std::move(leads);
  return std::make_unique<NotifyLoop>(std::move(state));
}

}  // namespace tx::orchestrator
