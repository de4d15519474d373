// Agents that tx understands (issue 21), end to end: real `tx worker start` processes running the
// stand-in agents of tests/agents/standin/ (claude, codex, aider: the output formats of the CLIs'
// versions docs/agents.md names) under the built-in profiles, on a real SQLite store, with the
// real clock. What the stand-ins were asked to do is in each task's instructions ("standin:").

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "http_client.h"
#include "process_probes.h"
#include "run_process.h"
#include "worker/config.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using tx::testing::BackgroundProcess;
using tx::testing::Env;
using tx::testing::RunResult;
using tx::testing::RunTx;
using tx::testing::TempDir;
using namespace tx::testing;
using Args = std::vector<std::string>;

const std::string kStandins = std::string(TX_SOURCE_DIR) + "/tests/agents/standin";

class AgentsTest : public ::testing::Test {
 public:
  RunResult Tx(const Args& args) { return RunTx(args, AgentEnv(), dir_.str()); }

 protected:
  void SetUp() override {
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    WriteConfig("");
  }

  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  // The stand-ins first on PATH, their calls recorded, their sessions kept in this directory.
  Env AgentEnv() const {
    const char* path = std::getenv("PATH");
    return {{"PATH", kStandins + ":" + (path != nullptr ? path : "/usr/bin:/bin")},
            {"STANDIN_CALLS", Path("calls.jsonl")},
            {"CLAUDE_CONFIG_DIR", Path("claude-home")},
            {"CODEX_HOME", Path("codex-home")}};
  }

  // config.toml: `toml`, after a [worker] pass_env that lets STANDIN_CALLS through to the
  // stand-ins besides the default list (an agent gets no other variable of its worker's).
  void WriteConfig(const std::string& toml) {
    std::string pass_env = "[worker]\npass_env = [";
    for (std::string_view name : tx::worker::kDefaultPassEnv) {
      pass_env.append("\"").append(name).append("\", ");
    }
    std::ofstream(Path(".tx/config.toml")) << pass_env << "\"STANDIN_CALLS\"]\n" << toml;
  }

  // Adds a task for `agent` whose instructions tell the stand-in what to do; returns its id.
  std::string AddTask(const std::string& agent, const std::string& directives, Args extra = {}) {
    Args args = {
        "--json", "task", "add", "t", "--agent", agent, "--instructions", "standin: " + directives};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  }

  json Show(const std::string& id) {
    RunResult r = Tx({"--json", "task", "show", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  std::string Status(const std::string& id) { return Show(id)["status"]; }
  bool WaitForStatus(const std::string& id, const std::string& status,
                     std::chrono::milliseconds limit = 60s) {
    return WaitFor([&] { return Status(id) == status; }, limit);
  }
  // An agent that reports its own outcome is done before its worker has written the attempt's
  // last row of the ledger (it does as soon as the agent exits): wait for that too.
  bool WaitForUsage(const std::string& id, std::chrono::milliseconds limit = 30s) {
    return WaitFor(
        [&] {
          json t = Show(id);
          return !t["attempts"].empty() && t["attempts"].back()["usage"].is_object();
        },
        limit);
  }

  std::unique_ptr<BackgroundProcess> StartWorker(Args extra = {}) {
    Args args = {"worker",       "start", "--heartbeat-interval", "300ms",
                 "--kill-grace", "500ms", "--poll-interval",      "1s"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string log = Path("worker-" + std::to_string(++workers_) + ".log");
    return std::make_unique<BackgroundProcess>(TX_BINARY, args, AgentEnv(), dir_.str(), log);
  }

  // Every run of a stand-in so far: {argv, cwd, at, ...}. A line the stand-in is still writing
  // (the last, read half-written) is left for the next read.
  std::vector<json> Calls() {
    std::vector<json> out;
    std::ifstream in(Path("calls.jsonl"));
    for (std::string line; std::getline(in, line);) {
      json call = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!call.is_discarded()) out.push_back(std::move(call));
    }
    return out;
  }
  static bool Has(const json& argv, const std::string& arg) {
    return std::find(argv.begin(), argv.end(), arg) != argv.end();
  }
  static std::string After(const json& argv, const std::string& flag) {
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == flag) return argv[i + 1];
    }
    return "";
  }

  std::vector<json> Events(const std::string& type) {
    RunResult r = Tx({"--json", "events", "--limit", "100000"});
    std::vector<json> out;
    std::istringstream in(r.out);
    json all = json::parse(r.out, nullptr, false);
    if (all.is_array()) {
      for (auto& e : all) {
        if (e["type"] == type) out.push_back(e);
      }
    }
    return out;
  }

  TempDir dir_;
  int workers_ = 0;
};

TEST_F(AgentsTest, TheLedgerHoldsTheAgentsOwnCostAndTheLogReadsAsText) {
  std::string id = AddTask("claude", "report=done cost=0.37");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  json t = Show(id);
  ASSERT_TRUE(t["usage"].is_object()) << t.dump();
  EXPECT_DOUBLE_EQ(t["usage"]["cost_usd"].get<double>(), 0.37);
  EXPECT_FALSE(t["usage"]["cost_estimated"].get<bool>());
  const json& u = t["attempts"][0]["usage"];
  EXPECT_EQ(u["agent"], "claude");
  EXPECT_EQ(u["model"], "claude-sonnet-4-6");
  EXPECT_TRUE(u["session_id"].is_string());
  EXPECT_EQ(u["turns"], 2);
  EXPECT_EQ(u["tokens"]["input"], 2000);
  // The readable log: the agent's words, its tool call on one line, its result; no JSON.
  RunResult log = Tx({"task", "log", id});
  EXPECT_NE(log.out.find("→ Bash: tx task done " + id + " --result standin"), std::string::npos)
      << log.out;
  EXPECT_NE(log.out.find("✓ Done. · 2 turns · $0.3700"), std::string::npos) << log.out;
  EXPECT_EQ(log.out.find("{\"type\""), std::string::npos) << log.out;
  RunResult raw = Tx({"task", "log", id, "--raw"});
  EXPECT_NE(raw.out.find("\"type\":\"result\""), std::string::npos) << raw.out;
  // And the ledger summed.
  RunResult usage = Tx({"--json", "usage", "--by", "agent"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  json total = json::parse(usage.out)["total"];
  EXPECT_DOUBLE_EQ(total["cost_usd"].get<double>(), 0.37);
}

TEST_F(AgentsTest, AnExitZeroWithPermissionDenialsIsNotSilentlyDone) {
  std::string id = AddTask("claude", "bash='python3 -c 1'", {"--max-attempts", "1"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_NE(t["error"].get<std::string>().find("permission denied: Bash"), std::string::npos)
      << t["error"];
  const json& denials = t["attempts"][0]["usage"]["permission_denials"];
  ASSERT_EQ(denials.size(), 1u) << t.dump();
  EXPECT_EQ(denials[0]["tool"], "Bash");
  EXPECT_EQ(denials[0]["input"], "python3 -c 1");
  RunResult shown = Tx({"task", "show", id});
  EXPECT_NE(shown.out.find("permission denials"), std::string::npos) << shown.out;
}

TEST_F(AgentsTest, TheBuiltInClaudeProfileLetsItReportWithTx) {
  // `tx task done` through Bash is allowed by the profile's own --allowedTools.
  std::string id = AddTask("claude", "report=done");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(After(calls[0]["argv"], "--permission-mode"), "acceptEdits");
  EXPECT_EQ(After(calls[0]["argv"], "--allowedTools"), "Bash(tx:*)");
  EXPECT_EQ(After(calls[0]["argv"], "--output-format"), "stream-json");
  EXPECT_TRUE(Has(calls[0]["argv"], "--verbose"));
}

TEST_F(AgentsTest, ABudgetIsReachedAcrossAttemptsAndTheTaskFailsWithoutRetrying) {
  std::string id =
      AddTask("claude", "cost=0.6 exit=1", {"--budget-usd", "1", "--max-attempts", "5"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"].size(), 2u) << t.dump();  // 0.6, then 1.2: not five attempts
  EXPECT_NE(t["error"].get<std::string>().find("budget"), std::string::npos) << t["error"];
  EXPECT_NEAR(t["usage"]["cost_usd"].get<double>(), 1.2, 1e-9);
  bool budget = false;
  for (const auto& e : Events("task.failed")) budget = budget || e["data"]["reason"] == "budget";
  EXPECT_TRUE(budget);
}

TEST_F(AgentsTest, ABudgetIsReachedWithinOneAttemptAndTheAgentIsStopped) {
  // Each message is 10,000 input and 100 output tokens: about $0.03 at the built-in price of
  // claude-sonnet-4; the budget is passed at the second of forty.
  std::string id =
      AddTask("claude", "messages=40 tokens=10000 sleep=0.25", {"--budget-usd", "0.05"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed", 30s)) << worker->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "over_budget");
  EXPECT_NE(t["error"].get<std::string>().find("budget"), std::string::npos);
  double cost = t["usage"]["cost_usd"].get<double>();
  EXPECT_GE(cost, 0.05);
  EXPECT_LT(cost, 0.2) << "stopped long after the budget";
  EXPECT_TRUE(t["usage"]["cost_estimated"].get<bool>());
}

TEST_F(AgentsTest, AUsageLimitPausesTheProfileFleetWideUntilItsReset) {
  // The first run meets a limit resetting 4 s later; every other task is ready meanwhile.
  std::string limited = AddTask("claude", "limit=+4 limit_once report=done", {"--priority", "9"});
  std::vector<std::string> others;
  for (int i = 0; i < 4; ++i) others.push_back(AddTask("claude", "report=done sleep=0.2"));
  auto w1 = StartWorker();
  auto w2 = StartWorker();
  for (const auto& id : others) ASSERT_TRUE(WaitForStatus(id, "done", 60s)) << w1->Output();
  ASSERT_TRUE(WaitForStatus(limited, "done", 60s)) << w1->Output();
  std::vector<json> limits = Events("agent.limited");
  ASSERT_EQ(limits.size(), 1u);
  std::string at = limits[0]["at"], until = limits[0]["data"]["until"];
  // No stand-in started between the limit and its reset, on either worker.
  auto seconds = [](const std::string& iso) {
    std::tm tm{};
    strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    double frac = std::stod(iso.substr(19, 4));
    return static_cast<double>(timegm(&tm)) + frac;
  };
  double from = seconds(at), to = seconds(until);
  EXPECT_GT(to - from, 2.0);
  // (A worker that claimed its task as the limit was being recorded may start an agent a moment
  // after it: the limit is a second old before nothing may start.)
  int started_after = 0;
  for (const auto& c : Calls()) {
    double t = c["at"].get<double>();
    EXPECT_FALSE(t > from + 1.0 && t < to - 0.05)
        << "an agent started " << t - from << " s into the limit of " << to - from << " s";
    if (t >= to - 0.05) ++started_after;
  }
  EXPECT_GT(started_after, 0);
  // The limited attempt was not counted; nothing failed.
  json t = Show(limited);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "rate_limited");
  EXPECT_EQ(t["attempt"], 1);
  EXPECT_EQ(Events("agent.resumed").size(), 1u);
  EXPECT_TRUE(Events("task.failed").empty());
}

TEST_F(AgentsTest, AnOperatorLiftsALimitAndItsTaskRunsWithoutWaitingForTheReset) {
  std::string limited = AddTask("claude", "limit=+3600 limit_once report=done");
  auto w = StartWorker();
  ASSERT_TRUE(WaitFor([&] { return Events("agent.limited").size() == 1; }, 30s)) << w->Output();
  EXPECT_EQ(Tx({"agent", "lift", "codex"}).exit_code, 3);  // not limited: not found
  RunResult lifted = Tx({"agent", "lift", "claude"});
  ASSERT_EQ(lifted.exit_code, 0) << lifted.err;
  EXPECT_NE(lifted.out.find("lifted the limit of claude"), std::string::npos) << lifted.out;
  ASSERT_TRUE(WaitForStatus(limited, "done", 30s)) << w->Output();  // not in an hour
  EXPECT_EQ(Show(limited)["attempt"], 1);
  EXPECT_EQ(Events("agent.resumed").size(), 1u);
}

TEST_F(AgentsTest, AnotherAccountTakesTheTaskWhileOneIsLimited) {
  WriteConfig("[[agents.claude.accounts]]\nname = \"a\"\nenv = { CLAUDE_CONFIG_DIR = \"" +
              Path("account-a") + "\" }\n[[agents.claude.accounts]]\nname = \"b\"\nenv = { " +
              "CLAUDE_CONFIG_DIR = \"" + Path("account-b") + "\" }\n");
  std::string id = AddTask("claude", "limit=+3600 limit_in=account-a report=done");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done", 30s)) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["claude_config_dir"], Path("account-a"));
  EXPECT_EQ(calls[1]["claude_config_dir"], Path("account-b"));
  json t = Show(id);
  EXPECT_EQ(t["attempts"][1]["usage"]["account"], "b");
}

TEST_F(AgentsTest, ARetryAndRequestedChangesResumeTheSessionUnlessFresh) {
  std::string id = AddTask("claude", "report=review", {"--review"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "review")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  std::string session = Show(id)["attempts"][0]["usage"]["session_id"];
  ASSERT_EQ(Tx({"task", "changes", id, "--note", "rename it to Widget"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Calls().size() == 2; }, 60s)) << worker->Output();
  ASSERT_TRUE(WaitForStatus(id, "review")) << worker->Output();
  json second = Calls()[1]["argv"];
  EXPECT_EQ(After(second, "--resume"), session);
  EXPECT_NE(After(second, "-p").find("rename it to Widget"), std::string::npos) << second;
  ASSERT_EQ(Tx({"task", "changes", id, "--note", "start over", "--fresh"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Calls().size() == 3; }, 60s)) << worker->Output();
  EXPECT_FALSE(Has(Calls()[2]["argv"], "--resume"));

  // A retry of a failed task resumes with the failure.
  std::string failed = AddTask("claude", "exit=3", {"--max-attempts", "1"});
  ASSERT_TRUE(WaitForStatus(failed, "failed")) << worker->Output();
  std::string first = Show(failed)["attempts"][0]["usage"]["session_id"];
  std::size_t before = Calls().size();
  ASSERT_EQ(Tx({"task", "retry", failed}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Calls().size() == before + 1; }, 60s)) << worker->Output();
  json argv = Calls().back()["argv"];
  EXPECT_EQ(After(argv, "--resume"), first);
  EXPECT_NE(After(argv, "-p").find("exited 3"), std::string::npos) << argv;
}

// An agent that reports its outcome goes on writing its session for a moment: it is left to
// finish. One that reported a failure is stopped within half a second instead, before the retry
// its report scheduled can start beside it (the retry resumes its session).
TEST_F(AgentsTest, AnAgentThatReportedItselfIsLeftToFinishUnlessARetryIsDue) {
  std::string done = AddTask("claude", "report=done after=1.5");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(done, "done")) << worker->Output();
  ASSERT_TRUE(WaitFor([&] {
    return Tx({"task", "log", done, "--raw"}).out.find("\"type\":\"result\"") != std::string::npos;
  })) << worker->Output();
  EXPECT_EQ(worker->Output().find("agent killed"), std::string::npos) << worker->Output();

  std::string failed = AddTask("claude", "report=fail after=30", {"--max-attempts", "2"});
  ASSERT_TRUE(WaitForStatus(failed, "failed", 60s)) << worker->Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_TRUE(Has(calls[2]["argv"], "--resume"));
  // The first attempt's agent was stopped, not left its 30 s, before the second started.
  json t = Show(failed);
  ASSERT_EQ(t["attempts"].size(), 2u);
  EXPECT_LT(calls[2]["at"].get<double>() - calls[1]["at"].get<double>(), 15.0);
}

TEST_F(AgentsTest, ASessionThatCannotBeResumedStartsAfreshInTheSameAttempt) {
  std::string id = AddTask("claude", "exit=3", {"--max-attempts", "1"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  fs::remove_all(Path("claude-home/standin-sessions"));  // its session is gone
  ASSERT_EQ(Tx({"task", "retry", id, "--note", "standin: report=done"}).exit_code, 0);
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_TRUE(Has(calls[1]["argv"], "--resume"));
  EXPECT_FALSE(Has(calls[2]["argv"], "--resume"));
  json t = Show(id);
  EXPECT_EQ(t["attempts"].size(), 2u);  // the fallback is the same attempt
  RunResult log = Tx({"task", "log", id});
  EXPECT_NE(log.out.find("could not resume session"), std::string::npos) << log.out;
}

TEST_F(AgentsTest, AMissingProgramBurnsNoAttemptWhileOtherTasksKeepRunning) {
  std::string broken = Path("broken-agent");
  std::ofstream(broken) << "#!/nonexistent/interpreter\n";
  fs::permissions(broken, fs::perms::owner_all);
  WriteConfig(
      "[agents.ghost]\nargv = [\"no-such-agent-xyz\", \"{prompt}\"]\n"
      "[agents.broken]\nargv = [\"" +
      broken + "\", \"{prompt}\"]\n");
  std::string ghost = AddTask("ghost", "");
  std::string broken_task = AddTask("broken", "");
  std::string fine = AddTask("claude", "report=done");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(fine, "done")) << worker->Output();
  // Said at start; the task of a profile it cannot run is left for another worker, unclaimed.
  ASSERT_TRUE(WaitFor([&] { return worker->Output().find("ghost") != std::string::npos; }, 10s));
  json g = Show(ghost);
  EXPECT_EQ(g["status"], "ready");
  EXPECT_TRUE(g["attempts"].empty());
  // A program that is there but cannot be executed fails its spawn: not counted, and said.
  ASSERT_TRUE(WaitFor([&] { return !Show(broken_task)["attempts"].empty(); }, 30s));
  ASSERT_TRUE(WaitFor([&] { return !Show(broken_task)["attempts"][0]["end_reason"].is_null(); }));
  json b = Show(broken_task);
  EXPECT_EQ(b["attempts"][0]["end_reason"], "spawn_failed");
  EXPECT_EQ(b["attempt"], 0);
  EXPECT_EQ(b["status"], "ready");
  RunResult log = Tx({"task", "log", broken_task});
  EXPECT_NE(log.out.find("could not be started"), std::string::npos) << log.out;
  // It is not claimed again by this worker, which says why.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(Show(broken_task)["attempts"].size(), 1u);
  json workers = json::parse(Tx({"--json", "worker", "list"}).out);
  const json& missing = workers[0]["metadata"]["unavailable_agents"];
  EXPECT_TRUE(missing.contains("ghost")) << missing;
  EXPECT_TRUE(missing.contains("broken")) << missing;
  EXPECT_EQ(Events("worker.agent_unavailable").size(), 1u);
}

TEST_F(AgentsTest, AnAgentThatIsNotLoggedInIsUnavailableNotAFailure) {
  std::string id = AddTask("claude", "auth", {"--max-attempts", "1"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitFor([&] {
    return !Show(id)["attempts"].empty() && !Show(id)["attempts"][0]["end_reason"].is_null();
  })) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "agent_unavailable");
  EXPECT_EQ(t["status"], "ready");
  EXPECT_EQ(t["attempt"], 0);
  json w = json::parse(Tx({"--json", "worker", "list"}).out)[0];
  EXPECT_NE(w["metadata"]["unavailable_agents"]["claude"].get<std::string>().find("Not logged in"),
            std::string::npos)
      << w.dump();
}

TEST_F(AgentsTest, CodexAndAiderRunsFillTheLedgerAndCodexResumesItsThread) {
  std::string codex = AddTask("codex", "report=done tokens=2000");
  std::string aider = AddTask("aider", "report=done messages=2");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(codex, "done")) << worker->Output();
  ASSERT_TRUE(WaitForStatus(aider, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(codex) && WaitForUsage(aider)) << worker->Output();
  json c = Show(codex)["attempts"][0]["usage"];
  EXPECT_EQ(c["tokens"]["input"], 1800);  // cached input apart
  EXPECT_EQ(c["tokens"]["cache_read"], 200);
  EXPECT_TRUE(c["cost_estimated"].get<bool>());
  EXPECT_GT(c["cost_usd"].get<double>(), 0);
  json a = Show(aider)["attempts"][0]["usage"];
  EXPECT_NEAR(a["cost_usd"].get<double>(), 0.02, 1e-9);  // its own session total
  EXPECT_EQ(a["turns"], 2);
  RunResult log = Tx({"task", "log", codex});
  EXPECT_NE(log.out.find("→ shell: /bin/bash -c"), std::string::npos) << log.out;

  // A failed codex attempt is retried on the same thread; its tokens are the run's own.
  std::string again = AddTask("codex", "exit=1", {"--max-attempts", "1"});
  ASSERT_TRUE(WaitForStatus(again, "failed")) << worker->Output();
  std::string thread = Show(again)["attempts"][0]["usage"]["session_id"];
  ASSERT_EQ(Tx({"task", "retry", again}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] {
    return Show(again)["attempts"].size() == 2 && !Show(again)["attempts"][1]["usage"].is_null();
  })) << worker->Output();
  json argv = Calls().back()["argv"];
  auto resume = std::find(argv.begin(), argv.end(), "resume");
  ASSERT_NE(resume, argv.end()) << argv;
  EXPECT_EQ(*(resume + 1), thread);
  ASSERT_TRUE(WaitFor([&] { return Show(again)["status"] == "failed"; }));
  EXPECT_EQ(Show(again)["attempts"][1]["usage"]["tokens"]["input"], 1800);
}

// The ledger and the limits over HTTP: the task's usage, GET /api/usage (as `tx usage --json`),
// the orchestrator's document, the metrics, and the raw log.
TEST_F(AgentsTest, TheLedgerAndTheLimitsAreServedOverHttp) {
  WriteConfig("[budgets]\ndaily_usd = 100\n");
  std::string id = AddTask("claude", "report=done cost=0.5");
  std::string limited = AddTask("codex", "limit=later");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  ASSERT_TRUE(WaitFor([&] { return !Events("agent.limited").empty(); })) << worker->Output();
  BackgroundProcess server(TX_BINARY, {"serve", "--http", "127.0.0.1:0"}, AgentEnv(), dir_.str(),
                           Path("serve.out"));
  int port = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::smatch m;
    std::string out = server.Output();
    if (!std::regex_search(out, m, std::regex(R"(listening on http://\S+:(\d+))"))) return false;
    port = std::stoi(m[1]);
    return true;
  }));
  ApiClient api(port);
  HttpReply task = api.Get("/api/tasks/" + id);
  ASSERT_EQ(task.status, 200);
  EXPECT_EQ(task.body, Show(id));  // byte for byte what `tx task show --json` prints
  EXPECT_DOUBLE_EQ(task.body["usage"]["cost_usd"].get<double>(), 0.5);
  HttpReply usage = api.Get("/api/usage?by=agent&since=1h");
  ASSERT_EQ(usage.status, 200);
  json cli = json::parse(Tx({"--json", "usage", "--by", "agent", "--since", "1h"}).out);
  EXPECT_TRUE(usage.body["since"].is_string());
  usage.body.erase("since");  // an hour before each's own now
  cli.erase("since");
  EXPECT_EQ(usage.body, cli);
  EXPECT_EQ(api.Get("/api/usage?by=week").status, 400);
  HttpReply status = api.Get("/api/orchestrator");
  ASSERT_EQ(status.status, 200);
  const json& agents = status.body["agents"];
  ASSERT_EQ(agents["limits"].size(), 1u) << agents;
  EXPECT_EQ(agents["limits"][0]["agent"], "codex");
  EXPECT_DOUBLE_EQ(agents["budget"]["daily_usd"].get<double>(), 100);
  EXPECT_GE(agents["budget"]["spent_usd"].get<double>(), 0.5);
  RunResult text = Tx({"orchestrator", "status"});
  EXPECT_NE(text.out.find("agents: codex limited until"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("budget: $0.5"), std::string::npos) << text.out;
  RunResult workers = Tx({"worker", "list"});
  EXPECT_NE(workers.out.find("codex limited until"), std::string::npos) << workers.out;
  auto text_of = [&](const std::string& path) {
    auto r = api.Raw().Get(path);
    return r && r->status == 200 ? r->body : std::string();
  };
  std::string metrics = text_of("/metrics");
  EXPECT_NE(metrics.find("tx_agent_cost_usd_total{agent=\"claude\"} 0.500000"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tx_agent_tokens_total{agent=\"claude\",kind=\"input\"} 2000"),
            std::string::npos);
  std::string raw = text_of("/api/tasks/" + id + "/log?raw=true");
  EXPECT_NE(raw.find("\"type\":\"result\""), std::string::npos) << raw;
  std::string readable = text_of("/api/tasks/" + id + "/log");
  EXPECT_NE(readable.find("→ Bash:"), std::string::npos) << readable;
  server.Signal(SIGTERM);
  server.Wait(30s);
}

// A remote worker (HTTP alone, no store) records the ledger, ships both logs, and reports a limit
// through the server, which pauses the profile for the whole fleet.
TEST_F(AgentsTest, ARemoteWorkerRecordsUsageAndLimitsThroughItsServer) {
  std::ofstream(Path(".tx/tokens")) << "worker w-secret\n";
  std::string id = AddTask("claude", "report=done cost=0.25");
  std::string limited = AddTask("codex", "limit=later");
  BackgroundProcess server(TX_BINARY, {"serve", "--http", "127.0.0.1:0"}, AgentEnv(), dir_.str(),
                           Path("serve.out"));
  int port = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::smatch m;
    std::string out = server.Output();
    if (!std::regex_search(out, m, std::regex(R"(listening on http://\S+:(\d+))"))) return false;
    port = std::stoi(m[1]);
    return true;
  }));
  fs::create_directories(Path("far/.tx"));
  fs::copy_file(Path(".tx/config.toml"), Path("far/.tx/config.toml"));  // its pass_env
  BackgroundProcess remote(
      TX_BINARY,
      {"worker", "start", "--server", "http://127.0.0.1:" + std::to_string(port), "--token",
       "w-secret", "--heartbeat-interval", "300ms", "--poll-interval", "1s"},
      AgentEnv(), Path("far"), Path("remote.log"));
  ASSERT_TRUE(WaitForStatus(id, "done")) << remote.Output();
  ASSERT_TRUE(WaitForUsage(id)) << remote.Output();
  json t = Show(id);
  EXPECT_DOUBLE_EQ(t["usage"]["cost_usd"].get<double>(), 0.25);
  // Both logs reached the server's disk.
  ASSERT_TRUE(WaitFor([&] {
    return Tx({"task", "log", id}).out.find("→ Bash:") != std::string::npos &&
           Tx({"task", "log", id, "--raw"}).out.find("\"type\":\"result\"") != std::string::npos;
  })) << remote.Output();
  ASSERT_TRUE(WaitFor([&] { return !Events("agent.limited").empty(); })) << remote.Output();
  json l = Show(limited);
  EXPECT_EQ(l["attempts"][0]["end_reason"], "rate_limited");
  EXPECT_EQ(l["status"], "ready");
  remote.Signal(SIGTERM);
  remote.Wait(30s);
  server.Signal(SIGTERM);
  server.Wait(30s);
}

// Issue 22, questions from agents: the first attempt's agent asks a person (tx task ask) and
// exits; the task waits; a person answers (tx task answer); the next attempt resumes the agent's
// session with the question and the answer in its prompt, and the agent reports done.
TEST_F(AgentsTest, AnAgentAsksAPersonAndItsNextAttemptResumesWithTheAnswer) {
  std::string id = AddTask("claude", "ask='Which database should I use?'", {"--max-attempts", "1"});
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "waiting")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  json t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 1u);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "asked");
  EXPECT_EQ(t["attempt"], 0);  // not counted: max_attempts 1 still allows the next
  EXPECT_EQ(t["metadata"]["questions"][0]["question"], "Which database should I use?");
  std::string session = t["attempts"][0]["usage"]["session_id"];
  ASSERT_FALSE(session.empty());
  std::vector<json> asked = Events("task.asked");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0]["data"]["question"], "Which database should I use?");
  // What waits for a person, and nothing runs meanwhile.
  json waiting = json::parse(Tx({"--json", "task", "list", "--status", "waiting"}).out);
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0]["id"], id);
  EXPECT_EQ(Calls().size(), 1u);
  // The agent that asked was not counted as a completed task of its worker, nor killed.
  EXPECT_EQ(worker->Output().find("agent killed"), std::string::npos) << worker->Output();

  RunResult answered = Tx({"task", "answer", id, "Use PostgreSQL"});
  ASSERT_EQ(answered.exit_code, 0) << answered.err;
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_FALSE(Has(calls[0]["argv"], "--resume"));
  const json& second = calls[1]["argv"];
  EXPECT_EQ(After(second, "--resume"), session);
  std::string prompt = After(second, "-p");
  EXPECT_NE(prompt.find("Which database should I use?"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Use PostgreSQL"), std::string::npos) << prompt;
  t = Show(id);
  ASSERT_EQ(t["attempts"].size(), 2u);
  EXPECT_EQ(t["attempts"][1]["end_reason"], "exited");
  EXPECT_EQ(t["attempt"], 1);
  EXPECT_EQ(t["metadata"]["questions"][0]["answer"], "Use PostgreSQL");
  std::vector<json> answers = Events("task.answered");
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0]["data"]["answer"], "Use PostgreSQL");
  // Answered once: a second answer finds nothing waiting.
  EXPECT_EQ(Tx({"task", "answer", id, "again"}).exit_code, 4);
}

// Issue 22: a question reaches a person: the orchestrator's [[notify]] sink gets task.asked, the
// task as it waits and a line that quotes the question and says how to answer.
TEST_F(AgentsTest, AnAgentsQuestionReachesTheNotificationSinks) {
  std::string out = Path("notified.json");
  WriteConfig("[[notify]]\ncommand = [\"sh\", \"-c\", \"cat > " + out + ".part && mv " + out +
              ".part " + out + "\"]\nevents = [\"task.asked\"]\n");
  BackgroundProcess orchestrator(TX_BINARY, Args{"orchestrator", "start", "--workers", "0"},
                                 AgentEnv(), dir_.str(), Path("orchestrator.log"));
  std::string id = AddTask("claude", "ask='Which database should I use?'");
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "waiting")) << worker->Output();
  auto notified = [&] {
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  ASSERT_TRUE(WaitFor([&] { return !notified().empty(); }, 30s)) << orchestrator.Output();
  json body = json::parse(notified());
  EXPECT_EQ(body["event"]["type"], "task.asked");
  EXPECT_EQ(body["event"]["data"]["question"], "Which database should I use?");
  EXPECT_EQ(body["task"]["status"], "waiting");
  EXPECT_EQ(body["text"], "tx: " + id +
                              " \"t\" asks: Which database should I use? (tx task answer " + id +
                              " \"...\")");
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(30s), 0) << worker->Output();
  orchestrator.Signal(SIGTERM);
  EXPECT_EQ(orchestrator.Wait(30s), 0) << orchestrator.Output();
}

// The same through the HTTP API alone: the agent of a remote worker asks through the server
// (TX_SERVER), and a person answers with PATCH /api/tasks/ID.
TEST_F(AgentsTest, AnAgentOfARemoteWorkerAsksThroughTheServerAndIsAnsweredOverHttp) {
  std::ofstream(Path(".tx/tokens")) << "worker w-secret\n";
  std::string id = AddTask("claude", "ask='Which region?'");
  BackgroundProcess server(TX_BINARY, {"serve", "--http", "127.0.0.1:0"}, AgentEnv(), dir_.str(),
                           Path("serve.out"));
  int port = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::smatch m;
    std::string out = server.Output();
    if (!std::regex_search(out, m, std::regex(R"(listening on http://\S+:(\d+))"))) return false;
    port = std::stoi(m[1]);
    return true;
  }));
  fs::create_directories(Path("far/.tx"));
  fs::copy_file(Path(".tx/config.toml"), Path("far/.tx/config.toml"));  // its pass_env
  BackgroundProcess remote(
      TX_BINARY,
      {"worker", "start", "--server", "http://127.0.0.1:" + std::to_string(port), "--token",
       "w-secret", "--heartbeat-interval", "300ms", "--poll-interval", "1s"},
      AgentEnv(), Path("far"), Path("remote.log"));
  ASSERT_TRUE(WaitForStatus(id, "waiting")) << remote.Output();
  ASSERT_TRUE(WaitForUsage(id)) << remote.Output();
  std::string session = Show(id)["attempts"][0]["usage"]["session_id"];
  std::string admin;
  std::ifstream(Path(".tx/token")) >> admin;
  ApiClient api(port, admin);
  HttpReply listed = api.Get("/api/tasks?status=waiting");
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.body["tasks"].size(), 1u);
  EXPECT_EQ(listed.body["tasks"][0]["metadata"]["questions"][0]["question"], "Which region?");
  // Not a retry while it waits, and an answer needs a waiting task.
  EXPECT_EQ(api.Patch("/api/tasks/" + id, {{"status", "ready"}}).status, 409);
  EXPECT_EQ(api.Patch("/api/tasks/" + id, {{"status", "done"}, {"answer", "x"}}).status, 400);
  HttpReply answered = api.Patch("/api/tasks/" + id, {{"status", "ready"}, {"answer", "eu-west"}});
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(answered.body["metadata"]["questions"][0]["answer"], "eu-west");
  ASSERT_TRUE(WaitForStatus(id, "done")) << remote.Output();
  std::vector<json> calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(After(calls[1]["argv"], "--resume"), session);
  EXPECT_NE(After(calls[1]["argv"], "-p").find("eu-west"), std::string::npos) << calls[1];
  EXPECT_EQ(api.Patch("/api/tasks/" + id, {{"status", "ready"}, {"answer", "late"}}).status, 409);
  remote.Signal(SIGTERM);
  remote.Wait(30s);
  server.Signal(SIGTERM);
  server.Wait(30s);
}

TEST_F(AgentsTest, AnUnknownProfileIsRefusedWhenTheTaskIsAdded) {
  RunResult r = Tx({"task", "add", "t", "--agent", "claud"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown agent profile 'claud'"), std::string::npos) << r.err;
  EXPECT_EQ(Tx({"task", "list"}).out, "no tasks\n");
  EXPECT_EQ(Tx({"task", "add", "t", "--budget-usd", "-1"}).exit_code, 2);
  EXPECT_EQ(Tx({"task", "add", "t", "--budget-usd", "lots"}).exit_code, 2);
}

}  // namespace
