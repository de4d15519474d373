#pragma once
// SpawnSpec: everything about a child process to start, as a plain value. The worker builds it
// from the task and the agent profile; tests compare it; Child::Spawn applies it.

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tx::exec {

// Per-process rlimits (setrlimit in the child before exec) and, where the machine allows, a
// cgroup. Unset means "inherit".
struct ResourceLimits {
  std::optional<std::uint64_t> address_space_bytes;  // RLIMIT_AS
  std::optional<std::uint64_t> cpu_seconds;          // RLIMIT_CPU
  std::optional<std::uint64_t> open_files;           // RLIMIT_NOFILE
  std::optional<std::uint64_t> processes;            // RLIMIT_NPROC
  std::optional<std::uint64_t> memory_bytes;         // cgroup memory.max (else RLIMIT_AS)
  std::optional<int> cpu_percent;                    // cgroup cpu.max, 100 = one core

  bool empty() const {
    return !address_space_bytes && !cpu_seconds && !open_files && !processes && !memory_bytes &&
           !cpu_percent;
  }
  bool operator==(const ResourceLimits&) const = default;
};

struct SpawnSpec {
  // argv[0] is looked up in PATH (of `env`, else the worker's) unless it contains a '/'.
  // Never run through a shell.
  std::vector<std::string> argv;
  // The child's whole environment, "NAME=value" each.
  std::vector<std::string> env;
  // Working directory of the child; empty = the worker's.
  std::string cwd;
  // stdout and stderr both go to this file (created 0600, appended to; through the pipe, created
  // with its directory at the first byte, so a silent child leaves none); empty = discarded
  // (still read, so the child never blocks on a full pipe and last_output_at stays meaningful).
  std::string log_path;
  // Once the log grows past this, its head is dropped and the newest half kept, after a one-line
  // marker "[tx: N earlier bytes dropped]". 0 = no cap.
  std::uint64_t log_cap_bytes = 8ull << 20;
  // The child writes to the log file itself instead of through a pipe the parent reads: for a
  // child that must keep logging after its parent has died (the orchestrator's workers, which
  // drain on their own then). No size cap and no last_output_at; output_fd() is -1. The parent
  // keeps no descriptor of the file, so the child may rotate it (log/process_log.h).
  bool output_straight_to_log = false;
  ResourceLimits limits;
  // Sent to the child when its parent dies. Agents get SIGKILL; the orchestrator's workers get
  // SIGTERM, so that an orphaned worker drains, stops its agent and deregisters by itself.
  int parent_death_signal = SIGKILL;
  // The child starts with SIGHUP ignored (a disposition exec keeps) instead of its default, which
  // ends the process: for the orchestrator's workers, which read SIGHUP from a signalfd once they
  // run, so that one passed on to them while they start stops nothing.
  bool ignore_sighup = false;

  bool operator==(const SpawnSpec&) const = default;
};

}  // namespace tx::exec
