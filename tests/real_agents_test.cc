// The real agent CLIs under tx, end to end: Claude Code 2.1.332 and the Codex CLI 0.171.0, as
// scripts/agents installs them into $TX_REAL_AGENTS, run by real `tx worker start` processes
// through the BUILT-IN profiles `claude` and `codex` (unchanged), against scripted model APIs on
// the loopback (tests/real_agents/fake_anthropic.py, fake_openai.py). What the agent does is
// what the script's model turns ask of it: call its shell tool to run `tx task done` and so on.
// So these see exactly what production sees of the CLIs: their argv, permissions, sandbox,
// stream formats, errors, sessions. See tests/real_agents/README.md.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process_probes.h"
#include "run_process.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using namespace tx::testing;
using Args = std::vector<std::string>;

constexpr const char* kClaudeVersion = "2.1.332";
constexpr const char* kCodexVersion = "0.171.0";
const std::string kFakes = std::string(TX_SOURCE_DIR) + "/tests/real_agents";

// Seconds since the epoch of an ISO time as tx prints it ("2026-11-26T17:41:53.659Z").
double EpochOf(const std::string& iso) {
  std::tm tm{};
  strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  double frac = iso.size() > 19 && iso[19] == '.' ? std::stod(iso.substr(19, 4)) : 0;
  return static_cast<double>(timegm(&tm)) + frac;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

class RealAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Never skipped: a run without the CLIs is a failure that says how to get them.
    const char* dir = std::getenv("TX_REAL_AGENTS");
    bin_ = dir != nullptr && *dir != '\0' ? std::string(dir) + "/node_modules/.bin" : "";
    std::string hint = ": run scripts/agents " +
                       (bin_.empty() ? std::string(TX_SOURCE_DIR) + "/build/agents" : dir) +
                       " (TX_REAL_AGENTS names the directory it installs into)";
    ASSERT_FALSE(bin_.empty()) << "TX_REAL_AGENTS is not set" << hint;
    for (const char* cli : {"claude", "codex"}) {
      ASSERT_EQ(access((bin_ + "/" + cli).c_str(), X_OK), 0)
          << bin_ << "/" << cli << " is missing" << hint;
    }
    RunResult claude = RunProcess(bin_ + "/claude", {"--version"}, {}, {}, 30s);
    ASSERT_NE(claude.out.find(kClaudeVersion), std::string::npos)
        << "claude --version: " << claude.out << claude.err << hint;
    RunResult codex = RunProcess(bin_ + "/codex", {"--version"}, {{"PATH", SystemPath()}}, {}, 30s);
    ASSERT_NE(codex.out.find(std::string("codex-cli ") + kCodexVersion), std::string::npos)
        << "codex --version: " << codex.out << codex.err << hint;

    fs::create_directories(Path("home"));
    RunResult r = Tx({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static std::string SystemPath() {
    const char* path = std::getenv("PATH");
    return path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  }
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  RunResult Tx(const Args& args) { return RunTx(args, env_, dir_.str()); }

  // Starts a fake model API (fake_anthropic.py or fake_openai.py) answering with `script`;
  // returns its port.
  int StartApi(const std::string& fake, const json& script) {
    std::ofstream(Path("script.json")) << script.dump(2);
    api_ = std::make_unique<BackgroundProcess>(
        "/usr/bin/env",
        Args{"python3", kFakes + "/" + fake, "--port", "0", "--script", Path("script.json"),
             "--log", Path("requests.jsonl")},
        Env{}, dir_.str(), Path("api.out"));
    int port = 0;
    EXPECT_TRUE(WaitFor(
        [&] {
          std::string out = api_->Output();
          std::size_t eol = out.find('\n');
          if (eol == std::string::npos) return false;
          port = std::atoi(out.substr(0, eol).c_str());
          return true;
        },
        30s))
        << api_->Output();
    EXPECT_GT(port, 0) << api_->Output();
    return port;
  }

  // The real Claude Code first on PATH, talking to the fake on `port`, its state in this
  // directory, nothing sent anywhere else, no retries of its own (a 429 is final at once).
  void UseClaude(int port, bool logged_in = true) {
    env_ = {{"PATH", bin_ + ":" + SystemPath()},
            {"ANTHROPIC_BASE_URL", "http://127.0.0.1:" + std::to_string(port)},
            {"HOME", Path("home")},
            {"CLAUDE_CONFIG_DIR", Path("claude")},
            // It stands for DISABLE_AUTOUPDATER, DISABLE_TELEMETRY and DISABLE_ERROR_REPORTING,
            // which the default [worker] pass_env does not let through to an agent.
            {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
            {"CLAUDE_CODE_MAX_RETRIES", "0"}};
    if (logged_in) {
      env_["ANTHROPIC_API_KEY"] = "sk-test";
    } else if (std::getenv("ANTHROPIC_API_KEY") != nullptr) {
      env_["ANTHROPIC_API_KEY"] = "";  // (the environment can only be overridden here)
    }
  }

  // The real Codex first on PATH; its CODEX_HOME names a model provider at the fake on `port`
  // (Codex ignores OPENAI_BASE_URL), without retries, analytics, plugins or update checks.
  void UseCodex(int port) {
    fs::create_directories(Path("codex"));
    std::ofstream(Path("codex/config.toml")) << "model = \"gpt-5.5\"\n"
                                                "model_provider = \"mock\"\n"
                                                "check_for_update_on_startup = false\n\n"
                                                "[model_providers.mock]\n"
                                                "name = \"mock\"\n"
                                                "base_url = \"http://127.0.0.1:"
                                             << port
                                             << "/v1\"\n"
                                                "wire_api = \"responses\"\n"
                                                "env_key = \"OPENAI_MOCK_KEY\"\n"
                                                "request_max_retries = 0\n"
                                                "stream_max_retries = 0\n\n"
                                                "[analytics]\n"
                                                "enabled = false\n\n"
                                                "[features]\n"
                                                "plugins = false\n";
    // With a bwrap on PATH (tx's sandbox installs Debian's), Codex's sandbox runs its helper
    // through an alias it makes only when CODEX_HOME is not under the temporary directory: the
    // test's is under /tmp, so TMPDIR names another.
    fs::create_directories(Path("tmp"));
    env_ = {{"PATH", bin_ + ":" + SystemPath()},
            {"HOME", Path("home")},
            {"CODEX_HOME", Path("codex")},
            {"TMPDIR", Path("tmp")},
            {"OPENAI_MOCK_KEY", "sk-mock"}};  // OPENAI_*: the default pass_env lets it through
  }

  std::string AddTask(const std::string& agent, Args extra = {}) {
    Args args = {"--json", "task", "add", "T", "--agent", agent};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["id"].get<std::string>() : "";
  }

  std::unique_ptr<BackgroundProcess> StartWorker() {
    Args args = {"worker",       "start", "--heartbeat-interval", "300ms",
                 "--kill-grace", "500ms", "--poll-interval",      "1s"};
    return std::make_unique<BackgroundProcess>(TX_BINARY, args, env_, dir_.str(),
                                               Path("worker.log"));
  }

  json Show(const std::string& id) {
    RunResult r = Tx({"--json", "task", "show", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
  bool WaitForStatus(const std::string& id, const std::string& status,
                     std::chrono::milliseconds limit = 60s) {
    return WaitFor([&] { return Show(id).value("status", "") == status; }, limit);
  }
  // A task that reported its own outcome is done a moment before its worker writes the
  // attempt's last row of the ledger (as the agent exits): wait for that row.
  bool WaitForUsage(const std::string& id, std::size_t attempts = 1,
                    std::chrono::milliseconds limit = 30s) {
    return WaitFor(
        [&] {
          json t = Show(id);
          return t["attempts"].size() >= attempts &&
                 t["attempts"][attempts - 1]["usage"].is_object() &&
                 !t["attempts"][attempts - 1]["end_reason"].is_null();
        },
        limit);
  }
  // The first attempt, once it has ended.
  json FirstAttemptEnded(const std::string& id) {
    json attempt;
    WaitFor([&] {
      json t = Show(id);
      if (t["attempts"].empty() || t["attempts"][0]["end_reason"].is_null()) return false;
      attempt = t["attempts"][0];
      return true;
    });
    return attempt;
  }

  std::vector<json> Events(const std::string& type) {
    RunResult r = Tx({"--json", "events", "--limit", "100000"});
    std::vector<json> out;
    json all = json::parse(r.out, nullptr, false);
    if (all.is_array()) {
      for (auto& e : all) {
        if (e["type"] == type) out.push_back(e);
      }
    }
    return out;
  }

  // What the fake API was asked, in order.
  std::vector<json> Requests() { return JsonLines(ReadFile(Path("requests.jsonl"))); }
  // The Messages API requests of the agent's own turns (those that offer tools).
  std::vector<json> MainRequests() {
    std::vector<json> out;
    for (auto& r : Requests()) {
      if (r.value("kind", "") == "main") out.push_back(r);
    }
    return out;
  }

  // The first line of `type` (and `subtype`, if given) in the first attempt's raw output.
  json RawLine(const std::string& id, const std::string& type, const std::string& subtype = "") {
    for (auto& line : JsonLines(Tx({"task", "log", id, "--raw", "--attempt", "1"}).out)) {
      if (line.value("type", "") == type &&
          (subtype.empty() || line.value("subtype", "") == subtype)) {
        return line;
      }
    }
    return nullptr;
  }

  // A Claude model turn that runs `command` through its Bash tool.
  static json Bash(const std::string& command, const std::string& text = "") {
    json turn = {{"tool_use",
                  {{"name", "Bash"}, {"input", {{"command", command}, {"description", "run"}}}}}};
    if (!text.empty()) turn["text"] = text;
    return turn;
  }
  static json Say(const std::string& text) { return {{"text", text}}; }

  TempDir dir_;
  std::string bin_;
  Env env_;
  std::unique_ptr<BackgroundProcess> api_;
};

// Claude Code's Bash permission check refuses `tx task done "$TX_TASK_ID"` under the profile's
// Bash(tx:*) ("A variable in this command can't be checked before it runs"): the scripted turns
// name the task by its id, as the prompt also gives it.

TEST_F(RealAgentsTest, ClaudeCodeReportsDoneThroughTheBuiltInProfileAndTheLedgerHoldsItsOwnCost) {
  std::string id = AddTask("claude");
  json usage1 = {{"input_tokens", 1200},
                 {"output_tokens", 30},
                 {"cache_read_input_tokens", 300},
                 {"cache_creation_input_tokens", 50}};
  json turn1 = Bash("tx task done " + id + " --result real-claude", "I'll mark it done.");
  turn1["usage"] = usage1;
  json turn2 = Say("Done.");
  turn2["usage"] = {{"input_tokens", 1400}, {"output_tokens", 18}};
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {turn1, turn2}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();

  json t = Show(id);
  EXPECT_EQ(t["result"], "real-claude");
  ASSERT_EQ(t["attempts"].size(), 1u) << t.dump();
  json result = RawLine(id, "result"), init = RawLine(id, "system", "init");
  ASSERT_TRUE(result.is_object() && init.is_object())
      << Tx({"task", "log", id, "--raw"}).out << worker->Output();
  const json& u = t["attempts"][0]["usage"];
  // Claude Code's own cost, as it printed it; its session and model; the result's tokens.
  double cost = result["total_cost_usd"].get<double>();
  EXPECT_GT(cost, 0);
  EXPECT_DOUBLE_EQ(u["cost_usd"].get<double>(), cost) << u.dump();
  EXPECT_FALSE(u["cost_estimated"].get<bool>());
  EXPECT_EQ(u["agent"], "claude");
  EXPECT_EQ(u["session_id"], result["session_id"]);
  EXPECT_TRUE(init["model"].is_string()) << init.dump();
  EXPECT_EQ(u["model"], init["model"]);
  EXPECT_EQ(u["turns"], result["num_turns"]);
  EXPECT_EQ(u["tokens"]["input"], 2600);  // both requests
  EXPECT_EQ(u["tokens"]["cache_read"], 300);
  EXPECT_EQ(u["tokens"]["cache_write"], 50);
  EXPECT_TRUE(u["permission_denials"].empty()) << u.dump();
  EXPECT_DOUBLE_EQ(t["usage"]["cost_usd"].get<double>(), cost);
  json total = json::parse(Tx({"--json", "usage"}).out)["total"];
  EXPECT_DOUBLE_EQ(total["cost_usd"].get<double>(), cost);

  // The readable log: the call on one line, tx's answer, no JSON.
  std::string log = Tx({"task", "log", id}).out;
  EXPECT_NE(log.find("→ Bash: tx task done " + id + " --result real-claude"), std::string::npos)
      << log;
  EXPECT_NE(log.find("  ← "), std::string::npos) << log;
  EXPECT_EQ(log.find("{\"type\""), std::string::npos) << log;
  // The model saw tx's own answer to the command it ran.
  std::vector<json> main = MainRequests();
  ASSERT_EQ(main.size(), 2u);
  EXPECT_NE(main[1]["body"]["messages"].dump().find("tool_result"), std::string::npos);
}

TEST_F(RealAgentsTest, ABashCommandOutsideTheProfilesPermissionsIsDeniedAndTheTaskIsNotDone) {
  std::string id = AddTask("claude", {"--max-attempts", "1"});
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {Bash("python3 -c 1"), Say("Done.")}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "failed")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["exit_code"], 0);  // Claude Code itself exits 0
  EXPECT_NE(t["error"].get<std::string>().find("permission denied"), std::string::npos)
      << t["error"];
  const json& denials = t["attempts"][0]["usage"]["permission_denials"];
  ASSERT_EQ(denials.size(), 1u) << t.dump();
  EXPECT_EQ(denials[0]["tool"], "Bash");
  EXPECT_EQ(denials[0]["input"], "python3 -c 1");
  std::string log = Tx({"task", "log", id}).out;
  EXPECT_NE(log.find("! permission denied"), std::string::npos) << log;
}

TEST_F(RealAgentsTest, AnApiRateLimitEndsTheAttemptUncountedAndLimitsClaude) {
  std::string id = AddTask("claude");
  json limited = {
      {"error", {{"status", 429}, {"type", "rate_limit_error"}, {"message", "slow down"}}},
      {"times", -1}};
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {limited}}}));
  auto worker = StartWorker();
  json attempt = FirstAttemptEnded(id);
  ASSERT_FALSE(attempt.is_null()) << worker->Output();
  EXPECT_EQ(attempt["end_reason"], "rate_limited") << attempt.dump();
  // What Claude Code said of it.
  json result = RawLine(id, "result");
  EXPECT_EQ(result["api_error_status"], 429) << result.dump();
  json t = Show(id);
  EXPECT_EQ(t["attempt"], 0);  // not counted
  EXPECT_EQ(t["status"], "ready");
  EXPECT_GT(EpochOf(t["run_after"]), Now() + 60) << t["run_after"];  // the default 5 minutes
  std::vector<json> limits = Events("agent.limited");
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0]["data"]["agent"], "claude");
  EXPECT_TRUE(Events("task.failed").empty());
  EXPECT_EQ(MainRequests().size(), 1u);  // no retries, by Claude Code or by tx
}

TEST_F(RealAgentsTest, ClaudeCodeNotLoggedInIsUnavailableNotAFailure) {
  std::string id = AddTask("claude", {"--max-attempts", "1"});
  UseClaude(StartApi("fake_anthropic.py", {{"turns", json::array()}}), /*logged_in=*/false);
  auto worker = StartWorker();
  json attempt = FirstAttemptEnded(id);
  ASSERT_FALSE(attempt.is_null()) << worker->Output();
  EXPECT_EQ(attempt["end_reason"], "agent_unavailable") << attempt.dump();
  json t = Show(id);
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["status"], "ready");
  json workers = json::parse(Tx({"--json", "worker", "list"}).out);
  ASSERT_EQ(workers.size(), 1u);
  const json& unavailable = workers[0]["metadata"]["unavailable_agents"];
  ASSERT_TRUE(unavailable.contains("claude")) << workers.dump();
  EXPECT_NE(unavailable["claude"].get<std::string>().find("Not logged in"), std::string::npos)
      << unavailable;
  EXPECT_TRUE(MainRequests().empty());  // it never reached the API
}

TEST_F(RealAgentsTest, ARetryResumesClaudeCodesSessionWithItsEarlierConversation) {
  std::string id = AddTask("claude", {"--max-attempts", "3"});
  // The first run looks at its task, then gives up; the resumed run (its prompt says how the
  // last attempt ended) reports done; any other request is answered "Done.". The worker kills an
  // agent whose own `tx task fail` requeued its task at once, and Claude Code writes its
  // transcript about once a second: the API pausing 2 s before the giving up lets it write what
  // came before (else there is no session to resume).
  json look = Bash("tx task show " + id);
  look["match_last_user_contains"] = "You are working on task " + id;
  json fail = Bash("tx task fail " + id + " --error first-try", "Giving up.");
  fail["delay"] = 2;
  json done = Bash("tx task done " + id + " --result second-try");
  done["match_last_user_contains"] = "Your previous attempt at task " + id;
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {look, fail, done}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id, 2)) << worker->Output();
  json t = Show(id);
  std::string logs = Tx({"task", "log", id, "--attempt", "1"}).out + Tx({"task", "log", id}).out;
  ASSERT_EQ(t["attempts"].size(), 2u) << t.dump() << logs;
  EXPECT_EQ(t["attempts"][0]["end_reason"], "failed");
  EXPECT_EQ(t["result"], "second-try") << logs;
  std::string first = t["attempts"][0]["usage"]["session_id"];
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(t["attempts"][1]["usage"]["session_id"], first) << logs << worker->Output();
  EXPECT_NE(logs.find("resuming session " + first), std::string::npos) << logs;
  // The resumed run's first request carries the first run's conversation (its prompt, the call
  // it made and tx's answer), then the resume prompt.
  json resumed;
  for (auto& r : MainRequests()) {
    if (r["turn"] == 2 && resumed.is_null()) resumed = r;
  }
  ASSERT_TRUE(resumed.is_object()) << logs;
  EXPECT_EQ(resumed["headers"]["x-claude-code-session-id"], first);
  const json& messages = resumed["body"]["messages"];
  ASSERT_GE(messages.size(), 3u) << messages.dump();
  std::string earlier = json(std::vector<json>(messages.begin(), messages.end() - 1)).dump();
  EXPECT_NE(earlier.find("You are working on task " + id), std::string::npos) << earlier;
  EXPECT_NE(earlier.find("\"command\":\"tx task show " + id), std::string::npos) << earlier;
  EXPECT_NE(earlier.find("status        running"), std::string::npos) << earlier;
  EXPECT_NE(messages.back().dump().find("ended with: first-try"), std::string::npos)
      << messages.back();
}

// Issue 22: Claude Code asks a person through its Bash tool under the built-in profile; the task
// waits; once answered, the next attempt resumes the session that asked with the answer, and
// Claude reports done. The API pausing 2 s before the question lets Claude Code write its
// transcript (its worker stops it half a second after the question).
TEST_F(RealAgentsTest, ClaudeCodeAsksAPersonAndIsResumedWithTheAnswer) {
  std::string id = AddTask("claude", {"--max-attempts", "1"});
  json ask = Bash("tx task ask \"Which database should I use?\"", "I need to ask.");
  ask["match_last_user_contains"] = "You are working on task " + id;
  ask["delay"] = 2;
  json done = Bash("tx task done " + id + " --result with-postgres");
  done["match_last_user_contains"] = "Use PostgreSQL";
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {ask, done}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "waiting")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id, 1)) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["attempts"][0]["end_reason"], "asked");
  EXPECT_EQ(t["metadata"]["questions"][0]["question"], "Which database should I use?");
  std::string first = t["attempts"][0]["usage"]["session_id"];
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(Tx({"task", "answer", id, "Use PostgreSQL"}).exit_code, 0);
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id, 2)) << worker->Output();
  t = Show(id);
  std::string logs = Tx({"task", "log", id, "--attempt", "1"}).out + Tx({"task", "log", id}).out;
  ASSERT_EQ(t["attempts"].size(), 2u) << t.dump() << logs;
  EXPECT_EQ(t["result"], "with-postgres") << logs;
  EXPECT_EQ(t["attempt"], 1);  // the question used up no attempt of the one allowed
  EXPECT_EQ(t["attempts"][1]["usage"]["session_id"], first) << logs << worker->Output();
  EXPECT_NE(logs.find("resuming session " + first), std::string::npos) << logs;
  // The resumed run's first request: the first run's conversation, then the answer.
  json resumed;
  for (auto& r : MainRequests()) {
    if (r["turn"] == 1 && resumed.is_null()) resumed = r;
  }
  ASSERT_TRUE(resumed.is_object()) << logs;
  const json& messages = resumed["body"]["messages"];
  std::string earlier = json(std::vector<json>(messages.begin(), messages.end() - 1)).dump();
  EXPECT_NE(earlier.find("tx task ask"), std::string::npos) << earlier;
  std::string last = messages.back().dump();
  EXPECT_NE(last.find("Which database should I use?"), std::string::npos) << last;
  EXPECT_NE(last.find("Use PostgreSQL"), std::string::npos) << last;
}

TEST_F(RealAgentsTest, CodexReportsDoneFromItsSandboxAndTheLedgerHoldsItsTokens) {
  std::string id = AddTask("codex");
  json call = {{"kind", "shell"},
               {"command", "tx task done \"$TX_TASK_ID\" --result real-codex"},
               {"usage",
                {{"input_tokens", 3000},
                 {"input_tokens_details", {{"cached_tokens", 1000}}},
                 {"output_tokens", 100},
                 {"output_tokens_details", {{"reasoning_tokens", 20}}},
                 {"total_tokens", 3100}}}};
  json done = {{"kind", "message"},
               {"text", "Done."},
               {"usage",
                {{"input_tokens", 4000},
                 {"input_tokens_details", {{"cached_tokens", 2000}}},
                 {"output_tokens", 50},
                 {"output_tokens_details", {{"reasoning_tokens", 0}}},
                 {"total_tokens", 4050}}}};
  UseCodex(StartApi("fake_openai.py", {{"turns", {call, done}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output();
  ASSERT_TRUE(WaitForUsage(id)) << worker->Output();
  json t = Show(id);
  EXPECT_EQ(t["result"], "real-codex") << Tx({"task", "log", id, "--raw"}).out;
  const json& u = t["attempts"][0]["usage"];
  EXPECT_EQ(u["agent"], "codex");
  EXPECT_EQ(u["tokens"]["input"], 7000 - 3000);  // cached input counted apart
  EXPECT_EQ(u["tokens"]["cache_read"], 3000);
  EXPECT_EQ(u["tokens"]["output"], 150);
  EXPECT_TRUE(u["cost_estimated"].get<bool>());  // Codex reports no cost: tx prices it
  EXPECT_GT(u["cost_usd"].get<double>(), 0);
  json started = RawLine(id, "thread.started");
  ASSERT_TRUE(started.is_object()) << Tx({"task", "log", id, "--raw"}).out;
  EXPECT_EQ(u["session_id"], started["thread_id"]);
  std::string log = Tx({"task", "log", id}).out;
  EXPECT_NE(log.find("→ shell: /bin/bash -c 'tx task done \"$TX_TASK_ID\" --result real-codex'"),
            std::string::npos)
      << log;
  // It ran in the profile's sandbox, the directory of its worker's socket writable (the store's
  // is not: its tx reaches the store through the worker).
  std::vector<json> requests = Requests();
  ASSERT_EQ(requests.size(), 2u);
  json meta = json::parse(requests[0]["headers"].value("x-codex-turn-metadata", "{}"));
  EXPECT_EQ(meta["sandbox_mode"], "workspace-write") << meta;
  std::string body = requests[0]["body"].dump();
  EXPECT_NE(body.find("<path>/tmp/tx-agent-"), std::string::npos) << body;
  EXPECT_EQ(body.find("<path>" + Path(".tx") + "</path>"), std::string::npos) << body;
}

TEST_F(RealAgentsTest, ACodexUsageLimitLimitsCodexUntilTheResetItNames) {
  std::string id = AddTask("codex");
  double reset = Now() + 3600;
  json limit = {{"kind", "http_error"},
                {"status", 429},
                {"body",
                 {{"error",
                   {{"type", "usage_limit_reached"},
                    {"plan_type", "plus"},
                    {"resets_at", static_cast<long long>(reset)}}}}},
                {"repeat", -1}};
  UseCodex(StartApi("fake_openai.py", {{"turns", {limit}}}));
  auto worker = StartWorker();
  json attempt = FirstAttemptEnded(id);
  ASSERT_FALSE(attempt.is_null()) << worker->Output();
  EXPECT_EQ(attempt["end_reason"], "rate_limited") << attempt.dump();
  json t = Show(id);
  EXPECT_EQ(t["attempt"], 0);
  EXPECT_EQ(t["status"], "ready");
  std::vector<json> limits = Events("agent.limited");
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0]["data"]["agent"], "codex");
  // Codex names the reset as a local clock time to the minute ("try again at 6:42 PM").
  double until = EpochOf(limits[0]["data"]["until"]);
  EXPECT_NEAR(until, reset, 180) << limits[0].dump();
  EXPECT_NEAR(EpochOf(t["run_after"]), until, 1) << t.dump();
  EXPECT_TRUE(Events("task.failed").empty());
  EXPECT_EQ(Requests().size(), 1u);  // no retries
}

}  // namespace

// Issue 22: with `mcp = true` the claude profile registers tx's MCP server, and the real Claude
// Code offers its tools to the model, starts `tx mcp` with the task's environment and calls them
// without a prompt (mcp__tx in --allowedTools): a note, then done, each fenced by the token.
TEST_F(RealAgentsTest, ClaudeCodeCallsTxsMcpToolsWhenTheProfileRegistersThem_Issue22) {
  std::ofstream(Path(".tx/config.toml")) << "[agents.claude]\nmcp = true\n";
  std::string id = AddTask("claude");
  json note = {{"tool_use", {{"name", "mcp__tx__task_note"}, {"input", {{"text", "via mcp"}}}}}};
  json done = {
      {"tool_use", {{"name", "mcp__tx__task_done"}, {"input", {{"result", "real-claude-mcp"}}}}}};
  UseClaude(StartApi("fake_anthropic.py", {{"turns", {note, done, Say("Done.")}}}));
  auto worker = StartWorker();
  ASSERT_TRUE(WaitForStatus(id, "done")) << worker->Output() << Tx({"task", "log", id}).out;
  json t = Show(id);
  EXPECT_EQ(t["result"], "real-claude-mcp");
  ASSERT_TRUE(t["metadata"]["notes"].is_array()) << t.dump();
  EXPECT_EQ(t["metadata"]["notes"][0]["text"], "via mcp");
  // The model was offered the server's tools (Claude Code 2.1.332 lists an MCP server's tools
  // as deferred ones in its system prompt), and saw their results: the task as tx shows it.
  std::vector<json> main = MainRequests();
  ASSERT_GE(main.size(), 2u);
  std::string first = main[0]["body"].dump();
  for (const char* name : {"mcp__tx__task_done", "mcp__tx__task_note", "mcp__tx__task_add"}) {
    EXPECT_NE(first.find(name), std::string::npos) << name;
  }
  std::string second = main[1]["body"]["messages"].dump();
  EXPECT_NE(second.find("tool_result"), std::string::npos) << second;
  EXPECT_NE(second.find("via mcp"), std::string::npos) << second;
  EXPECT_EQ(second.find("is_error\":true"), std::string::npos) << second;
  WaitForUsage(id);
  EXPECT_TRUE(t["attempts"][0]["usage"].is_null() ||
              t["attempts"][0]["usage"]["permission_denials"].empty())
      << t.dump();
}
