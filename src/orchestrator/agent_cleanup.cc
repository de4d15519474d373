#include "orchestrator/agent_cleanup.h"

#include <sys/types.h>

#include "exec/process_info.h"

namespace tx::orchestrator {

bool KillAgentOf(const Worker& w, const std::string& hostname) {
  auto it = w.metadata.find("agent_pid");
  if (it == w.metadata.end() || !it->is_number_integer()) return false;
  pid_t agent = it->get<pid_t>();
  if (agent <= 0 || w.hostname != hostname) return false;
  return exec::KillAgentGroup(agent, "TX_WORKER_ID=" + w.id);
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
