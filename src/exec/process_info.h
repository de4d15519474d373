#pragma once
// Facts about processes on this machine, read from the OS: the worker's own resource use for its
// heartbeats, this host's name, and whether a pid still belongs to a given agent (so a leftover
// agent can be killed without hitting an unrelated process that reused its pid).

#include <sys/types.h>

#include <string>
#include <string_view>

namespace tx::exec {

std::string Hostname();  // "unknown" if the OS will not say

std::string SelfExecutable();  // this process's executable (/proc/self/exe); "" if unreadable
double SelfCpuSeconds();       // user + system time of this process so far
double SelfResidentMb();       // resident set size of this process, 0 if unreadable

// True when process `pid` exists and its environment holds exactly `entry` ("NAME=value").
bool ProcessHasEnvironmentEntry(pid_t pid, std::string_view entry);

// SIGKILL to process group `pgid` and to the process itself (ESRCH is not an error).
void KillGroup(pid_t pgid);

// Kills (SIGKILL) the process group of every process on this machine whose environment holds
// `entry` (e.g. "TX_WORKER_ID=worker-…", which a worker gives its agents and their children
// inherit): what is left of a dead worker's agents, whatever their pids, and never a process
// that merely reused one. Spared: the caller's own group, and groups that lead a session of
// their own (an agent's group is made by setpgid in its worker's session; a setsid makes a
// container engine's monitor or a daemon). Returns how many groups it killed.
// Scans /proc: call it when a worker died, not in a loop.
int KillGroupsCarrying(std::string_view entry);

// True when `pid` runs and is not a zombie.
bool ProcessAlive(pid_t pid);

// The command line of `pid`, its arguments joined by spaces; empty if it is gone.
std::string ProcessCommandLine(pid_t pid);

}  // namespace tx::exec
