#pragma once
// Facts about processes on this machine, read from the OS: the worker's own resource use for its
// heartbeats, this host's name, and whether a pid still belongs to a given agent (so a leftover
// agent can be killed without hitting an unrelated process that reused its pid).

#include <sys/types.h>

#include <string>
#include <string_view>

namespace tx::exec {

std::string Hostname();  // "unknown" if the OS will not say

double SelfCpuSeconds();  // user + system time of this process so far
double SelfResidentMb();  // resident set size of this process, 0 if unreadable

// True when process `pid` exists and its environment holds exactly `entry` ("NAME=value").
bool ProcessHasEnvironmentEntry(pid_t pid, std::string_view entry);

// SIGKILL to process group `pgid` and to the process itself (ESRCH is not an error).
void KillGroup(pid_t pgid);

// Kills (SIGKILL) what is left of an agent's process group `pgid` — the leader and any
// grandchildren — but only if a process of that group still carries `entry` (e.g.
// "TX_WORKER_ID=worker-…") in its environment, so a group id reused by an unrelated process is
// never hit. Returns true if it killed. Scans /proc: call it when a worker died, not in a loop.
bool KillAgentGroup(pid_t pgid, std::string_view entry);

// True when `pid` runs and is not a zombie.
bool ProcessAlive(pid_t pid);

// The command line of `pid`, its arguments joined by spaces; empty if it is gone.
std::string ProcessCommandLine(pid_t pid);

}  // namespace tx::exec
