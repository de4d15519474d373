// Black-box tests of the tx command line (design.md §5): the real binary, run in a fresh
// directory per test, judged only by its exit code, stdout, stderr and what `tx --json` reads back.
//
// Every refusal is checked the same way: the documented exit code, nothing on stdout, exactly one
// line on stderr that starts with "tx: " and names the bad value, and — through a snapshot of
// `task list`, every `task show` and `events` — nothing written to the store.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tx::testing::Env;
using tx::testing::RunResult;
using tx::testing::RunTx;
using tx::testing::TempDir;
using Args = std::vector<std::string>;

std::string Join(const Args& args) {
  std::string out = "tx";
  for (const auto& a : args) out += " " + a;
  return out;
}

// 'value', as tx quotes a bad value in its messages.
std::string Quoted(std::string_view value) {
  std::string out = "'";
  out.append(value);
  out += '\'';
  return out;
}

std::string Describe(const Args& args, const RunResult& r) {
  return Join(args) + "\n  exit " + std::to_string(r.exit_code) + "\n  stdout: " + r.out +
         "\n  stderr: " + r.err;
}

// A refusal: `code`, nothing on stdout, one "tx: ..." line on stderr containing `needle`.
::testing::AssertionResult IsRefusal(const RunResult& r, int code, const std::string& needle) {
  auto fail = [&]() {
    return ::testing::AssertionFailure() << "\n  exit " << r.exit_code << "\n  stdout: " << r.out
                                         << "\n  stderr: " << r.err << "\n  ";
  };
  if (r.exit_code != code) return fail() << "expected exit code " << code;
  if (!r.out.empty()) return fail() << "expected nothing on stdout";
  if (r.err.rfind("tx: ", 0) != 0) return fail() << "expected stderr to start with 'tx: '";
  if (r.err.back() != '\n' || r.err.find('\n') != r.err.size() - 1) {
    return fail() << "expected exactly one line on stderr";
  }
  if (r.err.find(needle) == std::string::npos)
    return fail() << "expected stderr to name '" << needle << "'";
  return ::testing::AssertionSuccess();
}

const std::regex kIsoTime(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)");
const std::regex kTaskId(R"(^task-[a-z0-9]{8}$)");
const std::regex kWorkerId(R"(^worker-[a-z0-9]{8}$)");

bool IsTime(const json& j) {
  return j.is_string() && std::regex_match(j.get<std::string>(), kIsoTime);
}

// A fresh directory with no store in it.
class CliBeforeInit : public ::testing::Test {
 protected:
  // ---- running tx -------------------------------------------------------------------------

  RunResult Tx(const Args& args, const Env& env = {}) { return RunTx(args, env, dir_.str()); }

  // Runs a command that must succeed; throws (failing the test) with the details otherwise.
  RunResult Must(const Args& args, const Env& env = {}) {
    RunResult r = Tx(args, env);
    if (r.exit_code != 0) throw std::runtime_error("expected success: " + Describe(args, r));
    return r;
  }

  // Runs `args --json`, which must succeed and print exactly one JSON document.
  json MustJson(Args args, const Env& env = {}) {
    args.push_back("--json");
    RunResult r = Must(args, env);
    return ParseOne(args, r);
  }

  static json ParseOne(const Args& args, const RunResult& r) {
    json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw std::runtime_error("not one JSON document: " + Describe(args, r));
    return j;
  }

  // ---- the store, read back through tx ------------------------------------------------------

  void Init() { Must({"init"}); }

  // Adds a task and returns its id.
  std::string Add(const std::string& title, Args flags = {}) {
    Args args = {"task", "add", title};
    args.insert(args.end(), flags.begin(), flags.end());
    return MustJson(args)["id"].get<std::string>();
  }

  // Claims a task (or --next) and returns the claim document (token, task_id, worker_id, ...).
  json ClaimJson(const std::string& id, Args flags = {}) {
    Args args = {"claim"};
    if (!id.empty()) args.push_back(id);
    args.insert(args.end(), flags.begin(), flags.end());
    return MustJson(args);
  }
  // Claims a task and returns its fencing token as text, ready for --token.
  std::string ClaimToken(const std::string& id, Args flags = {}) {
    return std::to_string(ClaimJson(id, flags)["token"].get<std::int64_t>());
  }

  json Show(const std::string& id) { return MustJson({"task", "show", id}); }
  std::string StatusOf(const std::string& id) { return Show(id)["status"].get<std::string>(); }
  json Tasks(Args filter = {}) {
    Args args = {"task", "list"};
    args.insert(args.end(), filter.begin(), filter.end());
    return MustJson(args);
  }
  std::vector<std::string> TaskIds(Args filter = {}) {
    std::vector<std::string> ids;
    for (const auto& t : Tasks(filter)) ids.push_back(t["id"].get<std::string>());
    return ids;
  }
  json Events() { return MustJson({"events"}); }

  // The types of the events about one task, in order.
  std::vector<std::string> EventTypes(const std::string& task_id) {
    std::vector<std::string> types;
    for (const auto& e : Events()) {
      if (e["task_id"] == task_id) types.push_back(e["type"].get<std::string>());
    }
    return types;
  }
  int CountEvents(const std::string& type) {
    int n = 0;
    for (const auto& e : Events()) n += e["type"] == type;
    return n;
  }

  // Everything a command could have written: the task list, every task with its attempts, and
  // the event log.
  json StoreState() {
    json state;
    state["tasks"] = Tasks();
    state["shown"] = json::array();
    for (const auto& t : state["tasks"]) {
      state["shown"].push_back(Show(t["id"].get<std::string>()));
    }
    state["events"] = Events();
    return state;
  }

  // What changed between two StoreState()s, one line per changed part.
  static std::string StateDiff(const json& before, const json& after) {
    std::string out;
    for (const auto& patch : json::diff(before, after)) out += "\n    " + patch.dump();
    return out;
  }

  // Runs a command that must be refused with `code` and a message naming `needle`, and must
  // leave the store exactly as it was.
  ::testing::AssertionResult RefusedWithoutWriting(const Args& args, int code,
                                                   const std::string& needle, const Env& env = {}) {
    json before = StoreState();
    RunResult r = Tx(args, env);
    ::testing::AssertionResult refused = IsRefusal(r, code, needle);
    if (!refused) return refused << "\n  [" << Join(args) << "]";
    json after = StoreState();
    if (before != after) {
      return ::testing::AssertionFailure()
             << Join(args) << " was refused (" << r.err.substr(0, r.err.size() - 1)
             << ") but wrote to the store:" << StateDiff(before, after);
    }
    return ::testing::AssertionSuccess();
  }

  fs::path Path(const std::string& rel) const { return dir_.path() / rel; }

  TempDir dir_;
};

// Most tests start from an initialised store.
class Cli : public CliBeforeInit {
 protected:
  void SetUp() override { Init(); }
};

// ================================ init ===========================================================

TEST_F(CliBeforeInit, InitCreatesTheStoreAndATokenReadableOnlyByItsOwner) {
  RunResult r = Tx({"init"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(Path(".tx/tx.db")));
  ASSERT_TRUE(fs::is_regular_file(Path(".tx/token")));
  struct stat st {};
  ASSERT_EQ(stat(Path(".tx/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(Path(".tx/token"));
  std::string token;
  std::getline(in, token);
  EXPECT_GE(token.size(), 16u);
}

TEST_F(CliBeforeInit, InitIsIdempotentAndKeepsTokenAndTasks) {
  Init();
  std::ifstream first(Path(".tx/token"));
  std::string token;
  std::getline(first, token);
  std::string id = Add("survives a second init");

  RunResult again = Tx({"init"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  std::ifstream second(Path(".tx/token"));
  std::string token2;
  std::getline(second, token2);
  EXPECT_EQ(token, token2);
  EXPECT_EQ(TaskIds(), std::vector<std::string>{id});
}

TEST_F(CliBeforeInit, InitJsonSaysWhetherItCreatedTheStore) {
  json first = MustJson({"init"});
  EXPECT_EQ(first["created"], true);
  EXPECT_EQ(first["db"], ".tx/tx.db");
  EXPECT_EQ(first["token_file"], ".tx/token");
  EXPECT_TRUE(first["schema_version"].is_number_integer());
  EXPECT_EQ(MustJson({"init"})["created"], false);
}

TEST_F(CliBeforeInit, CommandsBeforeInitExitOneAndPointToInitWithoutCreatingAStore) {
  for (const Args& args : std::vector<Args>{{"task", "list"},
                                            {"task", "add", "x"},
                                            {"task", "show", "task-aaaaaaaa"},
                                            {"claim", "--next"},
                                            {"events"},
                                            {"worker", "list"},
                                            {"orchestrator", "reconcile"}}) {
    EXPECT_TRUE(IsRefusal(Tx(args), 1, "tx init")) << Join(args);
  }
  EXPECT_FALSE(fs::exists(Path(".tx")));
}

TEST_F(CliBeforeInit, DbFlagAndTxDbEnvironmentChooseTheStore) {
  Must({"--db", "elsewhere.db", "init"});
  EXPECT_TRUE(fs::exists(Path("elsewhere.db")));
  EXPECT_FALSE(fs::exists(Path(".tx/tx.db")));

  std::string id = MustJson({"task", "add", "via env"}, {{"TX_DB", "elsewhere.db"}})["id"];
  json listed = MustJson({"--db", "elsewhere.db", "task", "list"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_TRUE(IsRefusal(Tx({"task", "list"}), 1, "tx init"));
}

TEST_F(Cli, TxVariablesOfTheTestEnvironmentDoNotLeakIntoTx) {
  // The harness itself: RunTx passes the parent's environment minus TX_*, plus what a test gives.
  setenv("TX_DB", "/nonexistent/tx.db", 1);
  setenv("TX_ALLOWED_COMMANDS", "nothing", 1);
  RunResult r = Tx({"task", "list"});
  unsetenv("TX_DB");
  unsetenv("TX_ALLOWED_COMMANDS");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// ================================ help and grammar ===============================================

TEST_F(CliBeforeInit, HelpExitsZeroAndListsEveryCommand) {
  RunResult r = Tx({"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"init", "task", "claim", "events", "worker", "orchestrator", "--db",
                           "--json", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << "tx --help lacks " << word << "\n" << r.out;
  }
  RunResult task = Tx({"task", "--help"});
  ASSERT_EQ(task.exit_code, 0) << task.err;
  for (const char* word : {"add", "list", "show", "update", "done", "fail", "review", "ask",
                           "answer", "cancel", "retry"}) {
    EXPECT_NE(task.out.find(word), std::string::npos) << "tx task --help lacks " << word;
  }
}

TEST_F(CliBeforeInit, TaskAddHelpExitsZeroAndListsEveryFlag) {
  RunResult r = Tx({"task", "add", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag :
       {"--description", "--instructions", "--deliverables", "--step", "--priority", "--queue",
        "--requires", "--after", "--owner", "--workdir", "--command", "--agent", "--timeout",
        "--max-attempts", "--review", "--repo", "--base", "--metadata"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << "tx task add --help lacks " << flag;
  }
}

TEST_F(CliBeforeInit, VersionFlagPrintsTheVersion) {
  RunResult r = Tx({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("tx "), std::string::npos) << r.out;
}

// tx opens its HTTP module on first use (exec/http_module.h); a tx copied somewhere without it
// says so in one line when a command needs HTTP, and runs the rest as before.
TEST_F(Cli, ACommandThatNeedsHttpSaysSoWhenTheModuleIsMissing) {
  std::string lone = dir_.str() + "/bin";
  fs::create_directories(lone);
  fs::copy_file(TX_BINARY, lone + "/tx");
  for (const Args& args : {Args{"serve"}, Args{"worker", "start", "--server", "http://x:1"},
                           Args{"orchestrator", "start", "--http=127.0.0.1:0"}}) {
    RunResult r = tx::testing::RunProcess(lone + "/tx", args, {}, dir_.str());
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("needs tx's HTTP module"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("libtx_http.so"), std::string::npos) << r.err;
    // One line, the last (a worker warns first of the agents it could not run here).
    std::size_t line = r.err.rfind('\n', r.err.size() - 2);
    std::string last = r.err.substr(line == std::string::npos ? 0 : line + 1);
    EXPECT_TRUE(last.starts_with("tx: this command needs tx's HTTP module")) << r.err;
    if (args[0] != "worker") {
      EXPECT_EQ(last, r.err);
    }
  }
  RunResult remote = tx::testing::RunProcess(lone + "/tx", {"task", "show", "task-x"},
                                             {{"TX_SERVER", "http://127.0.0.1:1"}}, dir_.str());
  EXPECT_NE(remote.err.find("needs tx's HTTP module"), std::string::npos) << remote.err;
  // What needs no HTTP runs as before, a task titled "serve" among it.
  RunResult add =
      tx::testing::RunProcess(lone + "/tx", {"task", "add", "serve", "--http"}, {}, dir_.str());
  EXPECT_EQ(add.exit_code, 2) << add.err;  // --http is no flag of task add
  RunResult titled =
      tx::testing::RunProcess(lone + "/tx", {"task", "add", "serve"}, {}, dir_.str());
  EXPECT_EQ(titled.exit_code, 0) << titled.err;
  RunResult list = tx::testing::RunProcess(lone + "/tx", {"task", "list"}, {}, dir_.str());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("serve"), std::string::npos) << list.out;
}

TEST_F(Cli, UnknownCommandExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"frobnicate"}, 2, "frobnicate"));
}

TEST_F(Cli, UnknownTaskSubcommandExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "frobnicate"}, 2, "frobnicate"));
}

TEST_F(Cli, NoCommandExitsTwo) {
  RunResult r = Tx({});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(Cli, UnknownFlagExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--bogus"}, 2, "--bogus"));
}

// ================================ typos, -V and completion (issue 24) ============================

TEST_F(Cli, AMistypedCommandOrFlagIsRefusedNamingWhatWasMeant_Issue24) {
  const std::pair<Args, std::string> cases[] = {
      {{"tsak", "list"}, "tx: unknown command 'tsak' (did you mean 'task'?)\n"},
      {{"task", "lsit"}, "tx: unknown command 'task lsit' (did you mean 'task list'?)\n"},
      {{"task", "list", "--stauts", "ready"},
       "tx: unknown flag '--stauts' for 'tx task list' (did you mean '--status'?)\n"},
      {{"task", "list", "--stauts=ready"},
       "tx: unknown flag '--stauts' for 'tx task list' (did you mean '--status'?)\n"},
      {{"task", "list", "--jsno"},
       "tx: unknown flag '--jsno' for 'tx task list' (did you mean '--json'?)\n"},
      {{"wroker", "list"}, "tx: unknown command 'wroker' (did you mean 'worker'?)\n"},
      {{"mpc"}, "tx: unknown command 'mpc' (did you mean 'mcp'?)\n"},
  };
  for (const auto& [args, message] : cases) {
    EXPECT_TRUE(RefusedWithoutWriting(args, 2, message.substr(4, message.size() - 5)));
    EXPECT_EQ(Tx(args).err, message) << Join(args);
  }
}

TEST_F(Cli, ATypoWithNoCloseNameIsRefusedWithoutASuggestion_Issue24) {
  EXPECT_EQ(Tx({"frobnicate"}).err, "tx: unknown command 'frobnicate' (see tx --help)\n");
  EXPECT_EQ(Tx({"task", "frobnicate"}).err,
            "tx: unknown command 'task frobnicate' (see tx task --help)\n");
  EXPECT_EQ(Tx({"task", "add", "x", "--bogus"}).err,
            "tx: unknown flag '--bogus' for 'tx task add' (see tx task add --help)\n");
  EXPECT_TRUE(RefusedWithoutWriting({"tk", "list"}, 2, "unknown command 'tk' (see tx --help)"));
}

TEST_F(CliBeforeInit, ShortVersionFlagPrintsWhatVersionPrints_Issue24) {
  RunResult v = Tx({"-V"});
  RunResult version = Tx({"--version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out, version.out);
  EXPECT_NE(v.out.find("tx "), std::string::npos) << v.out;
}

// The full path of `program` on PATH, or "" when it is not installed.
std::string FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir) / program;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// Writes the script `tx completion SHELL` prints into `dir` and returns its path; fails the test
// if tx fails.
std::string WriteCompletion(const std::string& shell, const fs::path& dir) {
  RunResult r = RunTx({"completion", shell}, {}, dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  fs::path file = dir / ("tx." + shell);
  std::ofstream(file) << r.out;
  return file.string();
}

// What the bash script completes `line` (words split on spaces; a trailing space starts an empty
// word) to, one candidate a line, run in `cwd` with the tx under test first on PATH.
std::string BashCompletes(const std::string& script, const std::string& line,
                          const std::string& cwd) {
  int cword = static_cast<int>(std::count(line.begin(), line.end(), ' '));
  std::string program =
      "source '" + script + "'; COMP_WORDS=(" + line + (line.back() == ' ' ? " ''" : "") +
      "); COMP_CWORD=" + std::to_string(cword) + "; _tx; printf '%s\\n' \"${COMPREPLY[@]}\"";
  std::string path = fs::path(TX_BINARY).parent_path().string() + ":" + std::getenv("PATH");
  RunResult r = tx::testing::RunProcess("/bin/bash", {"-c", program}, {{"PATH", path}}, cwd);
  EXPECT_EQ(r.exit_code, 0) << line << ": " << r.err;
  return r.out;
}

TEST_F(Cli, CompletionBashIsAScriptThatCompletesCommandsVerbsFlagsAndTaskIds_Issue24) {
  std::string script = WriteCompletion("bash", dir_.path());
  RunResult syntax = tx::testing::RunProcess("/bin/bash", {"-n", script});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  EXPECT_EQ(BashCompletes(script, "tx ta", dir_.str()), "task\n");
  EXPECT_EQ(BashCompletes(script, "tx task li", dir_.str()), "list\n");
  EXPECT_EQ(BashCompletes(script, "tx task list --sta", dir_.str()), "--status\n");
  EXPECT_EQ(BashCompletes(script, "tx --db x orch", dir_.str()), "orchestrator\n");
  EXPECT_EQ(BashCompletes(script, "tx completion ", dir_.str()), "\n");  // nothing to offer
  std::string id = Add("complete me");
  EXPECT_EQ(BashCompletes(script, "tx task show ", dir_.str()), id + "\n");
  // A flag's value: the queues of the store's tasks, the statuses, the sandboxes; a file name
  // (bash's default) for any other.
  Add("elsewhere", {"--queue", "web"});
  EXPECT_EQ(BashCompletes(script, "tx task list --queue ", dir_.str()), "default\nweb\n");
  EXPECT_EQ(BashCompletes(script, "tx task list --status r", dir_.str()),
            "ready\nrunning\nreview\n");
  EXPECT_EQ(BashCompletes(script, "tx task add t --sandbox b", dir_.str()), "bwrap\n");
  EXPECT_EQ(BashCompletes(script, "tx task add t --description ", dir_.str()), "\n");
}

TEST_F(CliBeforeInit, CompletionZshIsAValidZshScript_Issue24) {
  std::string zsh = FindOnPath("zsh");
  if (zsh.empty()) GTEST_SKIP() << "zsh is not installed: its script's syntax is not checked";
  std::string script = WriteCompletion("zsh", dir_.path());
  RunResult r = tx::testing::RunProcess(zsh, {"-n", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliBeforeInit, CompletionFishIsAValidFishScript_Issue24) {
  std::string fish = FindOnPath("fish");
  if (fish.empty()) GTEST_SKIP() << "fish is not installed: its script's syntax is not checked";
  std::string script = WriteCompletion("fish", dir_.path());
  RunResult r = tx::testing::RunProcess(fish, {"--no-execute", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, CompletionForAnUnknownShellIsRefusedNamingTheThreeItKnows_Issue24) {
  EXPECT_TRUE(RefusedWithoutWriting(
      {"completion", "tcsh"}, 2, "unknown shell 'tcsh': tx completion knows bash, zsh and fish"));
}

TEST_F(Cli, TaskAddWithoutTitleExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add"}, 2, "title"));
}

TEST_F(Cli, RefusalWithJsonPrintsAnErrorDocumentAndStillOneLineOnStderr) {
  RunResult r = Tx({"task", "show", "task-aaaaaaaa", "--json"});
  EXPECT_EQ(r.exit_code, 3);
  json j = ParseOne({"task", "show", "task-aaaaaaaa", "--json"}, r);
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("task-aaaaaaaa"), std::string::npos);
  EXPECT_EQ(r.err, "tx: " + j["error"]["message"].get<std::string>() + "\n");
}

// Issue 25: `tx worker start --print-env ID` shows the environment the task's next agent would
// get from a worker started here (config.toml, flags, this environment), sorted, and starts no
// worker and writes nothing; an unknown task is not found.
TEST_F(Cli, WorkerStartPrintEnvShowsTheNextAgentsEnvironmentAndWritesNothing_Issue25) {
  std::string id = Add("a");
  std::ofstream(Path(".tx/config.toml")) << "[worker]\npass_env = [\"MY_TOOL_*\", \"HOME\"]\n";
  Env env = {{"MY_TOOL_HOME", "/opt/tool"},
             {"HOME", "/home/op"},
             {"AWS_SECRET_ACCESS_KEY", "aws"},
             {"TX_TEST_SECRET", "hunter2"}};
  std::string tx_dir = fs::canonical(TX_BINARY).parent_path().string();
  json before = StoreState();
  RunResult r =
      Must({"worker", "start", "--print-env", id, "--allowed-commands", "task.done"}, env);
  // No way to the store: the agent's tx reaches its worker's socket with the attempt's key.
  EXPECT_EQ(r.out, "HOME=/home/op\nMY_TOOL_HOME=/opt/tool\nPATH=" + tx_dir +
                       ":/usr/local/bin:/usr/bin:/bin\nTX_AGENT_KEY=(per attempt)\n"
                       "TX_AGENT_SOCKET=/tmp/tx-agent-XXXXXX/"
                       "tx.sock\nTX_ALLOWED_COMMANDS=task.done\nTX_ATTEMPT=1\nTX_CLAIM_TOKEN=0\n"
                       "TX_MAX_SUBTASKS=10\nTX_TASK_ID=" +
                       id + "\nTX_WORKER_ID=(print-env)\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(StoreState(), before);
  EXPECT_EQ(MustJson({"worker", "list"}).size(), 0u);

  // A claimed task's next agent runs its second attempt; --json is one object, name → value.
  ClaimToken(id);
  json j = MustJson({"worker", "start", "--print-env", id}, env);
  EXPECT_EQ(j, json({{"HOME", "/home/op"},
                     {"MY_TOOL_HOME", "/opt/tool"},
                     {"PATH", tx_dir + ":/usr/local/bin:/usr/bin:/bin"},
                     {"TX_AGENT_KEY", "(per attempt)"},
                     {"TX_AGENT_SOCKET", "/tmp/tx-agent-XXXXXX/tx.sock"},
                     {"TX_ATTEMPT", "2"},
                     {"TX_CLAIM_TOKEN", "0"},
                     {"TX_MAX_SUBTASKS", "10"},
                     {"TX_TASK_ID", id},
                     {"TX_WORKER_ID", "(print-env)"}}));

  EXPECT_TRUE(RefusedWithoutWriting({"worker", "start", "--print-env", "task-aaaaaaaa"}, 3,
                                    "task-aaaaaaaa"));
  // The config is read as the worker would read it: a bad one is refused.
  std::ofstream(Path(".tx/config.toml")) << "[worker]\npass_env = [\"MY-TOOL\"]\n";
  EXPECT_TRUE(RefusedWithoutWriting({"worker", "start", "--print-env", id}, 2, "worker.pass_env"));
}

TEST_F(Cli, JsonOutputOfEveryCommandIsOneDocument) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  std::string worker = Show(id)["attempts"][0]["worker_id"];
  for (const Args& args : std::vector<Args>{{"init"},
                                            {"task", "add", "b"},
                                            {"task", "list"},
                                            {"task", "show", id},
                                            {"task", "update", id, "--priority", "2"},
                                            {"claim:renew", id, "--token", token},
                                            {"events"},
                                            {"worker", "list"},
                                            {"worker", "status"},
                                            {"worker", "status", worker},
                                            {"orchestrator", "reconcile"},
                                            {"task", "done", id, "--token", token}}) {
    Args with_json = args;
    with_json.push_back("--json");
    RunResult r = Tx(with_json);
    EXPECT_EQ(r.exit_code, 0) << Describe(with_json, r);
    EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded()) << Describe(with_json, r);
  }
}

// ================================ task add =======================================================

TEST_F(Cli, TaskAddWithEveryFlagShowsThemAllInJson) {
  std::string dep = Add("dependency");
  // clang-format off
  std::string id = Add("the title", {"--description", "a longer text",
                                     "--instructions", "do it well",
                                     "--deliverables", "a file",
                                     "--step", "first", "--step", "second",
                                     "--priority", "7",
                                     "--queue", "build",
                                     "--requires", "gpu", "--requires", "linux,x86",
                                     "--after", dep,
                                     "--owner", "slot-2",
                                     "--workdir", "/srv/work",
                                     "--command", "make -j 2 'all the things'",
                                     "--timeout", "45m",
                                     "--max-attempts", "5",
                                     "--review",
                                     "--repo", "/srv/repo", "--base", "main",
                                     "--metadata", R"({"ticket": 42, "tags": ["x"]})"});
  // clang-format on
  json t = Show(id);
  EXPECT_TRUE(std::regex_match(t["id"].get<std::string>(), kTaskId)) << t["id"];
  EXPECT_EQ(t["id"], id);
  EXPECT_EQ(t["status"], "blocked");  // its dependency is not done
  EXPECT_EQ(t["title"], "the title");
  EXPECT_EQ(t["description"], "a longer text");
  EXPECT_EQ(t["instructions"], "do it well");
  EXPECT_EQ(t["deliverables"], "a file");
  EXPECT_EQ(t["steps"], json({"first", "second"}));
  EXPECT_EQ(t["priority"], 7);
  EXPECT_EQ(t["queue"], "build");
  EXPECT_EQ(t["requires"], json({"gpu", "linux", "x86"}));
  EXPECT_EQ(t["after"], json({dep}));
  EXPECT_EQ(t["owner"], "slot-2");
  EXPECT_EQ(t["workdir"], "/srv/work");
  EXPECT_EQ(t["command"], json({"make", "-j", "2", "all the things"}));
  EXPECT_EQ(t["timeout"], "45m");
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["max_attempts"], 5);
  EXPECT_EQ(t["review"], true);
  EXPECT_EQ(t["repo"], "/srv/repo");
  EXPECT_EQ(t["base"], "main");
  EXPECT_EQ(t["metadata"], json::parse(R"({"ticket": 42, "tags": ["x"]})"));
  EXPECT_TRUE(IsTime(t["created_at"])) << t["created_at"];
  EXPECT_TRUE(IsTime(t["updated_at"])) << t["updated_at"];
  EXPECT_TRUE(t["started_at"].is_null());
  EXPECT_TRUE(t["finished_at"].is_null());
  EXPECT_EQ(t["attempts"], json::array());
}

TEST_F(Cli, TaskAddDefaultsAreReadyPriorityZeroDefaultQueueThreeAttempts) {
  json t = Show(Add("plain"));
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["priority"], 0);
  EXPECT_EQ(t["queue"], "default");
  EXPECT_EQ(t["max_attempts"], 3);
  EXPECT_EQ(t["timeout"], "30m");
  EXPECT_EQ(t["review"], false);
  EXPECT_EQ(t["metadata"], json::object());
}

TEST_F(Cli, TaskAddWithAgentRecordsTheProfile) {
  json t = Show(Add("agent job", {"--agent", "claude"}));
  EXPECT_EQ(t["agent"], "claude");
  EXPECT_EQ(t["command"], json::array());
}

TEST_F(Cli, TaskAddAcceptsNegativePriority) {
  EXPECT_EQ(Show(Add("later", {"--priority", "-5"}))["priority"], -5);
  EXPECT_EQ(Show(Add("later too", {"--priority=-12"}))["priority"], -12);
}

TEST_F(Cli, TaskAddPrintsTheIdForPeople) {
  RunResult r = Must({"task", "add", "for people"});
  std::string id = TaskIds().at(0);
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
}

TEST_F(Cli, TaskAddWithNonIntegerPriorityExitsTwoAndWritesNothing) {
  Add("existing");
  for (const char* bad : {"abc", "1.5", "7x", "99999999999999999999"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--priority", bad}, 2, Quoted(bad)));
  }
}

TEST_F(Cli, TaskAddWithEmptyFlagValuesIsRefusedNotDefaulted) {
  // An empty value (e.g. from an unset shell variable) is bad input, not "flag not given".
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--priority", ""}, 2, "priority"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", ""}, 2, "--timeout"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", ""}, 2, "command"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--metadata", ""}, 2, "--metadata"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list", "--status", ""}, 2, "--status"));
}

TEST_F(Cli, TaskAddWithMalformedTimeoutExitsTwoAndWritesNothing) {
  for (const char* bad : {"5q", "abc", "-5s", "5", "m"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", bad}, 2, Quoted(bad)));
  }
}

TEST_F(Cli, TaskAddWithZeroOrOverCapTimeoutExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", "0s"}, 2, "0s"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", "3h"}, 2, "3h"));
}

TEST_F(Cli, TaskAddAcceptsCompoundDurations) {
  EXPECT_EQ(Show(Add("x", {"--timeout", "1h30m"}))["timeout"], "1h30m");
  EXPECT_EQ(Show(Add("y", {"--timeout", "250ms"}))["timeout"], "250ms");
}

TEST_F(Cli, TaskAddWithInvalidJsonMetadataExitsTwoAndWritesNothing) {
  for (const char* bad : {"{", R"({"a":})", "not json", "{'a': 1}"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--metadata", bad}, 2, "not valid JSON"))
        << bad;
  }
}

TEST_F(Cli, TaskAddWithNonObjectMetadataExitsTwoAndWritesNothing) {
  for (const char* bad : {"[1, 2]", R"("text")", "42", "null", "true"}) {
    EXPECT_TRUE(
        RefusedWithoutWriting({"task", "add", "x", "--metadata", bad}, 2, "not a JSON object"))
        << bad;
  }
}

TEST_F(Cli, TaskAddWithUnknownAfterDependencyExitsThreeAndWritesNothing) {
  Add("existing");
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "add", "x", "--after", "task-deadbeef"}, 3, "task-deadbeef"));
}

TEST_F(Cli, TaskAddWithMalformedAfterIdExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--after", "nope"}, 2, "nope"));
}

TEST_F(Cli, TaskAddWithTheSameDependencyTwiceExitsTwo) {
  std::string dep = Add("dep");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--after", dep, "--after", dep}, 2, dep));
}

TEST_F(Cli, TaskAddWithUnclosedQuoteInCommandExitsTwoAndWritesNothing) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", "echo 'hi"}, 2, "unclosed"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", "echo \"hi"}, 2, "unclosed"));
}

TEST_F(Cli, TaskAddWithCommandAndAgentExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", "true", "--agent", "claude"},
                                    2, "--agent"));
}

TEST_F(Cli, TaskAddWithBaseButNoRepoExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--base", "main"}, 2, "--repo"));
}

TEST_F(Cli, TaskAddWithOutOfRangeMaxAttemptsExitsTwo) {
  for (const char* bad : {"0", "101", "-1", "three"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--max-attempts", bad}, 2, bad));
  }
}

TEST_F(Cli, TaskAddWithInvalidQueueOrCapabilityOrOwnerExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--queue", "bad queue"}, 2, "bad queue"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--requires", "a/b"}, 2, "a/b"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--owner", "no way"}, 2, "no way"));
}

// ================================ task list / show / update =====================================

TEST_F(Cli, TaskListWithUnknownStatusExitsTwoAndNamesIt) {
  Add("x");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list", "--status", "bogus"}, 2, "'bogus'"));
}

TEST_F(Cli, TaskListAcceptsStatusAliases) {
  std::string ready = Add("ready one");
  std::string running = Add("running one");
  std::string done = Add("done one");
  ClaimToken(running);
  Must({"task", "done", done, "--token", ClaimToken(done)});

  EXPECT_EQ(TaskIds({"--status", "todo"}), std::vector<std::string>{ready});
  EXPECT_EQ(TaskIds({"--status", "ready"}), std::vector<std::string>{ready});
  EXPECT_EQ(TaskIds({"--status", "in-progress"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "active"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "claimed"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "completed"}), std::vector<std::string>{done});
  EXPECT_EQ(TaskIds({"--status", "done"}), std::vector<std::string>{done});
  EXPECT_TRUE(TaskIds({"--status", "failed"}).empty());
}

TEST_F(Cli, TaskListFiltersByQueue) {
  Add("a");
  std::string b = Add("b", {"--queue", "gpu"});
  EXPECT_EQ(TaskIds({"--queue", "gpu"}), std::vector<std::string>{b});
  EXPECT_EQ(TaskIds().size(), 2u);
}

TEST_F(Cli, TaskListWithNonIntegerLimitExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list", "--limit", "ten"}, 2, "'ten'"));
}

TEST_F(Cli, TaskShowWithoutAnIdExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "show"}, 2, "id"));
}

TEST_F(Cli, TaskListOnAnEmptyStoreIsAnEmptyArray) {
  EXPECT_EQ(Tasks(), json::array());
  EXPECT_EQ(Must({"task", "list"}).out, "no tasks\n");
}

TEST_F(Cli, UnknownTaskIdExitsThreeForEveryCommand) {
  std::string id = Add("real");
  std::string token = ClaimToken(id);
  const std::string ghost = "task-deadbeef";
  for (const Args& args : std::vector<Args>{{"task", "show", ghost},
                                            {"task", "update", ghost, "--priority", "1"},
                                            {"task", "done", ghost, "--force"},
                                            {"task", "fail", ghost, "--force"},
                                            {"task", "cancel", ghost},
                                            {"task", "retry", ghost},
                                            {"claim", ghost},
                                            {"claim:renew", ghost, "--token", token},
                                            {"claim:release", ghost, "--token", token}}) {
    EXPECT_TRUE(RefusedWithoutWriting(args, 3, ghost)) << Join(args);
  }
}

TEST_F(Cli, TaskUpdateThatWouldCreateACycleExitsTwoAndWritesNothing) {
  std::string b = Add("b");
  std::string a = Add("a", {"--after", b});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", b, "--after", a}, 2, "cycle"));
}

TEST_F(Cli, TaskUpdateWithALongerCycleExitsTwo) {
  std::string c = Add("c");
  std::string b = Add("b", {"--after", c});
  std::string a = Add("a", {"--after", b});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", c, "--after", a}, 2, "cycle"));
}

TEST_F(Cli, TaskUpdateAfterItselfIsACycle) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--after", a}, 2, "cycle"));
}

TEST_F(Cli, TaskUpdateWithUnknownDependencyExitsThree) {
  std::string a = Add("a");
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "update", a, "--after", "task-deadbeef"}, 3, "task-deadbeef"));
}

TEST_F(Cli, TaskUpdateWithNothingToChangeExitsTwo) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a}, 2, "nothing to update"));
}

TEST_F(Cli, TaskUpdateWithBadPriorityOrMetadataExitsTwo) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--priority", "high"}, 2, "'high'"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--metadata", "[1]"}, 2, "JSON object"));
}

TEST_F(Cli, TaskUpdateChangesFieldsAndRecordsAnEvent) {
  std::string a = Add("old", {"--metadata", R"({"keep": 1, "drop": 2})"});
  std::string b = Add("b");
  json t = MustJson({"task", "update", a, "--title", "new", "--priority", "9", "--metadata",
                     R"({"drop": null, "add": 3})", "--after", b});
  EXPECT_EQ(t["title"], "new");
  EXPECT_EQ(t["priority"], 9);
  EXPECT_EQ(t["metadata"], json::parse(R"({"keep": 1, "add": 3})"));
  EXPECT_EQ(t["after"], json({b}));
  EXPECT_EQ(t["status"], "blocked");
  EXPECT_EQ(EventTypes(a), (std::vector<std::string>{"task.created", "task.updated"}));

  EXPECT_EQ(MustJson({"task", "update", a, "--no-after"})["status"], "ready");
}

// ================================ claims and outcomes ===========================================

TEST_F(Cli, ClaimPrintsTheFencingToken) {
  std::string id = Add("a");
  RunResult r = Must({"claim", id});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(token\s+(\d+))"))) << r.out;
  EXPECT_GT(std::stoll(m[1]), 0);
  EXPECT_EQ(StatusOf(id), "running");
}

TEST_F(Cli, ClaimJsonCarriesTokenWorkerLeaseAndTheRunningTask) {
  std::string id = Add("a");
  json c = ClaimJson(id, {"--lease", "10m"});
  EXPECT_TRUE(c["token"].is_number_integer());
  EXPECT_EQ(c["task_id"], id);
  EXPECT_TRUE(std::regex_match(c["worker_id"].get<std::string>(), kWorkerId)) << c["worker_id"];
  EXPECT_EQ(c["status"], "active");
  EXPECT_EQ(c["n"], 1);
  EXPECT_TRUE(IsTime(c["lease_expires_at"]));
  EXPECT_EQ(c["task"]["status"], "running");
  EXPECT_EQ(c["task"]["attempt"], 1);
}

TEST_F(Cli, TokensIncreaseFromClaimToClaim) {
  std::int64_t first = ClaimJson(Add("a"))["token"];
  std::int64_t second = ClaimJson(Add("b"))["token"];
  EXPECT_GT(second, first);
}

TEST_F(Cli, ClaimNextTakesHighestPriorityFirstThenFifo) {
  std::string low = Add("low", {"--priority", "0"});
  std::string high1 = Add("high 1", {"--priority", "5"});
  std::string negative = Add("negative", {"--priority", "-1"});
  std::string mid = Add("mid", {"--priority", "3"});
  std::string high2 = Add("high 2", {"--priority", "5"});
  std::string low2 = Add("low 2");

  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) order.push_back(ClaimJson("", {"--next"})["task_id"]);
  EXPECT_EQ(order, (std::vector<std::string>{high1, high2, mid, low, low2, negative}));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", "--next"}, 3, "no eligible ready task"));
}

TEST_F(Cli, ClaimNextOnAnEmptyQueueExitsThree) {
  EXPECT_TRUE(IsRefusal(Tx({"claim", "--next"}), 3, "no eligible ready task"));
  EXPECT_EQ(Tasks(), json::array());
}

TEST_F(Cli, ClaimNextSkipsBlockedTasksAndOtherQueues) {
  std::string dep = Add("dep", {"--priority", "-10"});
  Add("blocked", {"--priority", "10", "--after", dep});
  Add("other queue", {"--priority", "10", "--queue", "elsewhere"});
  EXPECT_EQ(ClaimJson("", {"--next"})["task_id"], dep);
}

TEST_F(Cli, ClaimOfARunningTaskExitsFourAndChangesNothing) {
  std::string id = Add("a");
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, "already claimed"));
}

TEST_F(Cli, RefusedClaimByANewWorkerNameWritesNothing) {
  // design.md §2.6: a refusal makes no partial write — not even the worker it would have used.
  std::string id = Add("a");
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--worker", "other"}, 4, "already claimed"));
}

TEST_F(Cli, ClaimOfABlockedTaskExitsFour) {
  std::string dep = Add("dep");
  ClaimToken(Add("registers the cli worker"));
  std::string id = Add("a", {"--after", dep});
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, "blocked"));
}

TEST_F(Cli, ClaimOfADoneTaskExitsFour) {
  std::string id = Add("a");
  Must({"task", "done", id, "--token", ClaimToken(id)});
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, id));
}

TEST_F(Cli, ClaimWithMalformedLeaseExitsTwo) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--lease", "abc"}, 2, "'abc'"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", "--next", "--lease", "5q"}, 2, "'5q'"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--lease", "0s"}, 2, "0s"));
}

TEST_F(Cli, ClaimNeedsExactlyOneOfTaskOrNext) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"claim"}, 2, "--next"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--next"}, 2, "--next"));
}

TEST_F(Cli, TaskDoneWithTheTokenCompletesTheTaskAndItsAttempt) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  json t = MustJson({"task", "done", id, "--token", token, "--result", "all good"});
  EXPECT_EQ(t["status"], "done");
  EXPECT_EQ(t["result"], "all good");
  EXPECT_TRUE(IsTime(t["finished_at"]));
  ASSERT_EQ(t["attempts"].size(), 1u);
  const json& a = t["attempts"][0];
  EXPECT_EQ(a["n"], 1);
  EXPECT_EQ(std::to_string(a["token"].get<std::int64_t>()), token);
  EXPECT_TRUE(std::regex_match(a["worker_id"].get<std::string>(), kWorkerId));
  EXPECT_TRUE(IsTime(a["started_at"]));
  EXPECT_TRUE(IsTime(a["ended_at"]));
  EXPECT_EQ(a["status"], "completed");
  EXPECT_EQ(a["end_reason"], "exited");
  EXPECT_TRUE(a.contains("exit_code"));
  EXPECT_EQ(EventTypes(id),
            (std::vector<std::string>{"task.created", "task.claimed", "task.done"}));
}

TEST_F(Cli, TaskDoneTwiceIsRefusedTheSecondTime) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  Must({"task", "done", id, "--token", token});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
}

TEST_F(Cli, TaskDoneWithAStaleTokenExitsFourAndChangesNothing) {
  std::string id = Add("a");
  std::string old_token = ClaimToken(id);
  Must({"claim:release", id, "--token", old_token});
  std::string new_token = ClaimToken(id);
  ASSERT_NE(old_token, new_token);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", old_token}, 4, "stale"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "fail", id, "--token", old_token}, 4, "stale"));
  EXPECT_EQ(StatusOf(id), "running");
  Must({"task", "done", id, "--token", new_token});
}

TEST_F(Cli, TaskDoneWithAnotherTasksTokenExitsFour) {
  std::string a = Add("a");
  std::string b = Add("b");
  std::string token_a = ClaimToken(a);
  ClaimToken(b);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", b, "--token", token_a}, 4, a));
}

TEST_F(Cli, TaskDoneWithAnUnknownTokenExitsFour) {
  std::string id = Add("a");
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", "999"}, 4, "999"));
}

TEST_F(Cli, TaskDoneWithANonIntegerTokenExitsTwo) {
  std::string id = Add("a");
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", "abc"}, 2, "'abc'"));
}

TEST_F(Cli, TaskDoneWithoutTokenOrForceExitsTwo) {
  std::string id = Add("a");
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id}, 2, "TX_CLAIM_TOKEN"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "fail", id}, 2, "--token"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id}, 2, "TX_CLAIM_TOKEN"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:release", id}, 2, "TX_CLAIM_TOKEN"));
}

TEST_F(Cli, ForceAndTokenTogetherExitTwo) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "done", id, "--force", "--token", token}, 2, "--force"));
}

TEST_F(Cli, ForcedDoneRevokesTheClaimSoTheHolderCannotRenew) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  json t = MustJson({"task", "done", id, "--force"});
  EXPECT_EQ(t["status"], "done");
  EXPECT_EQ(t["attempts"][0]["status"], "released");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "forced");

  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, token));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));

  bool recorded = false;
  for (const auto& e : Events()) {
    if (e["type"] == "task.forced" && e["task_id"] == id) {
      recorded = std::to_string(e["data"]["revoked_token"].get<std::int64_t>()) == token;
    }
  }
  EXPECT_TRUE(recorded) << "no task.forced event naming the revoked token";
}

TEST_F(Cli, ForcedFailOfAReadyTaskFailsItWithoutAClaim) {
  std::string id = Add("a");
  json t = MustJson({"task", "fail", id, "--force", "--error", "not needed"});
  EXPECT_EQ(t["status"], "failed");
  EXPECT_EQ(t["error"], "not needed");
}

TEST_F(Cli, ClaimTokenFromTheEnvironmentIsUsed) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "done", id}, 4, "12345", {{"TX_CLAIM_TOKEN", "12345"}}));
  json renewed = MustJson({"claim:renew", id}, {{"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(renewed["renewed_count"], 1);
  json t = MustJson({"task", "done", id}, {{"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(t["status"], "done");
}

TEST_F(Cli, TokenFlagTakesPrecedenceOverTheEnvironment) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  json t = MustJson({"task", "done", id, "--token", token}, {{"TX_CLAIM_TOKEN", "999"}});
  EXPECT_EQ(t["status"], "done");
}

TEST_F(Cli, ReleasePutsTheTaskBackToReadyWithoutCountingTheAttempt) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  EXPECT_EQ(Show(id)["attempt"], 1);
  json released = MustJson({"claim:release", id, "--token", token});
  EXPECT_EQ(released["status"], "ready");
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["status"], "released");
  EXPECT_TRUE(IsTime(t["attempts"][0]["ended_at"]));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, "stale"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:release", id, "--token", token}, 4, "stale"));

  json again = ClaimJson(id);
  EXPECT_EQ(again["task"]["attempt"], 1);
  EXPECT_EQ(again["n"], 2);  // the second claim is the second attempt row
}

TEST_F(Cli, RenewIncrementsRenewedCountAndExtendsTheLease) {
  std::string id = Add("a");
  json c = ClaimJson(id);
  std::string token = std::to_string(c["token"].get<std::int64_t>());
  EXPECT_EQ(c["renewed_count"], 0);
  json r1 = MustJson({"claim:renew", id, "--token", token});
  json r2 = MustJson({"claim:renew", id, "--token", token});
  EXPECT_EQ(r1["renewed_count"], 1);
  EXPECT_EQ(r2["renewed_count"], 2);
  EXPECT_GE(r2["lease_expires_at"].get<std::string>(), c["lease_expires_at"].get<std::string>());
  EXPECT_EQ(Show(id)["attempts"][0]["renewed_count"], 2);
  EXPECT_EQ(CountEvents("lease.renewed"), 2);
}

TEST_F(Cli, RenewBeyondTheRenewalCapExitsFour) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  for (int i = 1; i <= 10; ++i) {
    EXPECT_EQ(MustJson({"claim:renew", id, "--token", token})["renewed_count"], i);
  }
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, "renewal cap"));
  Must({"task", "done", id, "--token", token});  // the claim itself is still good
}

TEST_F(Cli, TaskDoneAfterTheLeaseExpiredExitsFourAndChangesNothing) {
  std::string id = Add("a");
  std::string token = ClaimToken(id, {"--lease", "200ms", "--worker", "brief"});
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, "expired"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, "expired"));
  EXPECT_EQ(StatusOf(id), "running") << "only the reconciler takes an expired lease back";
}

TEST_F(Cli, FailWithAttemptsLeftRequeuesWithBackoffThenFailsWhenExhausted) {
  std::string id = Add("flaky", {"--max-attempts", "2"});
  json after_first = MustJson({"task", "fail", id, "--token", ClaimToken(id), "--error", "boom"});
  auto failed_at = std::chrono::steady_clock::now();
  RunResult next = Tx({"claim", "--next"});
  if (std::chrono::steady_clock::now() - failed_at < std::chrono::milliseconds(700)) {
    // The first retry waits 1 s ± 20 %: --next must not see the task yet.
    EXPECT_TRUE(IsRefusal(next, 3, "no eligible ready task"));
  }
  EXPECT_EQ(after_first["status"], "ready");
  EXPECT_EQ(after_first["error"], "boom");
  EXPECT_EQ(after_first["attempt"], 1);
  EXPECT_GT(after_first["run_after"].get<std::string>(),
            after_first["attempts"][0]["ended_at"].get<std::string>())
      << "a retried task waits for its backoff";
  EXPECT_EQ(after_first["attempts"][0]["end_reason"], "failed");

  json after_second =
      MustJson({"task", "fail", id, "--token", ClaimToken(id), "--error", "boom again"});
  EXPECT_EQ(after_second["status"], "failed");
  EXPECT_EQ(after_second["attempt"], 2);
  EXPECT_EQ(after_second["attempts"].size(), 2u);
  EXPECT_EQ(EventTypes(id),
            (std::vector<std::string>{"task.created", "task.claimed", "task.retry_scheduled",
                                      "task.claimed", "task.failed"}));
}

TEST_F(Cli, RetryOfAFailedTaskMakesItReadyAgain) {
  std::string id = Add("a", {"--max-attempts", "1"});
  Must({"task", "fail", id, "--token", ClaimToken(id)});
  ASSERT_EQ(StatusOf(id), "failed");
  json t = MustJson({"task", "retry", id, "--note", "try again"});
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(EventTypes(id).back(), "task.retried");
  EXPECT_EQ(ClaimJson("", {"--next"})["task_id"], id);
}

TEST_F(Cli, RetryOfATaskThatHasNotFailedExitsFour) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "retry", id}, 4, id));
}

TEST_F(Cli, CancelOfARunningTaskRevokesItsClaim) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  json t = MustJson({"task", "cancel", id, "--note", "not wanted"});
  EXPECT_EQ(t["status"], "cancelled");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "cancelled");
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, token));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
  EXPECT_EQ(EventTypes(id).back(), "task.cancelled");
}

TEST_F(Cli, CancelOfAFinishedTaskExitsFour) {
  std::string id = Add("a");
  Must({"task", "done", id, "--token", ClaimToken(id)});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "cancel", id}, 4, id));
}

TEST_F(Cli, CancelledTaskCanBeRetried) {
  std::string id = Add("a");
  Must({"task", "cancel", id});
  EXPECT_EQ(MustJson({"task", "retry", id})["status"], "ready");
}

TEST_F(Cli, ReviewTaskGoesToReviewInsteadOfDone) {
  std::string id = Add("a", {"--review"});
  EXPECT_EQ(MustJson({"task", "done", id, "--token", ClaimToken(id)})["status"], "review");
  std::string plain = Add("b");
  EXPECT_EQ(MustJson({"task", "review", plain, "--token", ClaimToken(plain)})["status"], "review");
}

// ================================ questions (issue 22) ==========================================

TEST_F(Cli, AskWithTheTokenEndsTheAttemptUncountedAndTheTaskWaits) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  // As an agent asks: the task and the token from its environment.
  json asked = MustJson({"task", "ask", "Which database should I use?"},
                        {{"TX_TASK_ID", id}, {"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(asked["status"], "waiting");
  json t = Show(id);
  EXPECT_EQ(t["status"], "waiting");
  EXPECT_EQ(t["attempt"], 0);  // a question uses up no attempt
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["status"], "completed");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "asked");
  ASSERT_EQ(t["metadata"]["questions"].size(), 1u);
  EXPECT_EQ(t["metadata"]["questions"][0]["question"], "Which database should I use?");
  EXPECT_EQ(EventTypes(id),
            (std::vector<std::string>{"task.created", "task.claimed", "task.asked"}));
  EXPECT_EQ(TaskIds({"--status", "waiting"}), std::vector<std::string>{id});
  // Said to the agent in words: stop and exit.
  std::string other = Add("b");
  RunResult plain =
      Must({"task", "ask", "Which port?", "--task", other, "--token", ClaimToken(other)});
  EXPECT_NE(plain.out.find("waiting"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("exit"), std::string::npos) << plain.out;
  // A person sees the question.
  RunResult shown = Must({"task", "show", id});
  EXPECT_NE(shown.out.find("question      Which database should I use?"), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("tx task answer " + id), std::string::npos) << shown.out;
}

TEST_F(Cli, AskWithAStaleTokenExitsFourAndChangesNothing) {
  std::string id = Add("a");
  std::string old_token = ClaimToken(id);
  Must({"claim:release", id, "--token", old_token});
  std::string token = ClaimToken(id);
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "ask", "q?", "--task", id, "--token", old_token}, 4, "stale"));
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "ask", "q?", "--task", id, "--token", "999"}, 4, "999"));
  Must({"task", "ask", "q?", "--task", id, "--token", token});
  // Asked once: the token's claim has ended.
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "ask", "again?", "--task", id, "--token", token}, 4, token));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
}

TEST_F(Cli, AskRefusesBadInputWithoutWriting) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "ask", "q?", "--token", token}, 2, "TX_TASK_ID"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "ask", "q?", "--task", id}, 2, "TX_CLAIM_TOKEN"));
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "ask", "  ", "--task", id, "--token", token}, 2, "empty"));
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "ask", "--task", id, "--token", token}, 2, "question"));
  EXPECT_TRUE(RefusedWithoutWriting(
      {"task", "ask", "q?", "--task", "task-deadbeef", "--token", token}, 3, "task-deadbeef"));
  EXPECT_EQ(StatusOf(id), "running");
}

TEST_F(Cli, AnswerSendsTheTaskBackToTheQueueWithTheAnswerKept) {
  std::string id = Add("a");
  Must({"task", "ask", "Which database?", "--task", id, "--token", ClaimToken(id)});
  json t = MustJson({"task", "answer", id, "Use PostgreSQL"});
  EXPECT_EQ(t["status"], "ready");
  ASSERT_EQ(t["metadata"]["questions"].size(), 1u);
  const json& q = t["metadata"]["questions"][0];
  EXPECT_EQ(q["question"], "Which database?");
  EXPECT_EQ(q["answer"], "Use PostgreSQL");
  EXPECT_TRUE(q["asked_at"].is_number_integer());
  EXPECT_TRUE(q["answered_at"].is_number_integer());
  EXPECT_EQ(q["attempt"], 1);
  bool recorded = false;
  for (const auto& e : Events()) {
    if (e["type"] == "task.answered" && e["task_id"] == id) {
      recorded =
          e["data"]["answer"] == "Use PostgreSQL" && e["data"]["question"] == "Which database?";
    }
  }
  EXPECT_TRUE(recorded) << "no task.answered event with the answer";
  RunResult shown = Must({"task", "show", id});
  EXPECT_NE(shown.out.find("answered"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("Use PostgreSQL"), std::string::npos) << shown.out;
  // Claimed again, the attempt is the first that counts.
  ClaimJson(id);
  json again = Show(id);
  EXPECT_EQ(again["attempt"], 1);
  ASSERT_EQ(again["attempts"].size(), 2u);
  EXPECT_EQ(again["attempts"][1]["n"], 2);
}

TEST_F(Cli, AnswerOfATaskThatIsNotWaitingExitsFourAndChangesNothing) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", id, "yes"}, 4, "not waiting"));
  ClaimToken(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", id, "yes"}, 4, "running"));
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "answer", "task-deadbeef", "yes"}, 3, "task-deadbeef"));
  std::string waiting = Add("b");
  Must({"task", "ask", "q?", "--task", waiting, "--token", ClaimToken(waiting)});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", waiting, ""}, 2, "empty"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", waiting}, 2, "answer"));
  Must({"task", "answer", waiting, "yes"});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", waiting, "again"}, 4, "not waiting"));
}

TEST_F(Cli, AWaitingTaskWithUnfinishedDependenciesIsAnsweredIntoBlocked) {
  std::string first = Add("first");
  std::string id = Add("second");
  Must({"task", "ask", "q?", "--task", id, "--token", ClaimToken(id)});
  Must({"task", "update", id, "--after", first});
  EXPECT_EQ(StatusOf(id), "waiting");
  EXPECT_EQ(MustJson({"task", "answer", id, "a"})["status"], "blocked");
}

TEST_F(Cli, AWaitingTaskCanBeCancelledAndNotRetriedWhileItWaits) {
  std::string id = Add("a");
  Must({"task", "ask", "q?", "--task", id, "--token", ClaimToken(id)});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "retry", id}, 4, "waiting"));
  EXPECT_EQ(MustJson({"task", "cancel", id})["status"], "cancelled");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "answer", id, "late"}, 4, "cancelled"));
}

TEST_F(Cli, AnUnansweredQuestionIsFailedByTheReconcilerPastTheQuestionTimeout) {
  std::ofstream(Path(".tx/config.toml")) << "[orchestrator]\nquestion_timeout = \"200ms\"\n";
  std::string id = Add("a");
  Must({"task", "ask", "Still there?", "--task", id, "--token", ClaimToken(id)});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  json report = MustJson({"orchestrator", "reconcile"});
  EXPECT_EQ(report["expired_questions"], 1);
  json t = Show(id);
  EXPECT_EQ(t["status"], "failed");
  EXPECT_NE(t["error"].get<std::string>().find("question unanswered"), std::string::npos)
      << t["error"];
  EXPECT_NE(t["error"].get<std::string>().find("Still there?"), std::string::npos) << t["error"];
  EXPECT_EQ(EventTypes(id).back(), "task.failed");
}

TEST_F(Cli, AMalformedQuestionTimeoutIsRefusedByName) {
  std::ofstream(Path(".tx/config.toml")) << "[orchestrator]\nquestion_timeout = \"soon\"\n";
  EXPECT_TRUE(RefusedWithoutWriting({"orchestrator", "reconcile"}, 2, "question_timeout"));
}

// ================================ dependencies ==================================================

TEST_F(Cli, BlockedTaskBecomesReadyWhenItsDependencyIsDone) {
  std::string a = Add("a");
  std::string b = Add("b", {"--after", a});
  EXPECT_EQ(StatusOf(b), "blocked");
  Must({"task", "done", a, "--token", ClaimToken(a)});
  EXPECT_EQ(StatusOf(b), "ready");

  bool unblocked = false;
  for (const auto& e : Events()) {
    if (e["type"] == "task.unblocked" && e["task_id"] == b) unblocked = e["data"]["after"] == a;
  }
  EXPECT_TRUE(unblocked) << "no task.unblocked event for " << b;
}

TEST_F(Cli, TaskWithTwoDependenciesWaitsForBoth) {
  std::string a = Add("a");
  std::string b = Add("b");
  std::string c = Add("c", {"--after", a, "--after", b});
  Must({"task", "done", a, "--token", ClaimToken(a)});
  EXPECT_EQ(StatusOf(c), "blocked");
  Must({"task", "done", b, "--token", ClaimToken(b)});
  EXPECT_EQ(StatusOf(c), "ready");
}

TEST_F(Cli, TaskAddedAfterADoneTaskIsReadyAtOnce) {
  std::string a = Add("a");
  Must({"task", "done", a, "--token", ClaimToken(a)});
  EXPECT_EQ(StatusOf(Add("b", {"--after", a})), "ready");
}

// ================================ events ========================================================

TEST_F(Cli, EveryStateChangeHasAnEventAndEventIdsIncrease) {
  std::string id = Add("a");
  std::string t1 = ClaimToken(id);
  Must({"claim:renew", id, "--token", t1});
  Must({"claim:release", id, "--token", t1});
  Must({"task", "fail", id, "--token", ClaimToken(id)});
  Must({"task", "done", id, "--token", ClaimToken(id)});
  std::string other = Add("b");
  Must({"task", "update", other, "--priority", "3"});
  Must({"task", "cancel", other});
  Must({"task", "retry", other});

  json events = Events();
  std::int64_t last = 0;
  for (const auto& e : events) {
    for (const char* key : {"id", "type", "at", "task_id", "worker_id", "data"}) {
      EXPECT_TRUE(e.contains(key)) << key << " missing in " << e.dump();
    }
    EXPECT_GT(e["id"].get<std::int64_t>(), last) << e.dump();
    last = e["id"];
    EXPECT_TRUE(IsTime(e["at"])) << e.dump();
  }
  EXPECT_EQ(EventTypes(id),
            (std::vector<std::string>{"task.created", "task.claimed", "lease.renewed",
                                      "task.released", "task.requeued", "task.claimed",
                                      "task.retry_scheduled", "task.claimed", "task.done"}));
  EXPECT_EQ(EventTypes(other), (std::vector<std::string>{"task.created", "task.updated",
                                                         "task.cancelled", "task.retried"}));
  EXPECT_EQ(CountEvents("worker.registered"), 1);
}

TEST_F(Cli, ClaimEventCarriesTheWorkerAndToken) {
  std::string id = Add("a");
  json c = ClaimJson(id);
  for (const auto& e : Events()) {
    if (e["type"] != "task.claimed") continue;
    EXPECT_EQ(e["task_id"], id);
    EXPECT_EQ(e["worker_id"], c["worker_id"]);
    EXPECT_EQ(e["data"]["token"], c["token"]);
  }
}

TEST_F(Cli, EventsSinceReturnsOnlyLaterEvents) {
  Add("a");
  Add("b");
  Add("c");
  json all = Events();
  ASSERT_EQ(all.size(), 3u);
  json later = MustJson({"events", "--since", std::to_string(all[0]["id"].get<std::int64_t>())});
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0], all[1]);
  EXPECT_TRUE(RefusedWithoutWriting({"events", "--since", "yesterday"}, 2, "'yesterday'"));
}

// ================================ workers and the reconciler ====================================

TEST_F(Cli, WorkerListShowsTheCliWorkerAfterAClaim) {
  EXPECT_EQ(MustJson({"worker", "list"}), json::array());
  std::string id = Add("a");
  json c = ClaimJson(id);

  json workers = MustJson({"worker", "list"});
  ASSERT_EQ(workers.size(), 1u);
  const json& w = workers[0];
  EXPECT_EQ(w["id"], c["worker_id"]);
  EXPECT_EQ(w["name"], "cli");
  EXPECT_EQ(w["status"], "busy");
  EXPECT_EQ(w["current_task_id"], id);
  EXPECT_EQ(w["stale"], false);
  EXPECT_TRUE(IsTime(w["last_heartbeat_at"]));

  json status = MustJson({"worker", "status"});
  ASSERT_EQ(status["workers"].size(), 1u);
  EXPECT_EQ(status["workers"][0]["id"], c["worker_id"]);
  EXPECT_EQ(MustJson({"worker", "status", c["worker_id"]})["name"], "cli");

  RunResult plain = Must({"worker", "status"});
  EXPECT_NE(plain.out.find("1 live worker(s): 1 busy"), std::string::npos) << plain.out;
}

TEST_F(Cli, ClaimsByTheSameWorkerNameReuseOneWorker) {
  std::string a = Add("a");
  std::string b = Add("b");
  json ca = ClaimJson(a, {"--worker", "alice"});
  json cb = ClaimJson(b, {"--worker", "alice"});
  EXPECT_EQ(ca["worker_id"], cb["worker_id"]);
  json workers = MustJson({"worker", "list"});
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["name"], "alice");
}

TEST_F(Cli, WorkerStatusFindsAWorkerByName) {
  json c = ClaimJson(Add("a"), {"--worker", "bob"});
  json w = MustJson({"worker", "status", "bob"});
  EXPECT_EQ(w["id"], c["worker_id"]);
  EXPECT_EQ(w["status"], "busy");
}

TEST_F(Cli, ClaimAsAnUnknownWorkerIdExitsThree) {
  std::string id = Add("a");
  EXPECT_TRUE(
      RefusedWithoutWriting({"claim", id, "--worker", "worker-deadbeef"}, 3, "worker-deadbeef"));
}

TEST_F(Cli, WorkerStatusOfAnUnknownWorkerExitsThree) {
  EXPECT_TRUE(RefusedWithoutWriting({"worker", "status", "worker-deadbeef"}, 3, "worker-deadbeef"));
}

TEST_F(Cli, WorkerListWithAnUnknownStatusExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"worker", "list", "--status", "sleepy"}, 2, "sleepy"));
}

TEST_F(Cli, OrchestratorReconcilePrintsTheFourCounts) {
  json r = MustJson({"orchestrator", "reconcile"});
  for (const char* key :
       {"dead_workers", "expired_leases", "orphaned_tasks", "inconsistencies_fixed"}) {
    ASSERT_TRUE(r.contains(key)) << key;
    EXPECT_EQ(r[key], 0) << key;
  }
  RunResult plain = Must({"orchestrator", "reconcile"});
  for (const char* words :
       {"dead workers", "expired leases", "orphaned tasks", "inconsistencies fixed"}) {
    EXPECT_NE(plain.out.find(words), std::string::npos) << plain.out;
  }
}

TEST_F(Cli, ReconcileRecoversATaskWhoseShortLeaseRanOut) {
  std::string id = Add("a");
  std::string token = ClaimToken(id, {"--lease", "200ms", "--worker", "shortlived"});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  json r = MustJson({"orchestrator", "reconcile"});
  EXPECT_EQ(r["dead_workers"].get<int>() + r["expired_leases"].get<int>(), 1) << r.dump();
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 1) << "a lost lease counts as an attempt";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
}

// ================================ TX_ALLOWED_COMMANDS ===========================================

TEST_F(Cli, AllowedCommandsRefusesEveryOtherCommandAndNamesTheVariable) {
  std::string id = Add("a");
  const Env agent = {{"TX_ALLOWED_COMMANDS", "task.show,task.done"}};
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x"}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "cancel", id}, 2, "TX_ALLOWED_COMMANDS", agent));
  RunResult shown = Tx({"task", "show", id}, agent);
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
}

TEST_F(Cli, AllowedCommandsAcceptsWildcards) {
  std::string id = Add("a");
  std::string token = ClaimToken(id);
  const Env agent = {{"TX_ALLOWED_COMMANDS", "task.show, claim.*"}, {"TX_CLAIM_TOKEN", token}};
  EXPECT_EQ(Tx({"claim:renew", id}, agent).exit_code, 0);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list"}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_EQ(Tx({"claim:release", id}, agent).exit_code, 0);
}

// ================================ task add --batch (issue 27) ===================================

TEST_F(Cli, AddBatchAddsEveryLineInOneTransactionWithTheFieldsOfThePostBody) {
  std::ofstream(Path("tasks.jsonl"))
      << "{\"title\": \"first\", \"priority\": 5, \"queue\": \"web\"}\n"
      << "\n"  // a blank line is skipped
      << "{\"title\": \"second\", \"command\": [\"true\"], \"timeout\": \"5m\", "
         "\"requires\": [\"gpu\"], \"metadata\": {\"k\": 1}}\n";
  json added = MustJson({"task", "add", "--batch", "tasks.jsonl"});
  ASSERT_EQ(added["added"], 2);
  ASSERT_EQ(added["ids"].size(), 2u);
  json first = MustJson({"task", "show", added["ids"][0]});
  EXPECT_EQ(first["title"], "first");
  EXPECT_EQ(first["priority"], 5);
  EXPECT_EQ(first["queue"], "web");
  json second = MustJson({"task", "show", added["ids"][1]});
  EXPECT_EQ(second["command"], json::array({"true"}));
  EXPECT_EQ(second["timeout"], "5m");
  EXPECT_EQ(second["requires"], json::array({"gpu"}));
  EXPECT_EQ(second["metadata"]["k"], 1);

  // From stdin, printed as single adds are.
  RunResult piped = tx::testing::RunProcess(
      "/bin/sh",
      {"-c", "printf '{\"title\": \"third\"}\\n' | \"$0\" task add --batch -", TX_BINARY}, {},
      dir_.str());
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("  ready  third"), std::string::npos) << piped.out;
  EXPECT_EQ(MustJson({"task", "list"}).size(), 3u);
}

TEST_F(Cli, AddBatchIsAllOrNothingAndNamesTheLineItRefuses) {
  std::string id = Add("already here");
  std::ofstream(Path("bad.jsonl")) << "{\"title\": \"fine\"}\n{\"titel\": \"typo\"}\n";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "bad.jsonl"}, 2,
                                    "line 2: unknown field 'titel'"));
  std::ofstream(Path("json.jsonl")) << "{\"title\": \"fine\"}\n\n{\"title\": \n";
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "add", "--batch", "json.jsonl"}, 2, "line 3: malformed JSON"));
  std::ofstream(Path("array.jsonl")) << "[{\"title\": \"a\"}]\n";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "array.jsonl"}, 2,
                                    "line 1: a task is a JSON object, one a line"));
  // Refused by the service, inside the transaction: the earlier lines are not kept either.
  std::ofstream(Path("after.jsonl")) << "{\"title\": \"fine\"}\n{\"title\": \"x\", \"after\": "
                                        "[\"task-zzzzzzzz\"]}\n";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "after.jsonl"}, 3,
                                    "line 2: task task-zzzzzzzz (in --after) not found"));
  std::ofstream(Path("empty.jsonl")) << "\n\n";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "empty.jsonl"}, 2,
                                    "the batch holds no task"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "missing.jsonl"}, 3,
                                    "cannot read missing.jsonl"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "bad.jsonl", "--priority", "3"}, 2,
                                    "--batch takes every field from its lines: --priority"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "t", "--batch", "bad.jsonl"}, 2,
                                    "title cannot go with it"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add"}, 2, "needs a title (or --batch FILE)"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "bad.jsonl"}, 2,
                                    "an agent adds its subtasks one at a time",
                                    {{"TX_TASK_ID", id}, {"TX_CLAIM_TOKEN", "1"}}));
  EXPECT_EQ(MustJson({"task", "list"}).size(), 1u) << id;
}

// A batch big enough to be decoded on several threads keeps its order, and its first bad line
// is the one named, whichever thread decoded it.
TEST_F(Cli, ABigBatchIsAddedInTheOrderOfItsLinesAndItsFirstBadLineIsNamed) {
  {
    std::ofstream big(Path("big.jsonl"));
    for (int i = 1; i <= 9'000; ++i) big << "{\"title\": \"t" << i << "\"}\n";
  }
  {
    std::ofstream bad(Path("bad-big.jsonl"));
    for (int i = 1; i <= 9'000; ++i) {
      if (i == 7'001 || i == 8'500) {
        bad << "{\"titel\": \"typo\"}\n";
      } else {
        bad << "{\"title\": \"t" << i << "\"}\n";
      }
    }
  }
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "bad-big.jsonl"}, 2,
                                    "line 7001: unknown field 'titel'"));
  // Lines are inserted while later ones are still decoded: the first line refused, in order,
  // is the one named, whether the service or the decoding refuses it.
  {
    std::ofstream mixed(Path("mixed-big.jsonl"));
    for (int i = 1; i <= 9'000; ++i) {
      if (i == 2'500) {
        mixed << "{\"title\": \"x\", \"after\": [\"task-zzzzzzzz\"]}\n";
      } else if (i == 6'000) {
        mixed << "{\"titel\": \"typo\"}\n";
      } else {
        mixed << "{\"title\": \"t" << i << "\"}\n";
      }
    }
  }
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "--batch", "mixed-big.jsonl"}, 3,
                                    "line 2500: task task-zzzzzzzz (in --after) not found"));
  RunResult added = Tx({"task", "add", "--batch", "big.jsonl"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::istringstream lines(added.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    std::string want = "  ready  t" + std::to_string(n);
    ASSERT_EQ(line.substr(line.size() - std::min(line.size(), want.size())), want) << line;
  }
  EXPECT_EQ(n, 9'000);
}

// ================================ events --follow ===============================================

TEST_F(Cli, EventsFollowPrintsEachNewEventAsAJsonLine) {
  // A follower in the background; a task added afterwards must reach it within the bound.
  const char* script = R"sh(
    "$0" events --follow --json > follow.out 2>follow.err & pid=$!
    sleep 0.3
    "$0" task add "followed task" > /dev/null
    for i in $(seq 100); do grep -q '"followed task"' follow.out && break; sleep 0.1; done
    kill $pid; wait $pid 2>/dev/null
    cat follow.out)sh";
  RunResult r = tx::testing::RunProcess("/bin/sh", {"-c", script, TX_BINARY}, {}, dir_.str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_FALSE(lines.empty()) << "the follower printed nothing";
  EXPECT_EQ(lines.back()["type"], "task.created");
  EXPECT_EQ(lines.back()["data"]["title"], "followed task");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_GT(lines[i]["id"].get<int>(), lines[i - 1]["id"].get<int>());
  }
}

}  // namespace
