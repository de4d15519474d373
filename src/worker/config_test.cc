#include "worker/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "worker/sandbox.h"
#include "worker/spawn_plan.h"

namespace tx::worker {
namespace {

TEST(WorkerConfig, TomlOverridesDefaultsAndAddsAgentProfiles) {
  WorkerConfig c;
  Status s = ApplyConfigToml(R"(
[worker]
heartbeat_interval = "10s"
lease = "5m"
stall_timeout = "2m"
agent = "mine"
capabilities = ["python", "git"]
queues = ["fast", "default"]
allowed_commands = "task.show,task.done"
log_cap_mb = 2

[worker.limits]
memory_mb = 512
cpu_percent = 150
open_files = 256

[agents.mine]
argv = ["my-agent", "--task", "{task_id}", "{prompt}"]

[agents.claude]
argv = ["claude", "-p", "{prompt}", "--dangerously-skip-permissions"]
)",
                             "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(c.heartbeat_idle_ms, 10'000);
  EXPECT_EQ(c.heartbeat_running_ms, 5'000);  // half of it, unless given
  EXPECT_EQ(c.lease_ms, 300'000);
  EXPECT_EQ(c.stall_timeout_ms, 120'000);
  EXPECT_EQ(c.agent, "mine");
  EXPECT_EQ(c.capabilities, (std::vector<std::string>{"python", "git"}));
  EXPECT_EQ(c.queues, (std::vector<std::string>{"fast", "default"}));
  EXPECT_EQ(c.allowed_commands, "task.show,task.done");
  EXPECT_EQ(c.log_cap_bytes, 2u << 20);
  EXPECT_EQ(c.limits.memory_bytes, 512ull << 20);
  EXPECT_EQ(c.limits.cpu_percent, 150);
  EXPECT_EQ(c.limits.open_files, 256u);
  EXPECT_EQ(c.profiles["mine"].argv[0], "my-agent");
  EXPECT_EQ(c.profiles["claude"].argv.back(), "--dangerously-skip-permissions");
  EXPECT_EQ(c.profiles["codex"].argv[0], "codex");  // built-ins remain
}

TEST(WorkerConfig, MistakesAreRefusedNamingTheKeyAndChangeNothing) {
  struct Case {
    const char* toml;
    const char* needle;
  } cases[] = {
      {"[worker]\nleese = \"5m\"\n", "unknown setting 'worker.leese'"},
      {"[worker]\nlease = 5\n", "'worker.lease' must be a duration"},
      {"[worker]\nlease = \"soon\"\n", "'soon'"},
      {"[worker]\nqueues = \"a\"\n", "'worker.queues' must be an array of strings"},
      {"[worker.limits]\nmemory_mb = -1\n", "'worker.limits.memory_mb' must be a positive"},
      {"[agents.x]\nargv = [\"run\", \"{promt}\"]\n", "{promt}"},
      {"[agents.x]\n", "'agents.x.argv' is required"},
      {"[workers]\n", "unknown section 'workers'"},
      {"[git]\nsetup = \"make\"\n", "'git.setup' must be an array of strings"},
      {"[git]\nbranch = \"x\"\n", "unknown setting 'git.branch'"},
      {"[git]\nspare_worktrees = -1\n", "'git.spare_worktrees' must be an integer from 0 to 64"},
      {"[git]\nmerge = \"squash\"\n", "'git.merge' must be \"rebase\" or \"merge\""},
      {"[git.repos.\"/r\"]\ncheque = \"x\"\n", "unknown setting 'git.repos.\"/r\".cheque'"},
      {"[git]\nrepo = \"src/app\"\n", "'git.repo' must be an absolute path"},
      {"[git.queues.web]\nbase = \"main\"\n", "'git.queues.web.repo' is required"},
      {"[git.queues.web]\nrepo = \"/r\"\nreview = \"yes\"\n",
       "'git.queues.web.review' must be true or false"},
      {"[git.queues.web]\nrepo = \"/r\"\nautomerge = true\n",
       "unknown setting 'git.queues.web.automerge'"},
      {"[worker\n", "config.toml:1:"},
  };
  for (const auto& c : cases) {
    WorkerConfig config;
    config.lease_ms = 42;
    Status s = ApplyConfigToml(c.toml, "config.toml", config);
    ASSERT_FALSE(s.ok()) << c.toml;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find(c.needle), std::string::npos)
        << c.toml << " → " << s.error().message();
    EXPECT_EQ(config.lease_ms, 42);
  }
}

TEST(WorkerConfig, AReloadTakesWhatTheNextAttemptsReadAndLeavesWhatWasRegistered_Issue24) {
  WorkerConfig running;
  WorkerConfig fresh = running;
  EXPECT_TRUE(ReloadWorkerConfig(running, fresh).applied.empty());
  ASSERT_TRUE(ApplyConfigToml(R"(
[worker]
stall_timeout = "2m"
task_timeout_cap = "1h"
allowed_commands = "task.show"
max_subtasks = 3
log_cap_mb = 1
queues = ["other"]
heartbeat_interval = "10s"
sandbox = "bwrap"

[worker.limits]
memory_mb = 512

[agents.mine]
argv = ["my-agent", "{prompt}"]

[prices."my-model"]
input = 1

[git]
check = "make test"
)",
                              "config.toml", fresh)
                  .ok());
  WorkerConfigReload r = ReloadWorkerConfig(running, fresh);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"stall_timeout", "task_timeout_cap",
                                                 "allowed_commands", "max_subtasks", "log_cap_mb",
                                                 "limits", "agents", "prices", "git"}));
  EXPECT_EQ(r.at_restart, (std::vector<std::string>{"queues", "heartbeat_interval",
                                                    "heartbeat_interval_running", "sandbox"}));
  EXPECT_EQ(running.stall_timeout_ms, 120'000);
  EXPECT_EQ(running.allowed_commands, "task.show");
  EXPECT_EQ(running.log_cap_bytes, 1u << 20);
  EXPECT_TRUE(running.profiles.contains("mine"));
  EXPECT_EQ(running.git.check, "make test");
  EXPECT_EQ(running.queues, (std::vector<std::string>{"default"})) << "registered: kept";
  EXPECT_EQ(running.heartbeat_idle_ms, 30'000);
  EXPECT_EQ(running.sandbox.kind, SandboxKind::kNone);
  EXPECT_TRUE(ReloadWorkerConfig(running, fresh).applied.empty());
}

TEST(WorkerConfig, GitSettingsComeFromGitAndEachRepositoryOverridesThem) {
  WorkerConfig c;
  Status s = ApplyConfigToml(R"(
[git]
base = "main"
setup = ["npm ci", "cp ../../../.env ."]

spare_worktrees = 3
check = "make test"

[git.repos."/srv/api"]
base = "develop"
spare_worktrees = 0
merge = "merge"
check = ""

[git.repos."/srv/docs"]
setup = []
)",
                             "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  git::Settings other = GitSettingsFor(c, "/srv/other");
  EXPECT_EQ(other.base, "main");
  EXPECT_EQ(other.setup, (std::vector<std::string>{"npm ci", "cp ../../../.env ."}));
  git::Settings api = GitSettingsFor(c, "/srv/api");
  EXPECT_EQ(api.base, "develop");
  EXPECT_EQ(api.setup, other.setup);
  EXPECT_EQ(other.spare_worktrees, 3);
  EXPECT_EQ(api.spare_worktrees, 0);
  EXPECT_EQ(other.check, "make test");
  EXPECT_TRUE(other.rebase);
  EXPECT_EQ(api.check, "");
  EXPECT_FALSE(api.rebase);
  git::Settings docs = GitSettingsFor(c, "/srv/docs");
  EXPECT_EQ(docs.base, "main");
  EXPECT_TRUE(docs.setup.empty());
}

// Isolation asked for on a task's behalf: its queue's [git.queues.NAME], else [git] repo; a task
// that names its repository keeps it.
TEST(WorkerConfig, TheConfigAndAQueueAskForGitIsolationOnATasksBehalf) {
  WorkerConfig c;
  Status s = ApplyConfigToml(R"(
[git]
repo = "/srv/app/"

[git.queues.web]
repo = "/srv/web"
base = "develop"
auto_merge = true

[git.queues.docs]
repo = "/srv/docs"
review = true
)",
                             "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto prepared = [&](const std::string& queue, const std::string& repo, bool auto_merge) {
    Task t;
    t.queue = queue;
    t.repo = repo;
    Status st = PrepareGitTask(c, auto_merge, t);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return t;
  };
  Task plain = prepared("default", "", false);
  EXPECT_EQ(plain.repo, "/srv/app");  // normalized
  EXPECT_FALSE(plain.review);
  EXPECT_FALSE(AsksForAutoMerge(plain));
  Task web = prepared("web", "", false);
  EXPECT_EQ(web.repo, "/srv/web");
  EXPECT_EQ(web.base_branch, "develop");
  EXPECT_TRUE(web.review);
  EXPECT_TRUE(AsksForAutoMerge(web));
  Task docs = prepared("docs", "", false);
  EXPECT_EQ(docs.repo, "/srv/docs");
  EXPECT_TRUE(docs.review);
  EXPECT_FALSE(AsksForAutoMerge(docs));
  Task own = prepared("web", "/home/me/mine", true);
  EXPECT_EQ(own.repo, "/home/me/mine");
  EXPECT_EQ(own.base_branch, "");
  EXPECT_TRUE(own.review);
  EXPECT_TRUE(AsksForAutoMerge(own));
  // A task's own metadata.auto_merge = false wins over its queue's.
  Task off;
  off.queue = "web";
  off.metadata["auto_merge"] = false;
  ASSERT_TRUE(PrepareGitTask(c, false, off).ok());
  EXPECT_FALSE(AsksForAutoMerge(off));

  // Without a repository from anywhere, a base or auto-merge is refused.
  WorkerConfig none;
  Task t;
  t.base_branch = "main";
  Status refused = PrepareGitTask(none, false, t);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("a base branch needs a repository"), std::string::npos);
  Task m;
  refused = PrepareGitTask(none, true, m);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("auto-merge needs a repository"), std::string::npos);
}

// A sandbox asked for by a queue ([git.queues.NAME] sandbox, with or without a repository) or by
// a task (metadata.sandbox): the strictest of the worker's, the queue's and the task's.
TEST(WorkerConfig, AQueueOrATaskRaisesTheSandboxNeverLowersIt_Issue25) {
  WorkerConfig c;
  Status s = ApplyConfigToml(R"(
[git]
repo = "/srv/app"

[git.queues.untrusted]
sandbox = "bwrap"

[git.queues.boxed]
repo = "/srv/boxed"
sandbox = "podman"
)",
                             "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(c.git_queues["untrusted"].sandbox, SandboxKind::kBwrap);
  EXPECT_EQ(c.git_queues["boxed"].sandbox, SandboxKind::kPodman);
  auto kind = [&](const std::string& queue, const std::string& asked) {
    Task t;
    t.queue = queue;
    if (!asked.empty()) t.metadata["sandbox"] = asked;
    Result<SandboxSettings> r = SandboxFor(c, t);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? r->kind : SandboxKind::kNone;
  };
  EXPECT_EQ(kind("default", ""), SandboxKind::kNone);
  EXPECT_EQ(kind("untrusted", ""), SandboxKind::kBwrap);
  EXPECT_EQ(kind("untrusted", "none"), SandboxKind::kBwrap);
  EXPECT_EQ(kind("untrusted", "docker"), SandboxKind::kDocker);
  EXPECT_EQ(kind("default", "bwrap"), SandboxKind::kBwrap);
  EXPECT_EQ(kind("boxed", "bwrap"), SandboxKind::kPodman);
  c.sandbox.kind = SandboxKind::kBwrap;
  c.sandbox.network = true;
  EXPECT_EQ(kind("default", "none"), SandboxKind::kBwrap);
  EXPECT_EQ(kind("boxed", ""), SandboxKind::kPodman);
  Task t;
  t.queue = "default";
  t.metadata["sandbox"] = "podman";
  EXPECT_TRUE(SandboxFor(c, t)->network) << "the worker's [sandbox] settings are kept";
  t.metadata["sandbox"] = 3;
  EXPECT_FALSE(SandboxFor(c, t).ok());
  t.metadata["sandbox"] = "chroot";
  EXPECT_FALSE(SandboxFor(c, t).ok());

  // Containers are removed with every engine a worker, queue or task may use: the configured
  // ones by name, with [sandbox] engine_args.
  c.sandbox.engine_args = {"--runtime", "runc"};
  std::vector<exec::ContainerEngine> configured;
  for (const auto& e : ContainerEngines(c)) {
    if (e.configured) configured.push_back(e);
  }
  EXPECT_EQ(configured,
            (std::vector<exec::ContainerEngine>{{{"podman", "--runtime", "runc"}, true}}));

  // A queue with a sandbox alone leaves git isolation to [git] repo.
  Task plain;
  plain.queue = "untrusted";
  ASSERT_TRUE(PrepareGitTask(c, false, plain).ok());
  EXPECT_EQ(plain.repo, "/srv/app");

  // At add: a kind's name, no less than its queue's.
  auto prepared = [&](const std::string& queue, const std::string& asked) {
    Task task;
    task.queue = queue;
    task.metadata["sandbox"] = asked;
    return PrepareAgentTask(c, task);
  };
  EXPECT_TRUE(prepared("untrusted", "bwrap").ok());
  EXPECT_TRUE(prepared("untrusted", "podman").ok());
  EXPECT_TRUE(prepared("default", "none").ok());
  Status lower = prepared("boxed", "bwrap");
  ASSERT_FALSE(lower.ok());
  EXPECT_EQ(lower.error().message(),
            "sandbox 'bwrap' is less than queue 'boxed' asks for: its tasks run in podman at least "
            "([git.queues.boxed] sandbox)");
  EXPECT_FALSE(prepared("default", "chroot").ok());

  // Refused by name: no kind, or git settings without a repository.
  for (const auto& [toml, message] : std::vector<std::pair<std::string, std::string>>{
           {"[git.queues.q]\nsandbox = \"chroot\"\n",
            "config.toml: git.queues.q.sandbox: unknown sandbox 'chroot'"},
           {"[git.queues.q]\nsandbox = \"bwrap\"\nreview = true\n",
            "config.toml: 'git.queues.q.repo' is required with base, review or auto_merge"},
           {"[git.queues.q]\n", "config.toml: 'git.queues.q.repo' is required"}}) {
    WorkerConfig w;
    Status st = ApplyConfigToml(toml, "config.toml", w);
    ASSERT_FALSE(st.ok()) << toml;
    EXPECT_NE(st.error().message().find(message), std::string::npos) << st.error().message();
  }
}

TEST(WorkerConfig, AgentIsAProfileNameOrATemplate) {
  WorkerConfig c;
  auto a = ResolveAgent(c, "codex");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, "codex");
  EXPECT_EQ(a->family, agent::Family::kCodex);
  EXPECT_EQ(a->argv[0], "codex");
  a = ResolveAgent(c, "run-it --id {task_id} '{prompt}'");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->argv, (std::vector<std::string>{"run-it", "--id", "{task_id}", "{prompt}"}));
  EXPECT_EQ(a->name, "");  // a template is no profile: nothing to limit or resume
  EXPECT_EQ(a->family, agent::Family::kGeneric);
  auto missing = ResolveAgent(c, "claud");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("unknown agent profile 'claud'"), std::string::npos);
  EXPECT_FALSE(ResolveAgent(c, "run {nope}").ok());
  EXPECT_TRUE(IsProfileName("claude"));
  EXPECT_FALSE(IsProfileName("my-agent {prompt}"));
}

TEST(WorkerConfig, ProfilesNameTheirAdapterPatternsAccountsAndResumeForm) {
  WorkerConfig c;
  Status s = ApplyConfigToml(R"(
[agents.mine]
adapter = "claude"
argv = ["my-claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose"]
resume_argv = ["my-claude", "--resume", "{session_id}", "-p", "{prompt}"]
limit_patterns = ["quota gone"]

[[agents.claude.accounts]]
name = "work"
env = { CLAUDE_CONFIG_DIR = "/home/me/.claude-work" }

[[agents.claude.accounts]]
name = "home"
env = { CLAUDE_CONFIG_DIR = "/home/me/.claude-home" }

[prices."claude-sonnet-4-5"]
input = 2.5
output = 12

[prices."my-model"]
input = 1
output = 2

[budgets]
daily_usd = 50

[budgets.queues.nightly]
daily_usd = 12.5
)",
                             "config.toml", c);
  ASSERT_TRUE(s.ok()) << s.error().message();
  const agent::AgentProfile& mine = c.profiles["mine"];
  EXPECT_EQ(mine.family, agent::Family::kClaude);
  EXPECT_EQ(mine.resume_argv[1], "--resume");
  EXPECT_EQ(mine.limit_patterns, (std::vector<std::string>{"quota gone"}));
  const agent::AgentProfile& claude = c.profiles["claude"];
  EXPECT_EQ(claude.family, agent::Family::kClaude);  // the built-in keeps what is not set
  EXPECT_EQ(claude.argv, agent::BuiltInProfiles()["claude"].argv);
  ASSERT_EQ(claude.accounts.size(), 2u);
  EXPECT_EQ(claude.accounts[1].name, "home");
  EXPECT_EQ(claude.accounts[1].env,
            (std::vector<std::string>{"CLAUDE_CONFIG_DIR=/home/me/.claude-home"}));
  EXPECT_DOUBLE_EQ(c.prices.For("claude-sonnet-4-5-2025")->input, 2.5);
  EXPECT_DOUBLE_EQ(c.prices.For("claude-sonnet-4-5-2025")->cache_read, 0.30);  // kept
  EXPECT_DOUBLE_EQ(c.prices.For("my-model")->output, 2);
  EXPECT_DOUBLE_EQ(c.budgets.daily_usd, 50);
  EXPECT_DOUBLE_EQ(c.budgets.queue_daily_usd["nightly"], 12.5);

  struct Case {
    const char* toml;
    const char* needle;
  } bad[] = {
      {"[agents.x]\nadapter = \"claud\"\nargv = [\"x\"]\n", "unknown adapter 'claud'"},
      {"[agents.x]\nargv = [\"x\"]\nlimit_patterns = [\"(\"]\n", "does not compile"},
      {"[agents.x]\nargv = [\"x\"]\n[[agents.x.accounts]]\nenv = {}\n",
       "'agents.x.accounts.name' is required"},
      {"[agents.x]\nargv = [\"x\"]\naccounts = 3\n", "must be an array of tables"},
      {"[prices.m]\ninput = \"cheap\"\n", "'prices.\"m\".input' must be a number"},
      {"[budgets]\ndaily_usd = -1\n", "'budgets.daily_usd' must be a number"},
      {"[budgets]\nweekly_usd = 1\n", "unknown setting 'budgets.weekly_usd'"},
  };
  for (const auto& k : bad) {
    WorkerConfig fresh;
    Status r = ApplyConfigToml(k.toml, "config.toml", fresh);
    ASSERT_FALSE(r.ok()) << k.toml;
    EXPECT_NE(r.error().message().find(k.needle), std::string::npos) << r.error().message();
    EXPECT_EQ(fresh.profiles, agent::BuiltInProfiles()) << k.toml;
  }
}

TEST(SpawnPlan, TheSpecCarriesTheAgentArgvEnvironmentLogAndLimits) {
  WorkerConfig c;
  c.db_path = "/data/.tx/tx.db";
  c.logs_dir = "/data/.tx/logs";
  c.tx_binary = "/opt/tx/bin/tx";
  c.agent = "claude";
  c.allowed_commands = "task.done";
  c.limits.open_files = 100;
  Task t;
  t.id = "task-abcdefgh";
  t.title = "Title";
  t.workdir = "/repo";
  Claim claim;
  claim.token = 77;
  claim.worker_id = "worker-12345678";
  claim.attempt = 2;
  t.attempt = 2;
  const std::string socket = "/tmp/tx-agent-abc/tx.sock";
  auto plan =
      PlanSpawn(c, t, claim, {"HOME=/root", "PATH=/usr/bin:/bin", "TX_CLAIM_TOKEN=1", "TX_DB=/x"},
                nullptr, {}, {socket, "key-1"});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const exec::SpawnSpec& spec = plan->spec;
  ASSERT_EQ(spec.argv.size(), agent::BuiltInProfiles()["claude"].argv.size());
  EXPECT_EQ(spec.argv[0], "claude");
  EXPECT_EQ(spec.argv[1], "-p");
  EXPECT_EQ(spec.argv[2], BuildPrompt(t, 2));
  EXPECT_EQ(spec.argv[3], "--output-format");
  std::vector<std::string> want_env = {"HOME=/root",
                                       "PATH=/opt/tx/bin:/usr/bin:/bin",
                                       "TX_TASK_ID=task-abcdefgh",
                                       "TX_WORKER_ID=worker-12345678",
                                       "TX_CLAIM_TOKEN=77",
                                       "TX_ATTEMPT=2",
                                       "TX_AGENT_SOCKET=" + socket,
                                       "TX_AGENT_KEY=key-1",
                                       "TX_ALLOWED_COMMANDS=task.done",
                                       "TX_MAX_SUBTASKS=10"};
  EXPECT_EQ(spec.env, want_env) << "no TX_DB: the agent reaches the store through its worker";
  EXPECT_EQ(spec.cwd, "/repo");
  // A structured agent's raw output is kept beside the readable log the worker writes.
  EXPECT_EQ(spec.log_path, "/data/.tx/logs/task-abcdefgh/2.raw");
  EXPECT_EQ(plan->raw_log_path, "/data/.tx/logs/task-abcdefgh/2.raw");
  EXPECT_EQ(plan->log_path, "/data/.tx/logs/task-abcdefgh/2.log");
  EXPECT_EQ(spec.limits.open_files, 100u);
  EXPECT_EQ(plan->profile.name, "claude");
  EXPECT_FALSE(plan->resumed);

  // Two claims given back uncounted (a limit) later: the logs follow the claims, the prompt's
  // count the attempts that count.
  Claim later = claim;
  later.attempt = 4;
  plan = PlanSpawn(c, t, later, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->spec.argv[2].find("This is attempt 2 of "), std::string::npos);
  EXPECT_EQ(plan->log_path, "/data/.tx/logs/task-abcdefgh/4.log");

  t.metadata = {{"limits", {{"open_files", 50}, {"memory_mb", 256}}}};
  plan = PlanSpawn(c, t, claim, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->spec.limits.open_files, 50u);
  EXPECT_EQ(plan->spec.limits.memory_bytes, 256ull << 20);
  t.metadata = nlohmann::json::object();

  t.command = {"make", "test-{attempt}"};
  plan = PlanSpawn(c, t, claim, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->spec.argv, (std::vector<std::string>{"make", "test-2"}));
  EXPECT_TRUE(plan->is_command);
  EXPECT_EQ(plan->spec.log_path, "/data/.tx/logs/task-abcdefgh/2.log");  // plain: one log
  EXPECT_EQ(plan->raw_log_path, "");
  t.command.clear();
  t.agent = "nosuch";
  EXPECT_FALSE(PlanSpawn(c, t, claim, {}).ok());
}

TEST(SpawnPlan, AResumeRunsTheResumeFormUnderTheSessionsAccount) {
  WorkerConfig c;
  c.db_path = "/data/.tx/tx.db";
  c.logs_dir = "/data/.tx/logs";
  c.profiles["claude"].accounts = {{"work", {"CLAUDE_CONFIG_DIR=/c/work", "PATH=/opt/claude"}},
                                   {"home", {"CLAUDE_CONFIG_DIR=/c/home"}}};
  Task t;
  t.id = "task-abcdefgh";
  t.agent = "claude";
  Claim claim;
  claim.attempt = 3;
  RunChoice choice;
  choice.account = "work";
  choice.resume = agent::ResumePlan{"sess-9", "work", "Fix the test", {}};
  auto plan = PlanSpawn(c, t, claim, {"CLAUDE_CONFIG_DIR=/mine", "PATH=/usr/bin", "HOME=/h"},
                        nullptr, choice);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(plan->resumed);
  EXPECT_EQ(plan->session_id, "sess-9");
  EXPECT_EQ(plan->account, "work");
  const auto& argv = plan->spec.argv;
  ASSERT_GE(argv.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 5),
            (std::vector<std::string>{"claude", "--resume", "sess-9", "-p", "Fix the test"}));
  auto has = [&](const std::string& kv) {
    return std::count(plan->spec.env.begin(), plan->spec.env.end(), kv) == 1;
  };
  // The account's variables replace the worker's.
  EXPECT_TRUE(has("CLAUDE_CONFIG_DIR=/c/work"));
  EXPECT_FALSE(has("CLAUDE_CONFIG_DIR=/mine"));
  EXPECT_TRUE(has("PATH=/opt/claude"));
  EXPECT_TRUE(has("HOME=/h"));

  // Codex may write its worker's socket's directory from its sandbox; a resume keeps its options
  // first.
  t.agent = "codex";
  choice = {};
  choice.resume = agent::ResumePlan{"th-1", "", "go on", {}};
  plan = PlanSpawn(c, t, claim, {}, nullptr, choice, {"/tmp/tx-agent-abc/tx.sock", "k"});
  ASSERT_TRUE(plan.ok());
  const auto& cx = plan->spec.argv;
  EXPECT_EQ(std::vector<std::string>(cx.begin(), cx.begin() + 4),
            (std::vector<std::string>{"codex", "exec", "--add-dir", "/tmp/tx-agent-abc"}));
  EXPECT_EQ(std::vector<std::string>(cx.end() - 3, cx.end()),
            (std::vector<std::string>{"resume", "th-1", "go on"}));
}

TEST(SpawnPlan, InAWorktreeTheAgentRunsThereWithItsBranchAfterTheRepositorysSetup) {
  WorkerConfig c;
  c.git.setup = {"make deps"};
  c.git_repos["/other"].setup = std::vector<std::string>{};
  Task t;
  t.id = "task-abcdefgh";
  t.title = "Title";
  t.repo = "/repo";
  t.command = {"agent", "{workdir}", "{prompt}"};
  Claim claim;
  claim.attempt = 1;
  git::Worktree wt{"/repo", "/repo/.tx/worktrees/task-abcdefgh",  "tx/task-abcdefgh",
                   "main",  "/repo/.git/worktrees/task-abcdefgh", true,
                   true};
  auto plan = PlanSpawn(c, t, claim, {"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b"}, &wt);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const exec::SpawnSpec* spec = &plan->spec;
  EXPECT_EQ(spec->cwd, wt.path);
  std::string prompt = AgentPrompt(t, 1, &wt);
  EXPECT_NE(prompt.find("Working directory: " + wt.path), std::string::npos);
  EXPECT_NE(prompt.find("on branch tx/task-abcdefgh (made from main)"), std::string::npos);
  EXPECT_EQ(spec->argv, git::WithSetup(wt, {"make deps"}, {"agent", wt.path, prompt}));
  auto has = [&](const std::string& kv) {
    return std::count(spec->env.begin(), spec->env.end(), kv) == 1;
  };
  EXPECT_TRUE(has("TX_WORKTREE=" + wt.path));
  EXPECT_TRUE(has("TX_BRANCH=tx/task-abcdefgh"));
  EXPECT_TRUE(has("GIT_CONFIG_KEY_0=a.b"));
  EXPECT_TRUE(has("GIT_CONFIG_KEY_1=core.excludesFile"));
  EXPECT_TRUE(has("GIT_CONFIG_COUNT=2"));
  EXPECT_FALSE(has("GIT_CONFIG_COUNT=1"));

  wt.needs_setup = false;  // set up by an earlier attempt
  plan = PlanSpawn(c, t, claim, {}, &wt);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->spec.argv, (std::vector<std::string>{"agent", wt.path, prompt}));
  wt.needs_setup = true;
  t.repo = "/other";  // whose setup is none
  plan = PlanSpawn(c, t, claim, {}, &wt);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->spec.argv[0], "agent");
}

TEST(WorkerConfig, MaxSubtasksIsReadAndReachesTheAgentsEnvironment_Issue22) {
  WorkerConfig c;
  EXPECT_EQ(c.max_subtasks, 10);
  ASSERT_TRUE(ApplyConfigToml("[worker]\nmax_subtasks = 3\n", "config.toml", c).ok());
  EXPECT_EQ(c.max_subtasks, 3);
  ASSERT_TRUE(ApplyConfigToml("[worker]\nmax_subtasks = 0\n", "config.toml", c).ok());
  EXPECT_EQ(c.max_subtasks, 0);
  for (const char* bad : {"[worker]\nmax_subtasks = -1\n", "[worker]\nmax_subtasks = 1001\n",
                          "[worker]\nmax_subtasks = \"5\"\n"}) {
    WorkerConfig fresh;
    Status s = ApplyConfigToml(bad, "config.toml", fresh);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message().find("'worker.max_subtasks' must be an integer from 0 to 1000"),
              std::string::npos)
        << s.error().message();
    EXPECT_EQ(fresh.max_subtasks, 10);
  }
  c.db_path = "/data/.tx/tx.db";
  c.agent = "generic";
  Task t;
  t.id = "task-abcdefgh";
  t.title = "t";
  Claim claim;
  claim.token = 5;
  claim.attempt = 1;
  auto plan = PlanSpawn(c, t, claim, {"TX_MAX_SUBTASKS=99"});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(std::count(plan->spec.env.begin(), plan->spec.env.end(), "TX_MAX_SUBTASKS=0"), 1);
  EXPECT_EQ(std::count(plan->spec.env.begin(), plan->spec.env.end(), "TX_MAX_SUBTASKS=99"), 0);
}

TEST(WorkerConfig, PassEnvReplacesTheDefaultListAndBadPatternsAreRefusedNamingIt_Issue25) {
  WorkerConfig c;
  EXPECT_EQ(c.pass_env, std::vector<std::string>(kDefaultPassEnv.begin(), kDefaultPassEnv.end()));
  for (const char* name : {"PATH", "HOME", "LC_*", "ANTHROPIC_*", "OPENAI_*", "GIT_*",
                           "SSH_AUTH_SOCK", "https_proxy", "SSL_CERT_DIR"}) {
    EXPECT_NE(std::find(c.pass_env.begin(), c.pass_env.end(), name), c.pass_env.end()) << name;
  }
  ASSERT_TRUE(ApplyConfigToml("[worker]\npass_env = [\"PATH\", \"MY_TOOL_*\", \"*_lower9\"]\n",
                              "config.toml", c)
                  .ok());
  EXPECT_EQ(c.pass_env, (std::vector<std::string>{"PATH", "MY_TOOL_*", "*_lower9"}));
  ASSERT_TRUE(ApplyConfigToml("[worker]\npass_env = []\n", "config.toml", c).ok());
  EXPECT_TRUE(c.pass_env.empty());

  struct Case {
    const char* toml;
    const char* needle;
  } cases[] = {
      {"[worker]\npass_env = \"PATH\"\n", "'worker.pass_env' must be an array of strings"},
      {"[worker]\npass_env = [\"PATH\", 3]\n", "'worker.pass_env' must be an array of strings"},
      {"[worker]\npass_env = [\"PATH\", \"\"]\n",
       "'worker.pass_env' must be an array of variable "
       "name patterns (letters, digits, '_' and '*'), "
       "not ''"},
      {"[worker]\npass_env = [\"MY-TOOL\"]\n",
       "'worker.pass_env' must be an array of variable "
       "name patterns (letters, digits, '_' and '*'), not "
       "'MY-TOOL'"},
      {"[worker]\npass_env = [\"A=B\"]\n", "not 'A=B'"},
      {"[worker]\npass_env = [\"LC_?\"]\n", "not 'LC_?'"},
      {"[worker]\npass_env = [\" HOME\"]\n", "not ' HOME'"},
  };
  for (const auto& k : cases) {
    WorkerConfig fresh;
    Status s = ApplyConfigToml(k.toml, "config.toml", fresh);
    ASSERT_FALSE(s.ok()) << k.toml;
    EXPECT_NE(s.error().message().find(k.needle), std::string::npos) << s.error().message();
    EXPECT_EQ(fresh.pass_env,
              std::vector<std::string>(kDefaultPassEnv.begin(), kDefaultPassEnv.end()));
  }
}

TEST(WorkerConfig, ImageGcAfterIsADurationOfAWeekByDefaultAndBadValuesAreRefusedByName_Issue25) {
  WorkerConfig c;
  EXPECT_EQ(c.sandbox.image_gc_after_ms, 7 * 24 * 3'600'000);
  ASSERT_TRUE(ApplyConfigToml("[sandbox]\nimage_gc_after = \"36h\"\n", "config.toml", c).ok());
  EXPECT_EQ(c.sandbox.image_gc_after_ms, 36 * 3'600'000);
  ASSERT_TRUE(ApplyConfigToml("[sandbox]\nimage_gc_after = \"2d\"\n", "config.toml", c).ok());
  EXPECT_EQ(c.sandbox.image_gc_after_ms, 2 * 24 * 3'600'000);
  for (const char* bad :
       {"[sandbox]\nimage_gc_after = \"soon\"\n", "[sandbox]\nimage_gc_after = 7\n"}) {
    WorkerConfig fresh;
    Status s = ApplyConfigToml(bad, "config.toml", fresh);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find("config.toml: 'sandbox.image_gc_after' must be a duration"),
              std::string::npos)
        << s.error().message();
    EXPECT_EQ(fresh.sandbox.image_gc_after_ms, 7 * 24 * 3'600'000);
  }
}

TEST(SpawnPlan, AContainerPlanNamesTheImageItRuns_Issue25) {
  WorkerConfig c;
  c.tx_binary = "/opt/tx/bin/tx";
  c.local_dir = "/data/.tx";
  Task t;
  t.id = "task-abcdefgh";
  t.command = {"true"};
  t.requires_caps = {"gpu"};
  Claim claim;
  claim.worker_id = "worker-12345678";
  claim.attempt = 1;
  Result<AttemptPlan> plain = PlanSpawn(c, t, claim, {});
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_EQ(plain->image, "");
  c.sandbox.kind = SandboxKind::kPodman;
  c.sandbox.images = {{"default", "localhost/agents:1"}, {"gpu", "localhost/agents-cuda:1"}};
  Result<AttemptPlan> contained = PlanSpawn(c, t, claim, {});
  ASSERT_TRUE(contained.ok()) << contained.error().message();
  EXPECT_EQ(contained->image, "localhost/agents-cuda:1");
}

TEST(SpawnPlan, OnlyTheWorkersVariablesPassEnvNamesReachTheAgent_Issue25) {
  WorkerConfig c;
  c.db_path = "/data/.tx/tx.db";
  c.logs_dir = "/data/.tx/logs";
  c.tx_binary = "/opt/tx/bin/tx";
  c.agent = "generic";
  c.profiles["claude"].accounts = {{"work", {"CLAUDE_CONFIG_DIR=/c/work", "VAULT_TOKEN=v"}}};
  Task t;
  t.id = "task-abcdefgh";
  t.title = "t";
  Claim claim;
  claim.token = 5;
  claim.worker_id = "worker-12345678";
  claim.attempt = 1;
  std::vector<std::string> worker_env = {"PATH=/usr/bin:/bin",
                                         "HOME=/home/op",
                                         "LC_ALL=C.UTF-8",
                                         "ANTHROPIC_API_KEY=sk-ant",
                                         "AWS_SECRET_ACCESS_KEY=aws",
                                         "DATABASE_URL=postgres://u:pw@h/db",
                                         "MY_TOOL_HOME=/t",
                                         "TX_API_TOKEN=tok",
                                         "TX_DB=/other.db",
                                         "TX_TEST_SECRET=hunter2"};
  auto env_of = [&](const WorkerConfig& config, const RunChoice& choice = {}) {
    Result<AttemptPlan> plan = PlanSpawn(config, t, claim, worker_env, nullptr, choice);
    EXPECT_TRUE(plan.ok()) << plan.error().message();
    return plan.ok() ? plan->spec.env : std::vector<std::string>{};
  };
  auto has = [](const std::vector<std::string>& env, const std::string& kv) {
    return std::count(env.begin(), env.end(), kv) == 1;
  };
  auto names = [](const std::vector<std::string>& env) {
    std::vector<std::string> out;
    for (const auto& kv : env) out.push_back(kv.substr(0, kv.find('=')));
    return out;
  };

  // The default list: what agent CLIs need, and nothing else of the worker's; no TX_* of its own.
  std::vector<std::string> env = env_of(c);
  EXPECT_EQ(names(env), (std::vector<std::string>{"HOME", "LC_ALL", "ANTHROPIC_API_KEY", "PATH",
                                                  "TX_TASK_ID", "TX_WORKER_ID", "TX_CLAIM_TOKEN",
                                                  "TX_ATTEMPT", "TX_MAX_SUBTASKS"}));
  EXPECT_TRUE(has(env, "PATH=/opt/tx/bin:/usr/bin:/bin"));
  EXPECT_TRUE(has(env, "ANTHROPIC_API_KEY=sk-ant"));

  // An operator's list replaces the default: a matched pattern passes, the rest (even
  // ANTHROPIC_*) does not. Without PATH in it, the agent still gets one that finds tx.
  WorkerConfig own = c;
  own.pass_env = {"MY_TOOL_*", "HOME", "TX_*"};
  env = env_of(own);
  EXPECT_EQ(names(env),
            (std::vector<std::string>{"HOME", "MY_TOOL_HOME", "PATH", "TX_TASK_ID", "TX_WORKER_ID",
                                      "TX_CLAIM_TOKEN", "TX_ATTEMPT", "TX_MAX_SUBTASKS"}));
  EXPECT_TRUE(has(env, "MY_TOOL_HOME=/t"));
  EXPECT_TRUE(has(env, "PATH=/opt/tx/bin:/usr/local/bin:/usr/bin:/bin"));
  EXPECT_FALSE(has(env, "TX_API_TOKEN=tok"));
  EXPECT_FALSE(has(env, "TX_TEST_SECRET=hunter2"));

  // "*" is everything of the worker's but its TX_* variables.
  own.pass_env = {"*"};
  env = env_of(own);
  EXPECT_TRUE(has(env, "AWS_SECRET_ACCESS_KEY=aws"));
  EXPECT_FALSE(has(env, "TX_TEST_SECRET=hunter2"));
  EXPECT_FALSE(has(env, "TX_DB=/other.db"));

  // Nothing at all: the task's variables and a PATH.
  own.pass_env = {};
  env = env_of(own);
  EXPECT_EQ(names(env),
            (std::vector<std::string>{"PATH", "TX_TASK_ID", "TX_WORKER_ID", "TX_CLAIM_TOKEN",
                                      "TX_ATTEMPT", "TX_MAX_SUBTASKS"}));

  // An account's variables are configured for the agent: they pass whatever pass_env says.
  t.agent = "claude";
  RunChoice work;
  work.account = "work";
  env = env_of(own, work);
  EXPECT_TRUE(has(env, "CLAUDE_CONFIG_DIR=/c/work"));
  EXPECT_TRUE(has(env, "VAULT_TOKEN=v"));
  EXPECT_FALSE(has(env, "ANTHROPIC_API_KEY=sk-ant"));

  // In a worktree, git's count goes on from the GIT_CONFIG_COUNT that passed, not from one
  // pass_env held back (which would leave a key git refuses).
  t.agent = "generic";
  worker_env = {"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=c"};
  git::Worktree wt{"/repo", "/repo/.tx/worktrees/task-abcdefgh",  "tx/task-abcdefgh",
                   "main",  "/repo/.git/worktrees/task-abcdefgh", true,
                   false};
  own.pass_env = {"PATH"};
  Result<AttemptPlan> plan = PlanSpawn(own, t, claim, worker_env, &wt);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(has(plan->spec.env, "GIT_CONFIG_KEY_0=core.excludesFile"));
  EXPECT_TRUE(has(plan->spec.env, "GIT_CONFIG_COUNT=1"));
  EXPECT_FALSE(has(plan->spec.env, "GIT_CONFIG_KEY_0=a.b"));
}

TEST(SpawnPlan, AProfileWithMcpRegistersTxsServerForTheRun_Issue22) {
  WorkerConfig c;
  ASSERT_TRUE(
      ApplyConfigToml("[agents.claude]\nmcp = true\n[agents.codex]\nmcp = true\n", "config.toml", c)
          .ok());
  EXPECT_TRUE(c.profiles["claude"].mcp);
  EXPECT_EQ(c.profiles["claude"].argv, agent::BuiltInProfiles()["claude"].argv);  // kept
  c.db_path = "/data/.tx/tx.db";
  c.logs_dir = "/data/.tx/logs";
  c.tx_binary = "/opt/tx/bin/tx";
  Task t;
  t.id = "task-abcdefgh";
  t.title = "t";
  t.agent = "claude";
  Claim claim;
  claim.token = 5;
  claim.worker_id = "worker-12345678";
  claim.attempt = 1;
  auto plan = PlanSpawn(c, t, claim, {"PATH=/bin"});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const auto& argv = plan->spec.argv;
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[0], "claude");
  EXPECT_EQ(argv[1], "--mcp-config");
  EXPECT_EQ(argv[2], R"({"mcpServers":{"tx":{"args":["mcp"],"command":"/opt/tx/bin/tx"}}})");
  EXPECT_EQ(argv[3], "-p");
  EXPECT_EQ((std::vector<std::string>(argv.end() - 3, argv.end())),
            (std::vector<std::string>{"--allowedTools", "mcp__tx", "Bash(tx:*)"}));

  t.agent = "codex";
  plan = PlanSpawn(c, t, claim, {"PATH=/bin"}, nullptr, {}, {"/tmp/tx-agent-abc/tx.sock", "k"});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  std::vector<std::string> head(plan->spec.argv.begin(), plan->spec.argv.begin() + 10);
  EXPECT_EQ(
      head,
      (std::vector<std::string>{
          "codex", "exec", "-c", R"(mcp_servers.tx.command="/opt/tx/bin/tx")", "-c",
          R"(mcp_servers.tx.args=["mcp"])", "-c",
          R"(mcp_servers.tx.env_vars=["TX_TASK_ID","TX_WORKER_ID","TX_CLAIM_TOKEN","TX_ATTEMPT","TX_AGENT_SOCKET","TX_AGENT_KEY","TX_MAX_SUBTASKS"])",
          "--add-dir", "/tmp/tx-agent-abc"}));

  // Only the adapters that can take a server may ask for one.
  WorkerConfig other;
  Status s = ApplyConfigToml("[agents.mine]\nargv = [\"x\", \"{prompt}\"]\nmcp = true\n",
                             "config.toml", other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("mcp = true needs the claude or codex adapter"),
            std::string::npos)
      << s.error().message();
}

}  // namespace
}  // namespace tx::worker
