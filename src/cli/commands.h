#pragma once
// The command table: every command's path, one-line help and setup. The table drives --help,
// dispatch and the TX_ALLOWED_COMMANDS allow-list (by the dotted name, e.g. "task.done").

#include <CLI/CLI.hpp>
#include <functional>
#include <span>
#include <string_view>

#include "cli/context.h"

namespace tx::cli {

using Handler = std::function<Status(Context&)>;
// Declares a command's options and positionals on `cmd`; returns the handler that runs it.
using Setup = Handler (*)(CLI::App& cmd);

struct CommandSpec {
  static constexpr bool kEveryCommand = true;
  std::string_view path;  // "task add"; the first word may group several commands
  std::string_view name;  // "task.add": for TX_ALLOWED_COMMANDS
  std::string_view help;
  Setup setup;
  // It reads every command's options from the parsed tree (tx man, tx completion). Any other
  // command's run declares its own options only (declaring all is slow: cli.cc, ParseAndRun).
  bool reads_every_command = false;
  // It always serves HTTP: the HTTP module is opened before it runs (exec/http_module.h), and a
  // missing one refuses it in one line. A command that needs HTTP only with some flag, variable
  // or config (--http, --server, $TX_SERVER, a webhook) opens the module where it needs it.
  bool needs_http = false;
};

std::span<const CommandSpec> Commands();

// Option helpers: a value that may not be empty (an empty --priority is an error, not "unset"),
// and repeatable options that take exactly one value per occurrence (--step a --step b).
CLI::Option* NonEmpty(CLI::Option* option);
CLI::Option* OnePerFlag(CLI::Option* option);
// This tx executable (/proc/self/exe; empty when unreadable): the orchestrator starts workers
// with it, and agents find tx beside it.
std::string SelfExe();

// Setups, one per command, defined beside their kin.
Handler SetupInit(CLI::App& cmd);
Handler SetupMigrate(CLI::App& cmd);
Handler SetupTaskAdd(CLI::App& cmd);
Handler SetupTaskList(CLI::App& cmd);
Handler SetupTaskShow(CLI::App& cmd);
Handler SetupSandboxGc(CLI::App& cmd);
Handler SetupTaskUpdate(CLI::App& cmd);
Handler SetupTaskDone(CLI::App& cmd);
Handler SetupTaskFail(CLI::App& cmd);
Handler SetupTaskReview(CLI::App& cmd);
Handler SetupTaskNote(CLI::App& cmd);
Handler SetupTaskAsk(CLI::App& cmd);
Handler SetupTaskAnswer(CLI::App& cmd);
Handler SetupTaskCancel(CLI::App& cmd);
Handler SetupTaskRetry(CLI::App& cmd);
Handler SetupTaskApprove(CLI::App& cmd);
Handler SetupTaskChanges(CLI::App& cmd);
Handler SetupTaskDiff(CLI::App& cmd);
Handler SetupTaskMerge(CLI::App& cmd);
// The full view of a task, as `tx task show` prints it.
Status ShowTask(Context& ctx, store::Store& store, const std::string& id);
Handler SetupClaim(CLI::App& cmd);
Handler SetupClaimRelease(CLI::App& cmd);
Handler SetupClaimRenew(CLI::App& cmd);
Handler SetupEvents(CLI::App& cmd);
Handler SetupNotifyTest(CLI::App& cmd);
Handler SetupNotifyList(CLI::App& cmd);
Handler SetupWorkerList(CLI::App& cmd);
Handler SetupWorkerStatus(CLI::App& cmd);
Handler SetupOrchestratorReconcile(CLI::App& cmd);
Handler SetupOrchestratorStart(CLI::App& cmd);
Handler SetupOrchestratorStop(CLI::App& cmd);
Handler SetupOrchestratorStatus(CLI::App& cmd);
Handler SetupOrchestratorScale(CLI::App& cmd);
Handler SetupWorkerStart(CLI::App& cmd);
Handler SetupWorkerStop(CLI::App& cmd);
Handler SetupWorkerPause(CLI::App& cmd);
Handler SetupWorkerResume(CLI::App& cmd);
Handler SetupTaskLog(CLI::App& cmd);
Handler SetupServe(CLI::App& cmd);
Handler SetupUsage(CLI::App& cmd);
Handler SetupAgentLift(CLI::App& cmd);
Handler SetupMcp(CLI::App& cmd);
Handler SetupDoctor(CLI::App& cmd);
Handler SetupCompletion(CLI::App& cmd);
Handler SetupMan(CLI::App& cmd);
Handler SetupBackup(CLI::App& cmd);
Handler SetupRestore(CLI::App& cmd);
Handler SetupTop(CLI::App& cmd);

}  // namespace tx::cli
