#include "worker/config.h"

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/argv.h"
#include "core/duration.h"
#include "core/toml_text.h"
#include "core/validation.h"
#include "exec/program.h"
#include "git/git.h"

namespace tx::worker {
namespace {

// [worker], [agents], [git], [prices], [budgets], [api] and [sandbox] as they have always been
// read: an integer may be written 3.0 and a bool 1 (TomlTyping::kConverting), and a key nobody
// asked for is refused as an "unknown setting".
class Table : public TomlTable {
 public:
  Table(const toml::table& t, std::string prefix, std::string origin)
      : TomlTable(t, std::move(prefix), std::move(origin), TomlTyping::kConverting) {}

  Status Duration(std::string_view key, Millis& out) {
    if (Find(key) == nullptr) return Ok();
    std::string s;
    TX_RETURN_IF_ERROR(String(key, s, "a duration string such as \"30s\""));
    Result<Millis> ms = ParseDuration(s);
    if (!ms.ok()) return MustBe(key, "a duration such as \"30s\" or \"7d\", not '" + s + "'");
    out = *ms;
    return Ok();
  }

  // Patterns of environment variable names: letters, digits, '_' and '*' (any run of them).
  Status NamePatterns(std::string_view key, std::vector<std::string>& out) {
    std::vector<std::string> v = out;
    TX_RETURN_IF_ERROR(Strings(key, v));
    for (const auto& p : v) {
      bool ok = !p.empty();
      for (char ch : p) {
        ok = ok && ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '*');
      }
      if (!ok) {
        return MustBe(
            key,
            "an array of variable name patterns (letters, digits, '_' and '*'), not '" + p + "'");
      }
    }
    out = std::move(v);
    return Ok();
  }

  // An integer from 1 to `max`.
  template <typename T>
  Status Count(std::string_view key, std::optional<T>& out, std::int64_t max) {
    if (Find(key) == nullptr) return Ok();
    T v{};
    TX_RETURN_IF_ERROR(Integer(key, 1, max, v, "a positive integer"));
    out = v;
    return Ok();
  }

  // "rebase" (true) or "merge" (false).
  Status Strategy(std::string_view key, std::optional<bool>& rebase) {
    if (Find(key) == nullptr) return Ok();
    std::string s;
    TX_RETURN_IF_ERROR(String(key, s, "\"rebase\" or \"merge\""));
    if (s != "rebase" && s != "merge") return MustBe(key, "\"rebase\" or \"merge\"");
    rebase = s == "rebase";
    return Ok();
  }

  // A count from 0 to 64.
  Status Spares(std::string_view key, int& out) { return Between(key, out, 0, 64); }

  // An integer from `min` to `max`.
  Status Between(std::string_view key, int& out, int min, int max) {
    return Integer(key, min, max, out,
                   "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }

  // An absolute path (the repository a task is isolated in: read alike on every machine).
  Status AbsolutePath(std::string_view key, std::string& out) {
    TX_RETURN_IF_ERROR(String(key, out));
    if (!out.empty() && out[0] != '/') return MustBe(key, "an absolute path");
    if (!out.empty()) {
      out = std::filesystem::path(out).lexically_normal().string();
      if (out.size() > 1 && out.back() == '/') out.pop_back();
    }
    return Ok();
  }

  // A non-negative amount of dollars: an integer or a float.
  Status Dollars(std::string_view key, double& out) {
    if (Find(key) == nullptr) return Ok();
    double v = 0;
    TX_RETURN_IF_ERROR(Number(key, v, "a number of dollars, 0 or more"));
    if (!(v >= 0) || v > 1e9) return MustBe(key, "a number of dollars, 0 or more");
    out = v;
    return Ok();
  }
};

Status ApplyWorker(const toml::table& w, const std::string& origin, WorkerConfig& c) {
  Table t(w, "worker.", origin);
  TX_RETURN_IF_ERROR(t.Duration("heartbeat_interval", c.heartbeat_idle_ms));
  TX_RETURN_IF_ERROR(t.Duration("heartbeat_interval_running", c.heartbeat_running_ms));
  // The heartbeat interval alone: the running one is half of it, as with --heartbeat-interval.
  if (w.contains("heartbeat_interval") && !w.contains("heartbeat_interval_running")) {
    c.heartbeat_running_ms = std::max<Millis>(1, c.heartbeat_idle_ms / 2);
  }
  TX_RETURN_IF_ERROR(t.Duration("lease", c.lease_ms));
  TX_RETURN_IF_ERROR(t.Duration("stall_timeout", c.stall_timeout_ms));
  TX_RETURN_IF_ERROR(t.Duration("task_timeout_cap", c.task_timeout_cap_ms));
  TX_RETURN_IF_ERROR(t.Duration("shutdown_timeout", c.shutdown_timeout_ms));
  TX_RETURN_IF_ERROR(t.Duration("kill_grace", c.kill_grace_ms));
  TX_RETURN_IF_ERROR(t.Duration("poll_interval", c.poll_ms));
  TX_RETURN_IF_ERROR(t.String("agent", c.agent));
  TX_RETURN_IF_ERROR(t.String("allowed_commands", c.allowed_commands));
  TX_RETURN_IF_ERROR(t.NamePatterns("pass_env", c.pass_env));
  TX_RETURN_IF_ERROR(t.String("workdir", c.workdir));
  std::string sandbox;
  TX_RETURN_IF_ERROR(t.String("sandbox", sandbox));
  if (!sandbox.empty()) {
    Result<SandboxKind> kind = ParseSandboxKind(sandbox);
    if (!kind.ok())
      return Error::InvalidArgument(origin + ": worker.sandbox: " + kind.error().message());
    c.sandbox.kind = *kind;
  }
  TX_RETURN_IF_ERROR(t.Strings("capabilities", c.capabilities));
  TX_RETURN_IF_ERROR(t.Strings("queues", c.queues));
  TX_RETURN_IF_ERROR(t.Between("max_subtasks", c.max_subtasks, 0, kMaxSubtasksSetting));
  std::optional<std::uint64_t> log_cap_mb;
  TX_RETURN_IF_ERROR(t.Count("log_cap_mb", log_cap_mb, 1 << 20));
  if (log_cap_mb) c.log_cap_bytes = *log_cap_mb << 20;
  t.Known("limits");
  TX_RETURN_IF_ERROR(t.RefuseUnknown());

  if (const toml::node* n = w.get("limits")) {
    const toml::table* lt = n->as_table();
    if (lt == nullptr) {
      return Error::InvalidArgument(origin + ": 'worker.limits' must be a table");
    }
    Table l(*lt, "worker.limits.", origin);
    std::optional<std::uint64_t> memory_mb, address_space_mb;
    TX_RETURN_IF_ERROR(l.Count("memory_mb", memory_mb, 1ll << 40));
    TX_RETURN_IF_ERROR(l.Count("address_space_mb", address_space_mb, 1ll << 40));
    TX_RETURN_IF_ERROR(l.Count("cpu_percent", c.limits.cpu_percent, 100 * 1024));
    TX_RETURN_IF_ERROR(l.Count("cpu_seconds", c.limits.cpu_seconds, 1ll << 40));
    TX_RETURN_IF_ERROR(l.Count("open_files", c.limits.open_files, 1 << 24));
    TX_RETURN_IF_ERROR(l.Count("processes", c.limits.processes, 1 << 24));
    TX_RETURN_IF_ERROR(l.RefuseUnknown());
    if (memory_mb) c.limits.memory_bytes = *memory_mb << 20;
    if (address_space_mb) c.limits.address_space_bytes = *address_space_mb << 20;
  }
  return Ok();
}

// [[agents.NAME.accounts]]: name = "...", env = { NAME = "value", ... }.
Status ApplyAccounts(const toml::node& node, const std::string& prefix, const std::string& origin,
                     std::vector<agent::Account>& out) {
  const toml::array* a = node.as_array();
  if (a == nullptr) {
    return Error::InvalidArgument(origin + ": '" + prefix + "accounts' must be an array of tables");
  }
  std::vector<agent::Account> accounts;
  for (const auto& e : *a) {
    const toml::table* t = e.as_table();
    if (t == nullptr) {
      return Error::InvalidArgument(origin + ": '" + prefix +
                                    "accounts' must be an array of tables");
    }
    Table at(*t, prefix + "accounts.", origin);
    agent::Account account;
    TX_RETURN_IF_ERROR(at.String("name", account.name));
    at.Known("env");
    TX_RETURN_IF_ERROR(at.RefuseUnknown());
    if (account.name.empty()) {
      return Error::InvalidArgument(origin + ": '" + prefix + "accounts.name' is required");
    }
    if (const toml::node* env = t->get("env")) {
      const toml::table* et = env->as_table();
      if (et == nullptr) {
        return Error::InvalidArgument(origin + ": '" + prefix + "accounts.env' must be a table");
      }
      for (const auto& [k, v] : *et) {
        auto value = v.value<std::string>();
        if (!value) {
          return Error::InvalidArgument(origin + ": '" + prefix + "accounts.env." +
                                        std::string(k.str()) + "' must be a string");
        }
        account.env.push_back(std::string(k.str()) + "=" + *value);
      }
    }
    accounts.push_back(std::move(account));
  }
  out = std::move(accounts);
  return Ok();
}

Status ApplyAgents(const toml::table& agents, const std::string& origin, WorkerConfig& c) {
  for (const auto& [key, node] : agents) {
    std::string name(key.str());
    TX_RETURN_IF_ERROR(ValidateName("agent profile", name));
    const toml::table* p = node.as_table();
    if (p == nullptr) {
      return Error::InvalidArgument(origin + ": 'agents." + name + "' must be a table");
    }
    std::string prefix = "agents." + name + ".";
    Table t(*p, prefix, origin);
    // A built-in profile keeps what the table does not set; a new one starts generic.
    agent::AgentProfile profile;
    if (auto it = c.profiles.find(name); it != c.profiles.end()) profile = it->second;
    profile.name = name;
    std::string adapter;
    TX_RETURN_IF_ERROR(t.String("adapter", adapter));
    if (!adapter.empty()) {
      Result<agent::Family> family = agent::ParseFamily(adapter);
      if (!family.ok()) {
        return Error::InvalidArgument(origin + ": '" + prefix +
                                      "adapter': " + family.error().message());
      }
      profile.family = *family;
    }
    bool has_argv = p->get("argv") != nullptr;
    TX_RETURN_IF_ERROR(t.Strings("argv", profile.argv));
    TX_RETURN_IF_ERROR(t.Strings("resume_argv", profile.resume_argv));
    TX_RETURN_IF_ERROR(t.Strings("limit_patterns", profile.limit_patterns));
    TX_RETURN_IF_ERROR(t.Bool("mcp", profile.mcp));
    // A new argv for a built-in drops the built-in's own resume form (it may not fit).
    if (has_argv && p->get("resume_argv") == nullptr && c.profiles.count(name) > 0) {
      profile.resume_argv.clear();
    }
    t.Known("accounts");
    TX_RETURN_IF_ERROR(t.RefuseUnknown());
    if (const toml::node* accounts = p->get("accounts")) {
      TX_RETURN_IF_ERROR(ApplyAccounts(*accounts, prefix, origin, profile.accounts));
    }
    if (profile.argv.empty()) {
      return Error::InvalidArgument(origin + ": '" + prefix + "argv' is required");
    }
    if (Status s = agent::ValidateProfile(profile); !s.ok()) {
      return Error::InvalidArgument(origin + ": " + s.error().message());
    }
    c.profiles[name] = std::move(profile);
  }
  return Ok();
}

// [prices."MODEL"]: input, output, cache_read, cache_write in USD per million tokens.
Status ApplyPrices(const toml::table& prices, const std::string& origin, WorkerConfig& c) {
  for (const auto& [key, node] : prices) {
    std::string model(key.str());
    std::string prefix = "prices.\"" + model + "\".";
    const toml::table* p = node.as_table();
    if (p == nullptr) {
      return Error::InvalidArgument(origin + ": 'prices.\"" + model + "\"' must be a table");
    }
    agent::Price price;
    if (const agent::Price* known = c.prices.For(model)) price = *known;
    Table t(*p, prefix, origin);
    TX_RETURN_IF_ERROR(t.Dollars("input", price.input));
    TX_RETURN_IF_ERROR(t.Dollars("output", price.output));
    TX_RETURN_IF_ERROR(t.Dollars("cache_read", price.cache_read));
    TX_RETURN_IF_ERROR(t.Dollars("cache_write", price.cache_write));
    TX_RETURN_IF_ERROR(t.RefuseUnknown());
    c.prices.Set(model, price);
  }
  return Ok();
}

// [budgets] daily_usd, [budgets.queues.NAME] daily_usd.
Status ApplyBudgets(const toml::table& b, const std::string& origin, WorkerConfig& c) {
  Table t(b, "budgets.", origin);
  TX_RETURN_IF_ERROR(t.Dollars("daily_usd", c.budgets.daily_usd));
  t.Known("queues");
  TX_RETURN_IF_ERROR(t.RefuseUnknown());
  const toml::node* queues = b.get("queues");
  if (queues == nullptr) return Ok();
  const toml::table* qt = queues->as_table();
  if (qt == nullptr) return Error::InvalidArgument(origin + ": 'budgets.queues' must be a table");
  for (const auto& [key, node] : *qt) {
    std::string queue(key.str());
    TX_RETURN_IF_ERROR(ValidateName("queue", queue));
    const toml::table* one = node.as_table();
    if (one == nullptr) {
      return Error::InvalidArgument(origin + ": 'budgets.queues." + queue + "' must be a table");
    }
    Table q(*one, "budgets.queues." + queue + ".", origin);
    double daily = 0;
    TX_RETURN_IF_ERROR(q.Dollars("daily_usd", daily));
    TX_RETURN_IF_ERROR(q.RefuseUnknown());
    c.budgets.queue_daily_usd[queue] = daily;
  }
  return Ok();
}

// [git.queues.NAME]: isolation asked for on behalf of the tasks of one queue.
Status ApplyGitQueues(const toml::table& g, const std::string& origin, WorkerConfig& c) {
  const toml::node* queues = g.get("queues");
  if (queues == nullptr) return Ok();
  const toml::table* qt = queues->as_table();
  if (qt == nullptr) return Error::InvalidArgument(origin + ": 'git.queues' must be a table");
  for (const auto& [key, node] : *qt) {
    std::string queue(key.str());
    std::string prefix = "git.queues." + queue;
    const toml::table* one = node.as_table();
    if (one == nullptr)
      return Error::InvalidArgument(origin + ": '" + prefix + "' must be a table");
    Table q(*one, prefix + ".", origin);
    QueueGit s;
    TX_RETURN_IF_ERROR(q.AbsolutePath("repo", s.repo));
    TX_RETURN_IF_ERROR(q.String("base", s.base));
    TX_RETURN_IF_ERROR(q.Bool("review", s.review));
    TX_RETURN_IF_ERROR(q.Bool("auto_merge", s.auto_merge));
    std::string sandbox;
    TX_RETURN_IF_ERROR(q.String("sandbox", sandbox));
    if (!sandbox.empty()) {
      Result<SandboxKind> kind = ParseSandboxKind(sandbox);
      if (!kind.ok()) {
        return Error::InvalidArgument(origin + ": " + prefix +
                                      ".sandbox: " + kind.error().message());
      }
      s.sandbox = *kind;
    }
    TX_RETURN_IF_ERROR(q.RefuseUnknown());
    bool git_only = !s.base.empty() || s.review || s.auto_merge;
    if (s.repo.empty() && (git_only || sandbox.empty())) {
      return Error::InvalidArgument(origin + ": '" + prefix + ".repo' is required" +
                                    (sandbox.empty() ? "" : " with base, review or auto_merge"));
    }
    c.git_queues[queue] = std::move(s);
  }
  return Ok();
}

Status ApplyGit(const toml::table& g, const std::string& origin, WorkerConfig& c) {
  Table t(g, "git.", origin);
  TX_RETURN_IF_ERROR(t.String("base", c.git.base));
  TX_RETURN_IF_ERROR(t.AbsolutePath("repo", c.git_repo));
  TX_RETURN_IF_ERROR(t.Strings("setup", c.git.setup));
  TX_RETURN_IF_ERROR(t.Spares("spare_worktrees", c.git.spare_worktrees));
  TX_RETURN_IF_ERROR(t.String("check", c.git.check));
  std::optional<bool> rebase;
  TX_RETURN_IF_ERROR(t.Strategy("merge", rebase));
  if (rebase) c.git.rebase = *rebase;
  t.Known("repos");
  t.Known("queues");
  TX_RETURN_IF_ERROR(t.RefuseUnknown());
  TX_RETURN_IF_ERROR(ApplyGitQueues(g, origin, c));
  const toml::node* repos = g.get("repos");
  if (repos == nullptr) return Ok();
  const toml::table* rt = repos->as_table();
  if (rt == nullptr) return Error::InvalidArgument(origin + ": 'git.repos' must be a table");
  for (const auto& [key, node] : *rt) {
    std::string repo(key.str());
    std::string prefix = "git.repos.\"" + repo + "\"";
    const toml::table* one = node.as_table();
    if (one == nullptr)
      return Error::InvalidArgument(origin + ": '" + prefix + "' must be a table");
    Table r(*one, prefix + ".", origin);
    GitRepoSettings s;
    if (one->get("base") != nullptr) TX_RETURN_IF_ERROR(r.String("base", s.base.emplace()));
    if (one->get("setup") != nullptr) TX_RETURN_IF_ERROR(r.Strings("setup", s.setup.emplace()));
    if (one->get("spare_worktrees") != nullptr) {
      TX_RETURN_IF_ERROR(r.Spares("spare_worktrees", s.spare_worktrees.emplace()));
    }
    if (one->get("check") != nullptr) TX_RETURN_IF_ERROR(r.String("check", s.check.emplace()));
    TX_RETURN_IF_ERROR(r.Strategy("merge", s.rebase));
    r.Known("base");
    r.Known("setup");
    r.Known("spare_worktrees");
    r.Known("check");
    TX_RETURN_IF_ERROR(r.RefuseUnknown());
    c.git_repos[repo] = std::move(s);
  }
  return Ok();
}

}  // namespace

git::Settings GitSettingsFor(const WorkerConfig& config, const std::string& repo) {
  git::Settings out = config.git;
  if (auto it = config.git_repos.find(repo); it != config.git_repos.end()) {
    if (it->second.base) out.base = *it->second.base;
    if (it->second.setup) out.setup = *it->second.setup;
    if (it->second.spare_worktrees) out.spare_worktrees = *it->second.spare_worktrees;
    if (it->second.check) out.check = *it->second.check;
    if (it->second.rebase) out.rebase = *it->second.rebase;
  }
  return out;
}

Result<git::Settings> LoadGitSettings(const std::string& config_path, const std::string& repo) {
  WorkerConfig config;
  TX_RETURN_IF_ERROR(ApplyConfigFile(config_path, config));
  return GitSettingsFor(config, repo);
}

void ApplyGitDefaults(const WorkerConfig& config, Task& task) {
  if (!task.repo.empty()) return;
  if (auto it = config.git_queues.find(task.queue);
      it != config.git_queues.end() && !it->second.repo.empty()) {
    const QueueGit& q = it->second;
    task.repo = q.repo;
    if (task.base_branch.empty()) task.base_branch = q.base;
    task.review = task.review || q.review || q.auto_merge;
    if (q.auto_merge && !task.metadata.contains("auto_merge")) task.metadata["auto_merge"] = true;
    return;
  }
  task.repo = config.git_repo;
}

Status PrepareGitTask(const WorkerConfig& config, bool auto_merge, Task& task) {
  if (auto_merge) {
    task.review = true;
    task.metadata["auto_merge"] = true;
  }
  ApplyGitDefaults(config, task);
  if (AsksForAutoMerge(task)) task.review = true;  // asked for in metadata alone, too
  const char* where = " (--repo, or [git] repo in config.toml)";
  if (task.repo.empty() && !task.base_branch.empty()) {
    return Error::InvalidArgument(std::string("a base branch needs a repository") + where);
  }
  if (task.repo.empty() && AsksForAutoMerge(task)) {
    return Error::InvalidArgument(std::string("auto-merge needs a repository") + where);
  }
  // Checked where the repository is on this machine (a remote worker's may be elsewhere): a base
  // that does not exist would fail every attempt.
  std::error_code ec;
  if (!task.repo.empty() && std::filesystem::is_directory(task.repo, ec)) {
    TX_ASSIGN_OR_RETURN(std::string top, git::TopLevel(task.repo));
    std::string base =
        task.base_branch.empty() ? GitSettingsFor(config, task.repo).base : task.base_branch;
    TX_ASSIGN_OR_RETURN(bool exists,
                        base.empty() ? Result<bool>(true) : git::CommitExists(top, base));
    if (!exists) {
      return Error::InvalidArgument("base '" + base + "' is not a branch or commit of " + top);
    }
  }
  return Ok();
}

Result<SandboxSettings> SandboxFor(const WorkerConfig& config, const Task& task) {
  SandboxSettings out = config.sandbox;
  if (auto it = config.git_queues.find(task.queue); it != config.git_queues.end()) {
    out.kind = Stricter(out.kind, it->second.sandbox);
  }
  if (auto it = task.metadata.find("sandbox"); it != task.metadata.end()) {
    if (!it->is_string()) {
      return Error::InvalidArgument("metadata.sandbox must be a string, not " + it->dump());
    }
    TX_ASSIGN_OR_RETURN(SandboxKind mine, ParseSandboxKind(it->get<std::string>()));
    out.kind = Stricter(out.kind, mine);
  }
  return out;
}

Status CheckSandboxes(const WorkerConfig& config) {
  std::set<SandboxKind> kinds = {config.sandbox.kind};
  for (const auto& queue : config.queues) {
    if (auto it = config.git_queues.find(queue); it != config.git_queues.end()) {
      kinds.insert(Stricter(config.sandbox.kind, it->second.sandbox));
    }
  }
  for (SandboxKind kind : kinds) {
    SandboxSettings settings = config.sandbox;
    settings.kind = kind;
    Status checked = CheckSandbox(settings);
    if (!checked.ok() && kind != config.sandbox.kind) {
      return Error(checked.error().code(),
                   std::string("sandbox ") + SandboxName(kind) +
                       " (asked for by a queue this worker serves): " + checked.error().message());
    }
    TX_RETURN_IF_ERROR(checked);
  }
  return Ok();
}

std::vector<exec::ContainerEngine> ContainerEngines(const WorkerConfig& config) {
  std::set<SandboxKind> kinds = {config.sandbox.kind};
  for (const auto& [queue, q] : config.git_queues) kinds.insert(q.sandbox);
  std::vector<exec::ContainerEngine> out;
  auto add = [&](SandboxKind kind, bool configured) {
    SandboxSettings settings = config.sandbox;
    settings.kind = kind;
    out.push_back({EngineCommand(settings), configured});
  };
  for (SandboxKind kind : kinds) {
    if (IsContainer(kind)) add(kind, true);
  }
  if (!config.sandbox.images.empty()) {
    for (SandboxKind k : {SandboxKind::kPodman, SandboxKind::kDocker}) {
      if (!kinds.contains(k) && exec::FindProgram(SandboxName(k), {}).ok()) add(k, false);
    }
  }
  return out;
}

Status PrepareAgentTask(const WorkerConfig& config, Task& task) {
  if (!task.agent.empty()) TX_RETURN_IF_ERROR(ResolveAgent(config, task.agent));
  if (auto it = task.metadata.find("sandbox"); it != task.metadata.end()) {
    if (!it->is_string()) {
      return Error::InvalidArgument("invalid sandbox " + it->dump() +
                                    ": none, bwrap, podman or docker");
    }
    TX_ASSIGN_OR_RETURN(SandboxKind mine, ParseSandboxKind(it->get<std::string>()));
    auto queue = config.git_queues.find(task.queue);
    if (queue != config.git_queues.end() && Strictness(mine) < Strictness(queue->second.sandbox)) {
      return Error::InvalidArgument(
          "sandbox '" + it->get<std::string>() + "' is less than queue '" + task.queue +
          "' asks for: its tasks run in " + SandboxName(queue->second.sandbox) +
          " at least ([git.queues." + task.queue + "] sandbox)");
    }
  }
  if (auto it = task.metadata.find("budget_usd"); it != task.metadata.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e6) {
      return Error::InvalidArgument("invalid budget '" + it->dump() +
                                    "': a number of dollars above 0 and at most 1000000");
    }
  }
  return Ok();
}

Status ApplyConfigToml(const std::string& toml_text, const std::string& origin,
                       WorkerConfig& config) {
  TX_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(toml_text, origin));
  WorkerConfig c = config;  // applied whole or not at all
  for (const auto& [key, node] : root) {
    std::string k(key.str());
    const toml::table* t = node.as_table();
    if (k == "worker" && t != nullptr) {
      TX_RETURN_IF_ERROR(ApplyWorker(*t, origin, c));
    } else if (k == "agents" && t != nullptr) {
      TX_RETURN_IF_ERROR(ApplyAgents(*t, origin, c));
    } else if (k == "git" && t != nullptr) {
      TX_RETURN_IF_ERROR(ApplyGit(*t, origin, c));
    } else if (k == "prices" && t != nullptr) {
      TX_RETURN_IF_ERROR(ApplyPrices(*t, origin, c));
    } else if (k == "budgets" && t != nullptr) {
      TX_RETURN_IF_ERROR(ApplyBudgets(*t, origin, c));
    } else if (k == "api" && t != nullptr) {
      Table api(*t, "api.", origin);
      TX_RETURN_IF_ERROR(api.Strings("allowed_hosts", c.api_allowed_hosts));
      TX_RETURN_IF_ERROR(api.RefuseUnknown());
    } else if (k == "sandbox" && t != nullptr) {
      Table s(*t, "sandbox.", origin);
      std::string network;
      TX_RETURN_IF_ERROR(s.String("network", network));
      if (!network.empty() && network != "none" && network != "host") {
        return Error::InvalidArgument(
            origin + ": sandbox.network must be \"none\" or \"host\", not '" + network + "'");
      }
      if (!network.empty()) c.sandbox.network = network == "host";
      TX_RETURN_IF_ERROR(s.Strings("writable", c.sandbox.writable));
      TX_RETURN_IF_ERROR(s.Strings("engine_args", c.sandbox.engine_args));
      TX_RETURN_IF_ERROR(s.Duration("image_gc_after", c.sandbox.image_gc_after_ms));
      s.Known("images");
      if (const toml::node* images = t->get("images")) {
        const toml::table* it = images->as_table();
        if (it == nullptr) {
          return Error::InvalidArgument(origin + ": 'sandbox.images' must be a table");
        }
        for (const auto& [cap, image] : *it) {
          const std::string* name = image.as_string() ? &image.as_string()->get() : nullptr;
          if (name == nullptr || name->empty()) {
            return Error::InvalidArgument(origin + ": 'sandbox.images." + std::string(cap.str()) +
                                          "' must be an image name");
          }
          c.sandbox.images[std::string(cap.str())] = *name;
        }
      }
      for (const auto& p : c.sandbox.writable) {
        if (!p.starts_with("/") && !p.starts_with("~/")) {
          return Error::InvalidArgument(origin + ": sandbox.writable: '" + p +
                                        "' is neither absolute nor under ~/");
        }
      }
      TX_RETURN_IF_ERROR(s.RefuseUnknown());
    } else if (k == "orchestrator" || k == "notify") {
      // Read by the orchestrator (and [[notify]] by tx notify as well: notify/config.h).
    } else {
      return Error::InvalidArgument(origin + ": unknown section '" + k + "'");
    }
  }
  config = std::move(c);
  return Ok();
}

Status ApplyConfigFile(const std::string& path, WorkerConfig& config) {
  std::ifstream in(path);
  if (!in) return Ok();
  std::stringstream buf;
  buf << in.rdbuf();
  return ApplyConfigToml(buf.str(), path, config);
}

WorkerConfigReload ReloadWorkerConfig(WorkerConfig& running, const WorkerConfig& fresh) {
  WorkerConfigReload r;
  auto apply = [&](const char* key, auto& now, const auto& then) {
    if (now == then) return;
    r.applied.push_back(key);
    now = then;
  };
  auto restart = [&](const char* key, const auto& now, const auto& then) {
    if (!(now == then)) r.at_restart.push_back(key);
  };
  apply("stall_timeout", running.stall_timeout_ms, fresh.stall_timeout_ms);
  apply("task_timeout_cap", running.task_timeout_cap_ms, fresh.task_timeout_cap_ms);
  apply("kill_grace", running.kill_grace_ms, fresh.kill_grace_ms);
  apply("poll_interval", running.poll_ms, fresh.poll_ms);
  apply("allowed_commands", running.allowed_commands, fresh.allowed_commands);
  apply("pass_env", running.pass_env, fresh.pass_env);
  apply("max_subtasks", running.max_subtasks, fresh.max_subtasks);
  apply("log_cap_mb", running.log_cap_bytes, fresh.log_cap_bytes);
  apply("limits", running.limits, fresh.limits);
  apply("agents", running.profiles, fresh.profiles);
  if (running.prices.entries() != fresh.prices.entries()) {
    r.applied.push_back("prices");
    running.prices = fresh.prices;
  }
  if (running.git != fresh.git || running.git_repos != fresh.git_repos ||
      running.git_repo != fresh.git_repo || running.git_queues != fresh.git_queues) {
    r.applied.push_back("git");
    running.git = fresh.git;
    running.git_repos = fresh.git_repos;
    running.git_repo = fresh.git_repo;
    running.git_queues = fresh.git_queues;
  }
  restart("capabilities", running.capabilities, fresh.capabilities);
  restart("queues", running.queues, fresh.queues);
  restart("agent", running.agent, fresh.agent);
  restart("workdir", running.workdir, fresh.workdir);
  restart("heartbeat_interval", running.heartbeat_idle_ms, fresh.heartbeat_idle_ms);
  restart("heartbeat_interval_running", running.heartbeat_running_ms, fresh.heartbeat_running_ms);
  restart("lease", running.lease_ms, fresh.lease_ms);
  restart("shutdown_timeout", running.shutdown_timeout_ms, fresh.shutdown_timeout_ms);
  restart("sandbox", running.sandbox, fresh.sandbox);
  return r;
}

bool IsProfileName(const std::string& agent) {
  return !agent.empty() && agent.find_first_of(" \t{/") == std::string::npos;
}

Result<agent::AgentProfile> ResolveAgent(const WorkerConfig& config, const std::string& name) {
  if (auto it = config.profiles.find(name); it != config.profiles.end()) return it->second;
  if (IsProfileName(name)) {
    std::string known;
    for (const auto& [n, p] : config.profiles) known += (known.empty() ? "" : ", ") + n;
    return Error::InvalidArgument("unknown agent profile '" + name + "' (known: " + known +
                                  "; or give an argv template such as 'my-agent {prompt}')");
  }
  agent::AgentProfile p;
  TX_ASSIGN_OR_RETURN(p.argv, SplitArgv(name));
  TX_RETURN_IF_ERROR(ValidateTemplate("--agent", p.argv));
  return p;
}

}  // namespace tx::worker
