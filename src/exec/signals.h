#pragma once
// The signals a thread of tx blocks when the process reads them elsewhere (a signalfd, a thread
// waiting for them): every signal the process is sent (SIGTERM, SIGINT, SIGHUP, SIGCHLD, …), but
// not the faults its own code raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT).
// A fault raised while blocked kills the process without running its handlers, so a sanitizer or
// crash handler would report nothing.

#include <signal.h>

namespace tx::exec {

// Blocks them in the calling thread for good.
void BlockAsyncSignals();

// Blocks them in the calling thread while it lives (a thread started meanwhile inherits that
// mask), then restores the mask it found.
class AsyncSignalsBlocked {
 public:
  AsyncSignalsBlocked();
  ~AsyncSignalsBlocked();
  AsyncSignalsBlocked(const AsyncSignalsBlocked&) = delete;
  AsyncSignalsBlocked& operator=(const AsyncSignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

}  // namespace tx::exec
