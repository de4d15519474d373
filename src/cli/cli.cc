#include "cli/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include "cli/agent_relay.h"
#include "cli/commands.h"
#include "cli/http_api.h"
#include "core/argv.h"
#include "core/suggest.h"
#include "core/validation.h"
#include "exec/process_info.h"

namespace tx::cli {

namespace {

constexpr CommandSpec kCommands[] = {
    {"init", "init", "Create the store (.tx/tx.db) and an API token (.tx/token)", SetupInit},
    {"migrate", "migrate", "Copy this SQLite store into an empty PostgreSQL database (--to URL)",
     SetupMigrate},
    {"doctor", "doctor",
     "Check what this machine needs to run tx and say what to do about each finding (exit 1 "
     "if a check fails)",
     SetupDoctor},
    {"backup", "backup",
     "Copy the SQLite store to PATH while it runs: one consistent snapshot (--force replaces "
     "PATH)",
     SetupBackup},
    {"restore", "restore",
     "Replace the SQLite store with a backup (refused while an orchestrator or a worker runs on "
     "it)",
     SetupRestore},
    {"task add", "task.add", "Add a task to the queue", SetupTaskAdd},
    {"task list", "task.list", "List tasks, optionally by status, queue or owner", SetupTaskList},
    {"task show", "task.show", "Show one task with its attempts", SetupTaskShow},
    {"task log", "task.log", "Print an attempt's output (--follow while it runs)", SetupTaskLog},
    {"task update", "task.update", "Change a task's title, priority, after[] or metadata",
     SetupTaskUpdate},
    {"task done", "task.done", "Report success (with the claim's token, or --force)",
     SetupTaskDone},
    {"task fail", "task.fail", "Report failure; retried with backoff until max attempts",
     SetupTaskFail},
    {"task review", "task.review", "Report success that needs review", SetupTaskReview},
    {"task note", "task.note",
     "Note progress on a running task (its notes and the attempt's log; with the claim's token)",
     SetupTaskNote},
    {"task ask", "task.ask",
     "Ask a person a question (an agent, with its token): the task waits for the answer",
     SetupTaskAsk},
    {"task answer", "task.answer",
     "Answer a waiting task's question: it goes back to the queue, its agent resumed with it",
     SetupTaskAnswer},
    {"task cancel", "task.cancel", "Cancel a task that has not finished", SetupTaskCancel},
    {"task retry", "task.retry", "Send a failed or cancelled task back to the queue",
     SetupTaskRetry},
    {"task approve", "task.approve", "Approve a task in review (done, having no branch to merge)",
     SetupTaskApprove},
    {"task changes", "task.changes",
     "Send a task in review back to the queue with the changes to make", SetupTaskChanges},
    {"task diff", "task.diff", "Show a task's branch against its base: commits, files, the diff",
     SetupTaskDiff},
    {"task merge", "task.merge",
     "Merge an approved task's branch: rebase, run the check, fast-forward the base",
     SetupTaskMerge},
    {"claim", "claim", "Claim a task (or --next) with a lease; prints the fencing token",
     SetupClaim},
    {"claim-release", "claim.release",
     "tx claim:release TASK: give a claimed task back to the queue (the attempt is not counted)",
     SetupClaimRelease},
    {"claim-renew", "claim.renew", "tx claim:renew TASK: extend a claim's lease", SetupClaimRenew},
    {"events", "events", "Print the event log; --follow to keep printing", SetupEvents},
    {"usage", "usage",
     "What the agents cost: tokens and dollars by task, queue, agent or day (--by, --since)",
     SetupUsage},
    {"agent lift", "agent.lift",
     "Lift an agent profile's usage limit before its reset (--account: one account's)",
     SetupAgentLift},
    {"notify test", "notify.test", "Send a test notification to every [[notify]] sink",
     SetupNotifyTest},
    {"notify list", "notify.list", "List notification deliveries and their state", SetupNotifyList},
    {"sandbox gc", "sandbox.gc",
     "Remove the containers of workers no longer alive, and the images tx ran that went unused "
     "(--unused-for)",
     SetupSandboxGc},
    {"man", "man", "Print this manual page (roff, made from this table): tx man | man -l -",
     SetupMan, CommandSpec::kEveryCommand},
    {"completion", "completion",
     "Print a shell completion script for bash, zsh or fish (made from this table)",
     SetupCompletion, CommandSpec::kEveryCommand},
    {.path = "serve",
     .name = "serve",
     .help = "Serve the HTTP API (loopback by default) until SIGTERM",
     .setup = SetupServe,
     .needs_http = true},
    {"mcp", "mcp",
     "Serve an agent's task tools over the Model Context Protocol on stdin and stdout", SetupMcp},
    {"worker start", "worker.start",
     "Run a worker: claim tasks one at a time and run their agents until SIGTERM",
     SetupWorkerStart},
    {"worker stop", "worker.stop",
     "Stop a worker (or --all): now, releasing its task, or --graceful after it", SetupWorkerStop},
    {"worker pause", "worker.pause",
     "Freeze a worker's agent and claim nothing new; the lease is kept", SetupWorkerPause},
    {"worker resume", "worker.resume", "Thaw a paused worker", SetupWorkerResume},
    {"worker list", "worker.list", "List registered workers", SetupWorkerList},
    {"worker status", "worker.status", "Show one worker, or a summary of live workers",
     SetupWorkerStatus},
    {"top", "top",
     "A live view of the pool, the queue and the newest events, redrawn in place (--once: one "
     "frame)",
     SetupTop},
    {"orchestrator start", "orchestrator.start",
     "Run a supervised pool of workers and the reconciler until stopped", SetupOrchestratorStart},
    {"orchestrator stop", "orchestrator.stop",
     "Stop the running orchestrator: drain its workers (or --force)", SetupOrchestratorStop},
    {"orchestrator status", "orchestrator.status",
     "The orchestrator, its pool, the queue and the last reconcile", SetupOrchestratorStatus},
    {"orchestrator scale", "orchestrator.scale", "Grow or shrink the running pool to N workers",
     SetupOrchestratorScale},
    {"orchestrator reconcile", "orchestrator.reconcile",
     "Run one reconcile pass: dead workers, expired leases, orphans, inconsistencies",
     SetupOrchestratorReconcile},
};

constexpr std::string_view kGroupHelp[][2] = {
    {"task", "Add, list, inspect and finish tasks"},
    {"worker", "Run workers and inspect them"},
    {"notify", "Notifications: test the sinks, list the deliveries"},
    {"sandbox", "Container sandboxes: remove what they left"},
    {"agent", "Agent profiles: lift a usage limit before its reset"},
    {"orchestrator", "Run and steer the supervised worker pool; reconcile the store"},
};

int Fail(const Error& e, bool json) {
  if (json) {
    nlohmann::json j = {
        {"error", {{"code", std::string(CodeName(e.code()))}, {"message", e.message()}}}};
    std::cout << j.dump() << '\n';
  }
  std::cerr << "tx: " << e.message() << '\n';
  return ExitCode(e.code());
}

// The grammar spells these with a colon, which CLI11 does not allow in a subcommand name.
void RewriteColonCommands(std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind("-", 0) == 0) continue;
    if (args[i] == "claim:release" || args[i] == "claim:renew") args[i][5] = '-';
    return;  // only the first word is a command name
  }
}

int RunParsed(std::vector<std::string> args);

std::string SuggestOrHelp(std::optional<std::string> suggestion, const std::string& help) {
  if (suggestion) return " (did you mean '" + *suggestion + "'?)";
  return " (see " + help + ")";
}

// The first two words of the command line that are not flags (nor --db's value).
std::vector<std::string> CommandWords(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (std::size_t i = 1; i < args.size() && words.size() < 2; ++i) {
    const std::string& a = args[i];
    if (a == "--db") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    words.push_back(a);
  }
  return words;
}

// The command of the table the command line names, if its words name one.
const CommandSpec* NamedCommand(const std::vector<std::string>& args) {
  std::vector<std::string> words = CommandWords(args);
  for (const auto& c : kCommands) {
    if (!words.empty() && c.path == words[0]) return &c;
    if (words.size() == 2 && c.path == words[0] + " " + words[1]) return &c;
  }
  return nullptr;
}

// Names an unknown command word before CLI11 reports only "a subcommand is required", with the
// command of the table it is likely a typo of.
std::optional<std::string> UnknownCommand(const std::vector<std::string>& args) {
  std::vector<std::string> words = CommandWords(args);
  if (words.empty()) return std::nullopt;
  std::vector<std::string> firsts;  // every first word, in the table's order
  std::vector<std::string> paths;   // every command under words[0]
  bool group = false;
  for (const auto& c : kCommands) {
    std::string path(c.path);
    std::string first = path.substr(0, path.find(' '));
    if (std::find(firsts.begin(), firsts.end(), first) == firsts.end()) firsts.push_back(first);
    if (first != words[0]) continue;
    paths.push_back(path);
    group = group || path.find(' ') != std::string::npos;
  }
  if (paths.empty()) {
    return "unknown command '" + words[0] + "'" +
           SuggestOrHelp(Suggest(words[0], firsts), "tx --help");
  }
  if (!group || words.size() < 2) return std::nullopt;
  std::vector<std::string> verbs;
  for (const std::string& path : paths) verbs.push_back(path.substr(path.find(' ') + 1));
  if (std::find(verbs.begin(), verbs.end(), words[1]) != verbs.end()) return std::nullopt;
  std::optional<std::string> verb = Suggest(words[1], verbs);
  return "unknown command '" + words[0] + " " + words[1] + "'" +
         SuggestOrHelp(verb ? std::optional(words[0] + " " + *verb) : std::nullopt,
                       "tx " + words[0] + " --help");
}

// What CLI11 did not expect, said as an unknown flag of the command it was given to with the
// flag it is likely a typo of; anything else (an extra positional) as CLI11 says it.
std::string ExtrasMessage(CLI::App& app, const CLI::ExtrasError& e) {
  CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  std::string command = "tx";
  std::vector<std::string> flags;  // the command's own, then its groups', then the global ones
  for (CLI::App* a = cmd; a != nullptr; a = a->get_parent()) {
    if (a != &app) command.insert(2, " " + a->get_name());
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
    }
  }
  for (const std::string& extra : app.remaining(true)) {
    if (extra.rfind("--", 0) != 0 || extra.size() == 2) continue;
    std::string flag = extra.substr(0, extra.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    return "unknown flag '" + flag + "' for '" + command + "'" +
           SuggestOrHelp(Suggest(flag, flags), command + " --help");
  }
  return std::string(e.what()) + " (see tx --help)";
}

}  // namespace

std::span<const CommandSpec> Commands() { return kCommands; }

std::string SelfExe() { return exec::SelfExecutable(); }

CLI::Option* NonEmpty(CLI::Option* option) {
  // CLI11 skips validators for an empty value unless a value is required.
  return option->expected(1)->check(CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
      "", "non-empty"));
}

CLI::Option* OnePerFlag(CLI::Option* option) { return option->allow_extra_args(false); }

int Run(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  RewriteColonCommands(args);
  if (std::optional<int> relayed = RelayToWorker({args.begin() + 1, args.end()})) return *relayed;
  try {
    return RunParsed(std::move(args));
  } catch (const std::exception& e) {
    std::cerr << "tx: internal error: " << e.what() << '\n';
    return 1;
  }
}

namespace {

// Parses the command line and runs the command it names. `only`: declare that command alone
// (building every command's options was over a quarter of tx task add); then nothing is printed
// and nullopt is returned if the line does not parse so, and the caller parses it again with
// every command declared, which says what is wrong as it always did. A full parse gives a word
// to another command only where `only` has no place for it (CLI11 fills a command's own
// positionals first), which fails here: a line that parses so means what it always meant.
std::optional<int> ParseAndRun(const std::vector<std::string>& args, const CommandSpec* only) {
  CLI::App app{
      "tx — a durable task queue and supervisor for fleets of AI coding agents and "
      "other long-running workers.\n\nStore: --db PATH, else $TX_DB, else .tx/tx.db. "
      "Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict, 5 backpressure.",
      "tx"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("-V,--version", "tx " TX_VERSION);
  GlobalFlags flags;
  app.add_option("--db", flags.db, "Store path (default .tx/tx.db, or $TX_DB)");
  app.add_flag("--json", flags.json, "Print JSON for machines instead of tables");

  std::map<std::string, CLI::App*> groups;
  std::vector<std::pair<CLI::App*, std::pair<const CommandSpec*, Handler>>> leaves;
  for (const auto& spec : kCommands) {
    if (only != nullptr && only != &spec) continue;
    std::string path(spec.path);
    CLI::App* parent = &app;
    std::string leaf = path;
    if (auto space = path.find(' '); space != std::string::npos) {
      std::string group = path.substr(0, space);
      leaf = path.substr(space + 1);
      if (!groups.count(group)) {
        std::string help;
        for (const auto& g : kGroupHelp) {
          if (g[0] == group) help = g[1];
        }
        CLI::App* g = app.add_subcommand(group, help);
        g->require_subcommand(1);
        g->fallthrough();
        groups[group] = g;
      }
      parent = groups[group];
    }
    CLI::App* cmd = parent->add_subcommand(leaf, std::string(spec.help));
    cmd->fallthrough();
    leaves.push_back({cmd, {&spec, spec.setup(*cmd)}});
  }

  try {
    std::vector<std::string> reversed(args.rbegin(), std::prev(args.rend()));
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (only != nullptr) return std::nullopt;
    if (const auto* help = dynamic_cast<const CLI::CallForHelp*>(&e)) return app.exit(*help);
    if (const auto* version = dynamic_cast<const CLI::CallForVersion*>(&e)) {
      return app.exit(*version);
    }
    if (const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e)) {
      std::cerr << "tx: " << ExtrasMessage(app, *extras) << '\n';
      return 2;
    }
    std::cerr << "tx: " << e.what() << " (see tx --help)\n";
    return 2;
  }

  for (auto& [cmd, entry] : leaves) {
    if (!cmd->parsed()) continue;
    const CommandSpec& spec = *entry.first;
    // tx mcp is itself always allowed: each of its tools runs the command it stands for, which
    // the allow-list judges.
    const char* allow = spec.name == "mcp" ? nullptr : std::getenv("TX_ALLOWED_COMMANDS");
    if (allow != nullptr) {
      if (!IsAllowed(spec.name, allow)) {
        return Fail(Error::InvalidArgument("'tx " + std::string(spec.path) +
                                           "' is not allowed here: TX_ALLOWED_COMMANDS=" + allow),
                    flags.json);
      }
    }
    if (spec.needs_http) {
      if (Status http = CheckHttpApi(); !http.ok()) return Fail(http.error(), flags.json);
    }
    Context ctx(flags, std::cout);
    Status s = entry.second(ctx);
    std::cout.flush();
    if (!s.ok()) return Fail(s.error(), flags.json);
    return ctx.exit_code();
  }
  if (only != nullptr) return std::nullopt;
  return Fail(Error::InvalidArgument("no command given (see tx --help)"), flags.json);
}

int RunParsed(std::vector<std::string> args) {
  if (auto unknown = UnknownCommand(args)) {
    std::cerr << "tx: " << *unknown << '\n';
    return 2;
  }
  const CommandSpec* named = NamedCommand(args);
  if (named != nullptr && !named->reads_every_command) {
    if (std::optional<int> code = ParseAndRun(args, named)) return *code;
  }
  return *ParseAndRun(args, nullptr);
}

}  // namespace
}  // namespace tx::cli
