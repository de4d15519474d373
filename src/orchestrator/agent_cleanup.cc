#include "orchestrator/agent_cleanup.h"

#include "exec/process_info.h"

namespace tx::orchestrator {

bool KillAgentOf(const Worker& w, const std::string& hostname) {
  if (w.hostname != hostname || w.id.empty()) return false;
  return exec::KillGroupsCarrying("TX_WORKER_ID=" + w.id) > 0;
}

int KillAgentsOfStaleWorkers(const std::vector<Worker>& live, const std::string& hostname,
                             const std::function<bool(const Worker&)>& doomed) {
  int killed = 0;
  for (const auto& w : live) {
    if (w.hostname == hostname && doomed(w) && KillAgentOf(w, hostname)) {
      ++killed;
    }
  }
  return killed;
}

}  // namespace tx::orchestrator
