#include "orchestrator/process_liveness.h"

#include <sys/types.h>

#include "exec/process_info.h"

namespace tx::orchestrator {

bool OrchestratorAlive(const OrchestratorState& o, Millis now) {
  if (o.status == "stopped") return false;
  if (o.hostname == exec::Hostname()) {
    return exec::ProcessAlive(static_cast<pid_t>(o.pid)) &&
           exec::ProcessCommandLine(static_cast<pid_t>(o.pid)).find(" orchestrator start") !=
               std::string::npos;
  }
  return RecentlySeen(o, now);
}

bool WorkerAlive(const Worker& w, const Moment& now) {
  if (w.hostname == exec::Hostname()) {
    return w.pid > 0 && exec::ProcessAlive(static_cast<pid_t>(w.pid)) &&
           exec::ProcessCommandLine(static_cast<pid_t>(w.pid)).find(" worker start") !=
               std::string::npos;
  }
  return !IsStale(w, now);
}

}  // namespace tx::orchestrator
