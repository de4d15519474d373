#include "exec/signals.h"

#include <pthread.h>

#include <initializer_list>

namespace tx::exec {

namespace {

sigset_t AsyncSignals() {
  sigset_t set;
  sigfillset(&set);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) {
    sigdelset(&set, fault);
  }
  return set;
}

}  // namespace

void BlockAsyncSignals() {
  sigset_t set = AsyncSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

AsyncSignalsBlocked::AsyncSignalsBlocked() {
  sigset_t set = AsyncSignals();
  pthread_sigmask(SIG_BLOCK, &set, &old_);
}

AsyncSignalsBlocked::~AsyncSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace tx::exec
