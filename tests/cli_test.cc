// Black-box tests of the tx command line (design.md §5): the real binary, run in a fresh
// directory per test, judged only by its exit code, stdout, stderr and what `tx --json` reads back.
//
// Every refusal is checked the same way: the documented exit code, nothing on stdout, exactly one
// line on stderr that starts with "tx: " and names the bad value, and — through a snapshot of
// `task list`, every `task show` and `events` — nothing written to the store.

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tx_process.h"

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
  if (r.err.find(needle) == std::string::npos) return fail() << "expected stderr to name '" << needle << "'";
  return ::testing::AssertionSuccess();
}

const std::regex kIsoTime(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)");
const std::regex kTaskId(R"(^task-[a-z0-9]{8}$)");
const std::regex kWorkerId(R"(^worker-[a-z0-9]{8}$)");

bool IsTime(const json& j) { return j.is_string() && std::regex_match(j.get<std::string>(), kIsoTime); }

class Cli : public ::testing::Test {
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
  std::string Token(const std::string& id, Args flags = {}) {
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
  std::string StoreState() {
    json state;
    state["tasks"] = Tasks();
    for (const auto& t : state["tasks"]) {
      state["shown"].push_back(Show(t["id"].get<std::string>()));
    }
    state["events"] = Events();
    return state.dump(1);
  }

  // Runs a command that must be refused with `code` and a message naming `needle`, and must
  // leave the store exactly as it was.
  ::testing::AssertionResult RefusedWithoutWriting(const Args& args, int code,
                                                    const std::string& needle,
                                                    const Env& env = {}) {
    std::string before = StoreState();
    RunResult r = Tx(args, env);
    ::testing::AssertionResult refused = IsRefusal(r, code, needle);
    if (!refused) return refused << "\n  [" << Join(args) << "]";
    std::string after = StoreState();
    if (before != after) {
      return ::testing::AssertionFailure() << Join(args) << " was refused but wrote to the store"
                                           << "\n--- before\n" << before << "\n--- after\n" << after;
    }
    return ::testing::AssertionSuccess();
  }

  fs::path Path(const std::string& rel) const { return dir_.path() / rel; }

  TempDir dir_;
};

// Most tests start from an initialised store.
class Store : public Cli {
 protected:
  void SetUp() override { Init(); }
};

// ================================ init ===========================================================

TEST_F(Cli, InitCreatesTheStoreAndATokenReadableOnlyByItsOwner) {
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

TEST_F(Cli, InitIsIdempotentAndKeepsTokenAndTasks) {
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

TEST_F(Cli, InitJsonSaysWhetherItCreatedTheStore) {
  json first = MustJson({"init"});
  EXPECT_EQ(first["created"], true);
  EXPECT_EQ(first["db"], ".tx/tx.db");
  EXPECT_EQ(first["token_file"], ".tx/token");
  EXPECT_TRUE(first["schema_version"].is_number_integer());
  EXPECT_EQ(MustJson({"init"})["created"], false);
}

TEST_F(Cli, CommandsBeforeInitExitOneAndPointToInitWithoutCreatingAStore) {
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

TEST_F(Cli, DbFlagAndTxDbEnvironmentChooseTheStore) {
  Must({"--db", "elsewhere.db", "init"});
  EXPECT_TRUE(fs::exists(Path("elsewhere.db")));
  EXPECT_FALSE(fs::exists(Path(".tx/tx.db")));

  std::string id = MustJson({"task", "add", "via env"}, {{"TX_DB", "elsewhere.db"}})["id"];
  json listed = MustJson({"--db", "elsewhere.db", "task", "list"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_TRUE(IsRefusal(Tx({"task", "list"}), 1, "tx init"));
}

// ================================ help and grammar ===============================================

TEST_F(Cli, HelpExitsZeroAndListsEveryCommand) {
  RunResult r = Tx({"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"init", "task", "claim", "events", "worker", "orchestrator", "--db",
                           "--json", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << "tx --help lacks " << word << "\n" << r.out;
  }
  RunResult task = Tx({"task", "--help"});
  ASSERT_EQ(task.exit_code, 0) << task.err;
  for (const char* word : {"add", "list", "show", "update", "done", "fail", "review", "cancel",
                           "retry"}) {
    EXPECT_NE(task.out.find(word), std::string::npos) << "tx task --help lacks " << word;
  }
}

TEST_F(Cli, TaskAddHelpExitsZeroAndListsEveryFlag) {
  RunResult r = Tx({"task", "add", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--description", "--instructions", "--deliverables", "--step",
                           "--priority", "--queue", "--requires", "--after", "--owner",
                           "--workdir", "--command", "--agent", "--timeout", "--max-attempts",
                           "--review", "--repo", "--base", "--metadata"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << "tx task add --help lacks " << flag;
  }
}

TEST_F(Cli, VersionFlagPrintsTheVersion) {
  RunResult r = Tx({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("tx "), std::string::npos) << r.out;
}

TEST_F(Store, UnknownCommandExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"frobnicate"}, 2, "frobnicate"));
}

TEST_F(Store, UnknownTaskSubcommandExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "frobnicate"}, 2, "frobnicate"));
}

TEST_F(Store, NoCommandExitsTwo) {
  RunResult r = Tx({});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(Store, UnknownFlagExitsTwoAndNamesIt) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--bogus"}, 2, "--bogus"));
}

TEST_F(Store, TaskAddWithoutTitleExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add"}, 2, "title"));
}

TEST_F(Store, RefusalWithJsonPrintsAnErrorDocumentAndStillOneLineOnStderr) {
  RunResult r = Tx({"task", "show", "task-aaaaaaaa", "--json"});
  EXPECT_EQ(r.exit_code, 3);
  json j = ParseOne({"task", "show", "task-aaaaaaaa", "--json"}, r);
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("task-aaaaaaaa"), std::string::npos);
  EXPECT_EQ(r.err, "tx: " + j["error"]["message"].get<std::string>() + "\n");
}

TEST_F(Store, JsonOutputOfEveryCommandIsOneDocument) {
  std::string id = Add("a");
  std::string token = Token(id);
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

TEST_F(Store, TaskAddWithEveryFlagShowsThemAllInJson) {
  std::string dep = Add("dependency");
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

TEST_F(Store, TaskAddDefaultsAreReadyPriorityZeroDefaultQueueThreeAttempts) {
  json t = Show(Add("plain"));
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["priority"], 0);
  EXPECT_EQ(t["queue"], "default");
  EXPECT_EQ(t["max_attempts"], 3);
  EXPECT_EQ(t["timeout"], "30m");
  EXPECT_EQ(t["review"], false);
  EXPECT_EQ(t["metadata"], json::object());
}

TEST_F(Store, TaskAddWithAgentRecordsTheProfile) {
  json t = Show(Add("agent job", {"--agent", "claude"}));
  EXPECT_EQ(t["agent"], "claude");
  EXPECT_EQ(t["command"], json::array());
}

TEST_F(Store, TaskAddAcceptsNegativePriority) {
  EXPECT_EQ(Show(Add("later", {"--priority", "-5"}))["priority"], -5);
  EXPECT_EQ(Show(Add("later too", {"--priority=-12"}))["priority"], -12);
}

TEST_F(Store, TaskAddPrintsTheIdForPeople) {
  RunResult r = Must({"task", "add", "for people"});
  std::string id = TaskIds().at(0);
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
}

TEST_F(Store, TaskAddWithNonIntegerPriorityExitsTwoAndWritesNothing) {
  Add("existing");
  for (const char* bad : {"abc", "1.5", "7x", "99999999999999999999"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--priority", bad}, 2,
                                      "'" + std::string(bad) + "'"));
  }
}

TEST_F(Store, TaskAddWithEmptyFlagValuesIsRefusedNotDefaulted) {
  // An empty value (e.g. from an unset shell variable) is bad input, not "flag not given".
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--priority", ""}, 2, "priority"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", ""}, 2, "duration"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", ""}, 2, "command"));
}

TEST_F(Store, TaskAddWithMalformedTimeoutExitsTwoAndWritesNothing) {
  for (const char* bad : {"5q", "abc", "-5s", "5", "m"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", bad}, 2,
                                      "'" + std::string(bad) + "'"));
  }
}

TEST_F(Store, TaskAddWithZeroOrOverCapTimeoutExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", "0s"}, 2, "0s"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--timeout", "3h"}, 2, "3h"));
}

TEST_F(Store, TaskAddAcceptsCompoundDurations) {
  EXPECT_EQ(Show(Add("x", {"--timeout", "1h30m"}))["timeout"], "1h30m");
  EXPECT_EQ(Show(Add("y", {"--timeout", "250ms"}))["timeout"], "250ms");
}

TEST_F(Store, TaskAddWithInvalidJsonMetadataExitsTwoAndWritesNothing) {
  for (const char* bad : {"{", R"({"a":})", "not json", "{'a': 1}"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--metadata", bad}, 2, "not valid JSON"))
        << bad;
  }
}

TEST_F(Store, TaskAddWithNonObjectMetadataExitsTwoAndWritesNothing) {
  for (const char* bad : {"[1, 2]", R"("text")", "42", "null", "true"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--metadata", bad}, 2,
                                      "not a JSON object"))
        << bad;
  }
}

TEST_F(Store, TaskAddWithUnknownAfterDependencyExitsThreeAndWritesNothing) {
  Add("existing");
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "add", "x", "--after", "task-deadbeef"}, 3, "task-deadbeef"));
}

TEST_F(Store, TaskAddWithMalformedAfterIdExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--after", "nope"}, 2, "nope"));
}

TEST_F(Store, TaskAddWithTheSameDependencyTwiceExitsTwo) {
  std::string dep = Add("dep");
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "add", "x", "--after", dep, "--after", dep}, 2, dep));
}

TEST_F(Store, TaskAddWithUnclosedQuoteInCommandExitsTwoAndWritesNothing) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", "echo 'hi"}, 2, "unclosed"));
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "add", "x", "--command", "echo \"hi"}, 2, "unclosed"));
}

TEST_F(Store, TaskAddWithCommandAndAgentExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--command", "true", "--agent", "claude"},
                                    2, "--agent"));
}

TEST_F(Store, TaskAddWithBaseButNoRepoExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--base", "main"}, 2, "--repo"));
}

TEST_F(Store, TaskAddWithOutOfRangeMaxAttemptsExitsTwo) {
  for (const char* bad : {"0", "101", "-1", "three"}) {
    EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--max-attempts", bad}, 2, bad));
  }
}

TEST_F(Store, TaskAddWithInvalidQueueOrCapabilityOrOwnerExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--queue", "bad queue"}, 2, "bad queue"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--requires", "a/b"}, 2, "a/b"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x", "--owner", "no way"}, 2, "no way"));
}

// ================================ task list / show / update =====================================

TEST_F(Store, TaskListWithUnknownStatusExitsTwoAndNamesIt) {
  Add("x");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list", "--status", "bogus"}, 2, "'bogus'"));
}

TEST_F(Store, TaskListAcceptsStatusAliases) {
  std::string ready = Add("ready one");
  std::string running = Add("running one");
  std::string done = Add("done one");
  Token(running);
  Must({"task", "done", done, "--token", Token(done)});

  EXPECT_EQ(TaskIds({"--status", "todo"}), std::vector<std::string>{ready});
  EXPECT_EQ(TaskIds({"--status", "ready"}), std::vector<std::string>{ready});
  EXPECT_EQ(TaskIds({"--status", "in-progress"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "active"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "claimed"}), std::vector<std::string>{running});
  EXPECT_EQ(TaskIds({"--status", "completed"}), std::vector<std::string>{done});
  EXPECT_EQ(TaskIds({"--status", "done"}), std::vector<std::string>{done});
  EXPECT_TRUE(TaskIds({"--status", "failed"}).empty());
}

TEST_F(Store, TaskListFiltersByQueue) {
  Add("a");
  std::string b = Add("b", {"--queue", "gpu"});
  EXPECT_EQ(TaskIds({"--queue", "gpu"}), std::vector<std::string>{b});
  EXPECT_EQ(TaskIds().size(), 2u);
}

TEST_F(Store, TaskListOnAnEmptyStoreIsAnEmptyArray) {
  EXPECT_EQ(Tasks(), json::array());
  EXPECT_EQ(Must({"task", "list"}).out, "no tasks\n");
}

TEST_F(Store, UnknownTaskIdExitsThreeForEveryCommand) {
  std::string id = Add("real");
  std::string token = Token(id);
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

TEST_F(Store, TaskUpdateThatWouldCreateACycleExitsTwoAndWritesNothing) {
  std::string b = Add("b");
  std::string a = Add("a", {"--after", b});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", b, "--after", a}, 2, "cycle"));
}

TEST_F(Store, TaskUpdateWithALongerCycleExitsTwo) {
  std::string c = Add("c");
  std::string b = Add("b", {"--after", c});
  std::string a = Add("a", {"--after", b});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", c, "--after", a}, 2, "cycle"));
}

TEST_F(Store, TaskUpdateAfterItselfIsACycle) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--after", a}, 2, "cycle"));
}

TEST_F(Store, TaskUpdateWithUnknownDependencyExitsThree) {
  std::string a = Add("a");
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "update", a, "--after", "task-deadbeef"}, 3, "task-deadbeef"));
}

TEST_F(Store, TaskUpdateWithNothingToChangeExitsTwo) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a}, 2, "nothing to update"));
}

TEST_F(Store, TaskUpdateWithBadPriorityOrMetadataExitsTwo) {
  std::string a = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--priority", "high"}, 2, "'high'"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "update", a, "--metadata", "[1]"}, 2, "JSON object"));
}

TEST_F(Store, TaskUpdateChangesFieldsAndRecordsAnEvent) {
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

TEST_F(Store, ClaimPrintsTheFencingToken) {
  std::string id = Add("a");
  RunResult r = Must({"claim", id});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(token\s+(\d+))"))) << r.out;
  EXPECT_GT(std::stoll(m[1]), 0);
  EXPECT_EQ(StatusOf(id), "running");
}

TEST_F(Store, ClaimJsonCarriesTokenWorkerLeaseAndTheRunningTask) {
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

TEST_F(Store, TokensIncreaseFromClaimToClaim) {
  std::int64_t first = ClaimJson(Add("a"))["token"];
  std::int64_t second = ClaimJson(Add("b"))["token"];
  EXPECT_GT(second, first);
}

TEST_F(Store, ClaimNextTakesHighestPriorityFirstThenFifo) {
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

TEST_F(Store, ClaimNextOnAnEmptyQueueExitsThree) {
  Must({"claim", "--next"});  // may fail: see the next line
}

TEST_F(Store, ClaimNextSkipsBlockedTasksAndOtherQueues) {
  std::string dep = Add("dep", {"--priority", "-10"});
  Add("blocked", {"--priority", "10", "--after", dep});
  Add("other queue", {"--priority", "10", "--queue", "elsewhere"});
  EXPECT_EQ(ClaimJson("", {"--next"})["task_id"], dep);
}

TEST_F(Store, ClaimOfARunningTaskExitsFourAndChangesNothing) {
  std::string id = Add("a");
  Token(id);
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, "already claimed"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--worker", "other"}, 4, id));
}

TEST_F(Store, ClaimOfABlockedTaskExitsFour) {
  std::string dep = Add("dep");
  std::string id = Add("a", {"--after", dep});
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, "blocked"));
}

TEST_F(Store, ClaimOfADoneTaskExitsFour) {
  std::string id = Add("a");
  Must({"task", "done", id, "--token", Token(id)});
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 4, id));
}

TEST_F(Store, ClaimWithMalformedLeaseExitsTwo) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--lease", "abc"}, 2, "'abc'"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", "--next", "--lease", "5q"}, 2, "'5q'"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--lease", "0s"}, 2, "0s"));
}

TEST_F(Store, ClaimNeedsExactlyOneOfTaskOrNext) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"claim"}, 2, "--next"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id, "--next"}, 2, "--next"));
}

TEST_F(Store, TaskDoneWithTheTokenCompletesTheTaskAndItsAttempt) {
  std::string id = Add("a");
  std::string token = Token(id);
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
  EXPECT_EQ(EventTypes(id), (std::vector<std::string>{"task.created", "task.claimed", "task.done"}));
}

TEST_F(Store, TaskDoneTwiceIsRefusedTheSecondTime) {
  std::string id = Add("a");
  std::string token = Token(id);
  Must({"task", "done", id, "--token", token});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
}

TEST_F(Store, TaskDoneWithAStaleTokenExitsFourAndChangesNothing) {
  std::string id = Add("a");
  std::string old_token = Token(id);
  Must({"claim:release", id, "--token", old_token});
  std::string new_token = Token(id);
  ASSERT_NE(old_token, new_token);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", old_token}, 4, "stale"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "fail", id, "--token", old_token}, 4, "stale"));
  EXPECT_EQ(StatusOf(id), "running");
  Must({"task", "done", id, "--token", new_token});
}

TEST_F(Store, TaskDoneWithAnotherTasksTokenExitsFour) {
  std::string a = Add("a");
  std::string b = Add("b");
  std::string token_a = Token(a);
  Token(b);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", b, "--token", token_a}, 4, a));
}

TEST_F(Store, TaskDoneWithAnUnknownTokenExitsFour) {
  std::string id = Add("a");
  Token(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", "999"}, 4, "999"));
}

TEST_F(Store, TaskDoneWithANonIntegerTokenExitsTwo) {
  std::string id = Add("a");
  Token(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", "abc"}, 2, "'abc'"));
}

TEST_F(Store, TaskDoneWithoutTokenOrForceExitsTwo) {
  std::string id = Add("a");
  Token(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id}, 2, "TX_CLAIM_TOKEN"));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "fail", id}, 2, "--token"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id}, 2, "TX_CLAIM_TOKEN"));
  EXPECT_TRUE(RefusedWithoutWriting({"claim:release", id}, 2, "TX_CLAIM_TOKEN"));
}

TEST_F(Store, ForceAndTokenTogetherExitTwo) {
  std::string id = Add("a");
  std::string token = Token(id);
  EXPECT_TRUE(
      RefusedWithoutWriting({"task", "done", id, "--force", "--token", token}, 2, "--force"));
}

TEST_F(Store, ForcedDoneRevokesTheClaimSoTheHolderCannotRenew) {
  std::string id = Add("a");
  std::string token = Token(id);
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

TEST_F(Store, ForcedFailOfAReadyTaskFailsItWithoutAClaim) {
  std::string id = Add("a");
  json t = MustJson({"task", "fail", id, "--force", "--error", "not needed"});
  EXPECT_EQ(t["status"], "failed");
  EXPECT_EQ(t["error"], "not needed");
}

TEST_F(Store, ClaimTokenFromTheEnvironmentIsUsed) {
  std::string id = Add("a");
  std::string token = Token(id);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id}, 4, "12345", {{"TX_CLAIM_TOKEN", "12345"}}));
  json renewed = MustJson({"claim:renew", id}, {{"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(renewed["renewed_count"], 1);
  json t = MustJson({"task", "done", id}, {{"TX_CLAIM_TOKEN", token}});
  EXPECT_EQ(t["status"], "done");
}

TEST_F(Store, TokenFlagTakesPrecedenceOverTheEnvironment) {
  std::string id = Add("a");
  std::string token = Token(id);
  json t = MustJson({"task", "done", id, "--token", token}, {{"TX_CLAIM_TOKEN", "999"}});
  EXPECT_EQ(t["status"], "done");
}

TEST_F(Store, ReleasePutsTheTaskBackToReadyWithoutCountingTheAttempt) {
  std::string id = Add("a");
  std::string token = Token(id);
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

TEST_F(Store, RenewIncrementsRenewedCountAndExtendsTheLease) {
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

TEST_F(Store, FailWithAttemptsLeftRequeuesWithBackoffThenFailsWhenExhausted) {
  std::string id = Add("flaky", {"--max-attempts", "2"});
  json after_first = MustJson({"task", "fail", id, "--token", Token(id), "--error", "boom"});
  EXPECT_EQ(after_first["status"], "ready");
  EXPECT_EQ(after_first["error"], "boom");
  EXPECT_EQ(after_first["attempt"], 1);
  EXPECT_GT(after_first["run_after"].get<std::string>(),
            after_first["attempts"][0]["ended_at"].get<std::string>())
      << "a retried task waits for its backoff";
  EXPECT_EQ(after_first["attempts"][0]["end_reason"], "failed");

  json after_second = MustJson({"task", "fail", id, "--token", Token(id), "--error", "boom again"});
  EXPECT_EQ(after_second["status"], "failed");
  EXPECT_EQ(after_second["attempt"], 2);
  EXPECT_EQ(after_second["attempts"].size(), 2u);
  EXPECT_EQ(EventTypes(id),
            (std::vector<std::string>{"task.created", "task.claimed", "task.retry_scheduled",
                                      "task.claimed", "task.failed"}));
}

TEST_F(Store, RetryOfAFailedTaskMakesItReadyAgain) {
  std::string id = Add("a", {"--max-attempts", "1"});
  Must({"task", "fail", id, "--token", Token(id)});
  ASSERT_EQ(StatusOf(id), "failed");
  json t = MustJson({"task", "retry", id, "--note", "try again"});
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(EventTypes(id).back(), "task.retried");
  EXPECT_EQ(ClaimJson("", {"--next"})["task_id"], id);
}

TEST_F(Store, RetryOfATaskThatHasNotFailedExitsFour) {
  std::string id = Add("a");
  EXPECT_TRUE(RefusedWithoutWriting({"task", "retry", id}, 4, id));
}

TEST_F(Store, CancelOfARunningTaskRevokesItsClaim) {
  std::string id = Add("a");
  std::string token = Token(id);
  json t = MustJson({"task", "cancel", id, "--note", "not wanted"});
  EXPECT_EQ(t["status"], "cancelled");
  EXPECT_EQ(t["attempts"][0]["end_reason"], "cancelled");
  EXPECT_TRUE(RefusedWithoutWriting({"claim:renew", id, "--token", token}, 4, token));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
  EXPECT_EQ(EventTypes(id).back(), "task.cancelled");
}

TEST_F(Store, CancelOfAFinishedTaskExitsFour) {
  std::string id = Add("a");
  Must({"task", "done", id, "--token", Token(id)});
  EXPECT_TRUE(RefusedWithoutWriting({"task", "cancel", id}, 4, id));
}

TEST_F(Store, CancelledTaskCanBeRetried) {
  std::string id = Add("a");
  Must({"task", "cancel", id});
  EXPECT_EQ(MustJson({"task", "retry", id})["status"], "ready");
}

TEST_F(Store, ReviewTaskGoesToReviewInsteadOfDone) {
  std::string id = Add("a", {"--review"});
  EXPECT_EQ(MustJson({"task", "done", id, "--token", Token(id)})["status"], "review");
  std::string plain = Add("b");
  EXPECT_EQ(MustJson({"task", "review", plain, "--token", Token(plain)})["status"], "review");
}

// ================================ dependencies ==================================================

TEST_F(Store, BlockedTaskBecomesReadyWhenItsDependencyIsDone) {
  std::string a = Add("a");
  std::string b = Add("b", {"--after", a});
  EXPECT_EQ(StatusOf(b), "blocked");
  Must({"task", "done", a, "--token", Token(a)});
  EXPECT_EQ(StatusOf(b), "ready");

  bool unblocked = false;
  for (const auto& e : Events()) {
    if (e["type"] == "task.unblocked" && e["task_id"] == b) unblocked = e["data"]["after"] == a;
  }
  EXPECT_TRUE(unblocked) << "no task.unblocked event for " << b;
}

TEST_F(Store, TaskWithTwoDependenciesWaitsForBoth) {
  std::string a = Add("a");
  std::string b = Add("b");
  std::string c = Add("c", {"--after", a, "--after", b});
  Must({"task", "done", a, "--token", Token(a)});
  EXPECT_EQ(StatusOf(c), "blocked");
  Must({"task", "done", b, "--token", Token(b)});
  EXPECT_EQ(StatusOf(c), "ready");
}

TEST_F(Store, TaskAddedAfterADoneTaskIsReadyAtOnce) {
  std::string a = Add("a");
  Must({"task", "done", a, "--token", Token(a)});
  EXPECT_EQ(StatusOf(Add("b", {"--after", a})), "ready");
}

// ================================ events ========================================================

TEST_F(Store, EveryStateChangeHasAnEventAndEventIdsIncrease) {
  std::string id = Add("a");
  std::string t1 = Token(id);
  Must({"claim:renew", id, "--token", t1});
  Must({"claim:release", id, "--token", t1});
  Must({"task", "fail", id, "--token", Token(id)});
  Must({"task", "done", id, "--token", Token(id)});
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

TEST_F(Store, ClaimEventCarriesTheWorkerAndToken) {
  std::string id = Add("a");
  json c = ClaimJson(id);
  for (const auto& e : Events()) {
    if (e["type"] != "task.claimed") continue;
    EXPECT_EQ(e["task_id"], id);
    EXPECT_EQ(e["worker_id"], c["worker_id"]);
    EXPECT_EQ(e["data"]["token"], c["token"]);
  }
}

TEST_F(Store, EventsSinceReturnsOnlyLaterEvents) {
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

TEST_F(Store, WorkerListShowsTheCliWorkerAfterAClaim) {
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

TEST_F(Store, ClaimsByTheSameWorkerNameReuseOneWorker) {
  std::string a = Add("a");
  std::string b = Add("b");
  json ca = ClaimJson(a, {"--worker", "alice"});
  json cb = ClaimJson(b, {"--worker", "alice"});
  EXPECT_EQ(ca["worker_id"], cb["worker_id"]);
  json workers = MustJson({"worker", "list"});
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["name"], "alice");
}

TEST_F(Store, WorkerStatusOfAnUnknownWorkerExitsThree) {
  EXPECT_TRUE(RefusedWithoutWriting({"worker", "status", "worker-deadbeef"}, 3, "worker-deadbeef"));
}

TEST_F(Store, WorkerListWithAnUnknownStatusExitsTwo) {
  EXPECT_TRUE(RefusedWithoutWriting({"worker", "list", "--status", "sleepy"}, 2, "sleepy"));
}

TEST_F(Store, OrchestratorReconcilePrintsTheFourCounts) {
  json r = MustJson({"orchestrator", "reconcile"});
  for (const char* key : {"dead_workers", "expired_leases", "orphaned_tasks",
                          "inconsistencies_fixed"}) {
    ASSERT_TRUE(r.contains(key)) << key;
    EXPECT_EQ(r[key], 0) << key;
  }
  RunResult plain = Must({"orchestrator", "reconcile"});
  for (const char* words : {"dead workers", "expired leases", "orphaned tasks",
                            "inconsistencies fixed"}) {
    EXPECT_NE(plain.out.find(words), std::string::npos) << plain.out;
  }
}

TEST_F(Store, ReconcileRecoversATaskWhoseShortLeaseRanOut) {
  std::string id = Add("a");
  std::string token = Token(id, {"--lease", "200ms", "--worker", "shortlived"});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  json r = MustJson({"orchestrator", "reconcile"});
  EXPECT_EQ(r["dead_workers"].get<int>() + r["expired_leases"].get<int>(), 1) << r.dump();
  json t = Show(id);
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 1) << "a lost lease counts as an attempt";
  EXPECT_TRUE(RefusedWithoutWriting({"task", "done", id, "--token", token}, 4, token));
}

// ================================ TX_ALLOWED_COMMANDS ===========================================

TEST_F(Store, AllowedCommandsRefusesEveryOtherCommandAndNamesTheVariable) {
  std::string id = Add("a");
  const Env agent = {{"TX_ALLOWED_COMMANDS", "task.show,task.done"}};
  EXPECT_TRUE(RefusedWithoutWriting({"task", "add", "x"}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_TRUE(RefusedWithoutWriting({"claim", id}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_TRUE(RefusedWithoutWriting({"task", "cancel", id}, 2, "TX_ALLOWED_COMMANDS", agent));
  RunResult shown = Tx({"task", "show", id}, agent);
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
}

TEST_F(Store, AllowedCommandsAcceptsWildcards) {
  std::string id = Add("a");
  std::string token = Token(id);
  const Env agent = {{"TX_ALLOWED_COMMANDS", "task.show, claim.*"}, {"TX_CLAIM_TOKEN", token}};
  EXPECT_EQ(Tx({"claim:renew", id}, agent).exit_code, 0);
  EXPECT_TRUE(RefusedWithoutWriting({"task", "list"}, 2, "TX_ALLOWED_COMMANDS", agent));
  EXPECT_EQ(Tx({"claim:release", id}, agent).exit_code, 0);
}

}  // namespace
