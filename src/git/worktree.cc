#include "git/worktree.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "exec/command.h"
#include "exec/file_lock.h"
#include "git/git.h"

namespace tx::git {
namespace {

namespace fs = std::filesystem;
using git::BranchExists;
using git::TopLevel;
using git::Trimmed;

Result<exec::CommandResult> Git(const std::string& dir, std::vector<std::string> args) {
  return git::Run(dir, std::move(args));
}
Error GitFailed(const std::string& what, const exec::CommandResult& r) {
  return git::Failed(what, r);
}

constexpr const char* kInstructionFiles[] = {"CLAUDE.md", "AGENTS.md"};
constexpr const char* kSetupMarker = "tx-setup-done";  // in the worktree's git directory
constexpr const char* kExcludeFile = "tx-exclude";     // likewise: core.excludesFile for agents
constexpr const char* kSparePrefix = ".spare-";        // <repo>/.tx/worktrees/.spare-<task id>

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::NotFound(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Error::Unavailable("cannot write " + path);
  return Ok();
}

// Keeps the worktrees out of the main checkout's `git status`: `/.tx/` in the repository's
// info/exclude (shared by all its worktrees), unless git already ignores it.
Status ExcludeTxDir(const std::string& top) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult ignored,
                      Git(top, {"check-ignore", "-q", ".tx/worktrees/"}));
  if (ignored.ok()) return Ok();
  TX_ASSIGN_OR_RETURN(exec::CommandResult common,
                      Git(top, {"rev-parse", "--path-format=absolute", "--git-common-dir"}));
  if (!common.ok()) return GitFailed("git rev-parse --git-common-dir in " + top, common);
  fs::path info = fs::path(Trimmed(common.out)) / "info";
  std::error_code ec;
  fs::create_directories(info, ec);
  std::ofstream out(info / "exclude", std::ios::app);
  out << "\n# tx: the worktrees of its tasks (docs/git.md)\n/.tx/\n";
  out.close();
  if (!out) return Error::Unavailable("cannot write " + (info / "exclude").string());
  return Ok();
}

// The base a new branch starts from: `base`, else the branch the repository has checked out.
Result<std::string> ResolveBase(const std::string& top, const std::string& base) {
  std::string name = base;
  if (name.empty()) {
    TX_ASSIGN_OR_RETURN(exec::CommandResult head,
                        Git(top, {"symbolic-ref", "--quiet", "--short", "HEAD"}));
    if (!head.ok()) {
      return Error::InvalidArgument("repo '" + top +
                                    "' has a detached HEAD: give the task a base branch (--base)");
    }
    name = Trimmed(head.out);
  }
  // A branch's name, not any revision (main~3, main@{1}): the merge moves it.
  TX_ASSIGN_OR_RETURN(exec::CommandResult valid, Git(top, {"check-ref-format", "--branch", name}));
  if (!valid.ok() || Trimmed(valid.out) != name) {
    return Error::InvalidArgument("base branch '" + name + "' is not a branch name");
  }
  TX_ASSIGN_OR_RETURN(bool exists, BranchExists(top, name));
  if (!exists) {
    return Error::InvalidArgument("base branch '" + name + "' not found in " + top);
  }
  return name;
}

// Whether `path` holds the task's worktree, on its branch: true; nothing usable (no such
// directory, or one git does not know as a worktree): false. A worktree off its branch (a
// rebase cut short, a checkout by hand) is put back on it, keeping its edits; when git cannot
// do that, or cannot be run at all, the error says so and nothing is deleted.
Result<bool> IsWorktreeOn(const std::string& path, const std::string& branch) {
  std::error_code ec;
  if (!fs::exists(fs::path(path) / ".git", ec)) return false;
  TX_ASSIGN_OR_RETURN(exec::CommandResult inside,
                      Git(path, {"rev-parse", "--is-inside-work-tree"}));
  if (!inside.ok() || Trimmed(inside.out) != "true") return false;
  TX_ASSIGN_OR_RETURN(exec::CommandResult head,
                      Git(path, {"symbolic-ref", "--quiet", "--short", "HEAD"}));
  if (head.ok() && Trimmed(head.out) == branch) return true;
  for (const char* op : {"rebase", "merge", "cherry-pick"}) {
    TX_ASSIGN_OR_RETURN(exec::CommandResult aborted, Git(path, {op, "--abort"}));
    (void)aborted;  // none in progress: nothing to abort
  }
  TX_ASSIGN_OR_RETURN(exec::CommandResult back, Git(path, {"checkout", "-q", branch}));
  if (!back.ok()) return GitFailed("worktree " + path + " is off its branch " + branch, back);
  return true;
}

// Where the base a task's branch was made from is kept: beside the worktrees, so that it outlives
// them (a removal, a spare) for the retry, the diff and the merge.
std::string BaseFile(const std::string& top, const std::string& task_id) {
  return top + "/.tx/bases/" + task_id;
}

Status RecordBase(const std::string& top, const std::string& task_id, const std::string& base) {
  std::error_code ec;
  fs::create_directories(top + "/.tx/bases", ec);
  return WriteFile(BaseFile(top, task_id), base + "\n");
}

std::string RecordedBase(const std::string& top, const std::string& task_id) {
  Result<std::string> recorded = ReadFile(BaseFile(top, task_id));
  return recorded.ok() ? Trimmed(*recorded) : "";
}

// The user's global excludes (core.excludesFile, else git's default file), which an agent's own
// core.excludesFile replaces and so must carry on.
std::string UserExcludes(const std::string& dir) {
  std::string path;
  Result<exec::CommandResult> r = Git(dir, {"config", "--path", "--get", "core.excludesFile"});
  if (r.ok() && r->ok()) {
    path = Trimmed(r->out);
  } else if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    path = std::string(xdg) + "/git/ignore";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    path = std::string(home) + "/.config/git/ignore";
  }
  if (path.empty()) return "";
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return "";
  if (!text->empty() && text->back() != '\n') *text += '\n';
  return *text;
}

std::string WorktreesDir(const std::string& top) { return top + "/.tx/worktrees"; }

// Forgets what a task left in a worktree's git directory (setup done, base, excludes).
void ForgetTaskFiles(const std::string& git_dir) {
  std::error_code ec;
  for (const char* f : {kSetupMarker, kExcludeFile}) fs::remove(git_dir + "/" + f, ec);
}

// Takes a spare and moves it to `path`, ready for `branch`: checked out there (made from `base`
// when new), every file of another task gone. false: no spare could be had (none, another taker
// won each, or one was broken: then it is removed).
bool TakeSpare(const std::string& top, const std::string& path, const std::string& branch,
               bool branch_exists, const std::string& base) {
  std::error_code ec;
  std::vector<std::string> spares;
  for (const auto& e : fs::directory_iterator(WorktreesDir(top), ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(kSparePrefix, 0) == 0) spares.push_back(e.path().string());
  }
  for (const auto& spare : spares) {
    Result<exec::CommandResult> moved = Git(top, {"worktree", "move", spare, path});
    if (!moved.ok() || !moved->ok()) continue;  // another worker took it first
    std::vector<std::string> checkout = {"checkout", "-q", "-f"};
    if (branch_exists) {
      checkout.push_back(branch);
    } else {
      checkout.insert(checkout.end(), {"--no-track", "-b", branch, base});
    }
    Result<exec::CommandResult> r = Git(path, checkout);
    if (r.ok() && r->ok()) r = Git(path, {"clean", "-q", "-ffdx"});
    Result<exec::CommandResult> git_dir =
        r.ok() && r->ok() ? Git(path, {"rev-parse", "--absolute-git-dir"}) : r;
    if (git_dir.ok() && git_dir->ok()) {
      ForgetTaskFiles(Trimmed(git_dir->out));
      return true;
    }
    // Broken: gone, and the next one tried (or a worktree made afresh).
    Result<exec::CommandResult> removed =
        Git(top, {"worktree", "remove", "--force", "--force", path});
    (void)removed;
    fs::remove_all(path, ec);
    Result<exec::CommandResult> pruned = Git(top, {"worktree", "prune"});
    (void)pruned;
  }
  return false;
}

// Turns the worktree at `path` into a spare: its branch let go, its files those of its HEAD and
// nothing else, then renamed. false when any step failed (the caller removes it instead).
bool MakeSpare(const std::string& top, const std::string& path, const std::string& task_id) {
  Result<exec::CommandResult> git_dir = Git(path, {"rev-parse", "--absolute-git-dir"});
  if (!git_dir.ok() || !git_dir->ok()) return false;
  // Instruction files marked skip-worktree would keep the mark (and a task's text) otherwise.
  for (const char* name : kInstructionFiles) {
    Result<exec::CommandResult> r = Git(path, {"update-index", "--no-skip-worktree", "--", name});
    (void)r;  // not tracked: nothing to undo
  }
  for (std::vector<std::string> step :
       {std::vector<std::string>{"checkout", "-q", "-f", "--detach"},
        std::vector<std::string>{"reset", "-q", "--hard"},
        std::vector<std::string>{"clean", "-q", "-ffdx"}}) {
    Result<exec::CommandResult> r = Git(path, step);
    if (!r.ok() || !r->ok()) return false;
  }
  ForgetTaskFiles(Trimmed(git_dir->out));
  std::string spare = WorktreesDir(top) + "/" + kSparePrefix + task_id;
  Result<exec::CommandResult> moved = Git(top, {"worktree", "move", path, spare});
  return moved.ok() && moved->ok();
}

}  // namespace

std::string TaskBranch(const std::string& task_id) { return "tx/" + task_id; }

Result<Worktree> PrepareWorktree(const std::string& repo, const std::string& base,
                                 const std::string& task_id) {
  Worktree wt;
  TX_ASSIGN_OR_RETURN(wt.repo, TopLevel(repo));
  wt.path = wt.repo + "/.tx/worktrees/" + task_id;
  wt.branch = TaskBranch(task_id);
  TX_RETURN_IF_ERROR(ExcludeTxDir(wt.repo));

  TX_ASSIGN_OR_RETURN(bool usable, IsWorktreeOn(wt.path, wt.branch));
  if (!usable) {
    // Whatever is there is not a usable worktree (a crash while one was made, or removed by
    // hand): clear it, and git's record of it, which would otherwise hold the branch.
    std::error_code ec;
    fs::remove_all(wt.path, ec);
    TX_ASSIGN_OR_RETURN(exec::CommandResult pruned, Git(wt.repo, {"worktree", "prune"}));
    if (!pruned.ok()) return GitFailed("git worktree prune in " + wt.repo, pruned);
    fs::create_directories(fs::path(wt.path).parent_path(), ec);
    TX_ASSIGN_OR_RETURN(bool reuse_branch, BranchExists(wt.repo, wt.branch));
    if (!reuse_branch) {
      TX_ASSIGN_OR_RETURN(wt.base, ResolveBase(wt.repo, base));
    }
    exec::CommandResult added;
    if (TakeSpare(wt.repo, wt.path, wt.branch, reuse_branch, wt.base)) {
      added.exit_code = 0;
    } else if (reuse_branch) {
      // A retry on another machine's checkout, or after the worktree was removed: the branch
      // keeps the work of the attempts before.
      TX_ASSIGN_OR_RETURN(added, Git(wt.repo, {"worktree", "add", wt.path, wt.branch}));
    } else {
      TX_ASSIGN_OR_RETURN(added, Git(wt.repo, {"worktree", "add", "--no-track", "-b", wt.branch,
                                               wt.path, wt.base}));
    }
    if (!added.ok()) return GitFailed("git worktree add " + wt.path, added);
    wt.created = true;
  }

  TX_ASSIGN_OR_RETURN(exec::CommandResult git_dir,
                      Git(wt.path, {"rev-parse", "--absolute-git-dir"}));
  if (!git_dir.ok()) return GitFailed("git rev-parse in " + wt.path, git_dir);
  wt.git_dir = Trimmed(git_dir.out);
  if (wt.base.empty()) {
    // Reused: the base it was made from, else the given one, else the repository's branch.
    wt.base = RecordedBase(wt.repo, task_id);
    if (wt.base.empty()) {
      TX_ASSIGN_OR_RETURN(wt.base, ResolveBase(wt.repo, base));
    }
  }
  if (RecordedBase(wt.repo, task_id) != wt.base) {
    TX_RETURN_IF_ERROR(RecordBase(wt.repo, task_id, wt.base));
  }
  std::error_code ec;
  wt.needs_setup = !fs::exists(wt.git_dir + "/" + kSetupMarker, ec);
  return wt;
}

Status WriteInstructions(const Worktree& wt, const std::string& text) {
  std::string excludes = UserExcludes(wt.path);
  for (const char* name : kInstructionFiles) {
    std::string file = wt.path + "/" + name;
    TX_ASSIGN_OR_RETURN(exec::CommandResult tracked,
                        Git(wt.path, {"ls-files", "--error-unmatch", "--", name}));
    if (tracked.ok()) {
      TX_ASSIGN_OR_RETURN(exec::CommandResult committed,
                          Git(wt.path, {"show", std::string("HEAD:") + name}));
      if (!committed.ok()) return GitFailed("git show HEAD:" + std::string(name), committed);
      std::string content = committed.out;
      if (!content.empty() && content.back() != '\n') content += '\n';
      TX_RETURN_IF_ERROR(WriteFile(file, content + "\n" + text));
      TX_ASSIGN_OR_RETURN(exec::CommandResult skipped,
                          Git(wt.path, {"update-index", "--skip-worktree", "--", name}));
      if (!skipped.ok()) return GitFailed("git update-index " + std::string(name), skipped);
    } else {
      TX_RETURN_IF_ERROR(WriteFile(file, text));
      excludes += std::string("/") + name + "\n";
    }
  }
  return WriteFile(wt.git_dir + "/" + kExcludeFile, excludes);
}

std::vector<std::string> AgentGitEnv(const Worktree& wt, const std::vector<std::string>& base_env) {
  int count = 0;
  for (const auto& kv : base_env) {
    if (kv.rfind("GIT_CONFIG_COUNT=", 0) == 0) count = std::atoi(kv.c_str() + 17);
  }
  count = std::max(count, 0);
  std::string n = std::to_string(count);
  return {"TX_REPO=" + wt.repo,
          "TX_WORKTREE=" + wt.path,
          "TX_BRANCH=" + wt.branch,
          "TX_BASE_BRANCH=" + wt.base,
          "GIT_CONFIG_KEY_" + n + "=core.excludesFile",
          "GIT_CONFIG_VALUE_" + n + "=" + wt.git_dir + "/" + kExcludeFile,
          "GIT_CONFIG_COUNT=" + std::to_string(count + 1)};
}

std::vector<std::string> WithSetup(const Worktree& wt, const std::vector<std::string>& setup,
                                   const std::vector<std::string>& agent_argv) {
  if (setup.empty()) return agent_argv;
  // Positional parameters: the marker, how many commands, the commands, then the agent's argv;
  // no command text is ever part of the script itself.
  std::vector<std::string> argv = {
      "/bin/sh",
      "-c",
      "marker=$1; n=$2; shift 2\n"
      "while [ \"$n\" -gt 0 ]; do\n"
      "  c=$1; shift; n=$((n - 1))\n"
      "  printf 'tx setup: %s\\n' \"$c\"\n"
      "  /bin/sh -c \"$c\" </dev/null || { s=$?\n"
      "    printf 'tx setup: exit status %s: %s\\n' \"$s\" \"$c\" >&2\n"
      "    exit \"$s\"; }\n"
      "done\n"
      ": > \"$marker\"\n"
      "exec \"$@\"\n",
      "tx-setup",
      wt.git_dir + "/" + kSetupMarker,
      std::to_string(setup.size())};
  argv.insert(argv.end(), setup.begin(), setup.end());
  argv.insert(argv.end(), agent_argv.begin(), agent_argv.end());
  return argv;
}

Result<std::string> TaskBase(const std::string& repo, const std::string& task_id,
                             const std::string& base) {
  TX_ASSIGN_OR_RETURN(std::string top, TopLevel(repo));
  if (std::string recorded = RecordedBase(top, task_id); !recorded.empty()) return recorded;
  return ResolveBase(top, base);
}

void ForgetBase(const std::string& repo, const std::string& task_id) {
  Result<std::string> top = TopLevel(repo);
  std::error_code ec;
  if (top.ok()) fs::remove(BaseFile(*top, task_id), ec);
}

Result<exec::UniqueFd> LockTaskWorktree(const std::string& repo, const std::string& task_id) {
  TX_ASSIGN_OR_RETURN(std::string top, TopLevel(repo));
  return exec::LockFile(top + "/.tx/locks/" + task_id);
}

Result<std::optional<exec::UniqueFd>> TryLockTaskWorktree(const std::string& repo,
                                                          const std::string& task_id) {
  TX_ASSIGN_OR_RETURN(std::string top, TopLevel(repo));
  return exec::TryLockFile(top + "/.tx/locks/" + task_id);
}

Status RemoveIdleWorktree(const std::string& repo, const std::string& task_id) {
  if (repo.empty() || !TopLevel(repo).ok()) return Ok();  // nothing of ours there
  TX_ASSIGN_OR_RETURN(std::optional<exec::UniqueFd> lock, TryLockTaskWorktree(repo, task_id));
  if (!lock) return Ok();
  return RemoveWorktree(repo, task_id);
}

int CountSpares(const std::string& repo) {
  Result<std::string> top = TopLevel(repo);
  if (!top.ok()) return 0;
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(WorktreesDir(*top), ec)) {
    n += e.path().filename().string().rfind(kSparePrefix, 0) == 0 ? 1 : 0;
  }
  return n;
}

Status RemoveWorktree(const std::string& repo, const std::string& task_id, int keep_spares) {
  Result<std::string> top = TopLevel(repo);
  if (!top.ok()) return Ok();  // no repository (any more): nothing of ours is in it
  std::string path = WorktreesDir(*top) + "/" + task_id;
  std::error_code ec;
  if (keep_spares > 0 && fs::exists(path, ec)) {
    // Counted and made under a lock, so that workers finishing at once keep no more than asked.
    TX_ASSIGN_OR_RETURN(exec::UniqueFd lock, exec::LockFile(*top + "/.tx/spares.lock"));
    if (CountSpares(*top) < keep_spares && MakeSpare(*top, path, task_id)) return Ok();
  }
  if (fs::exists(path, ec)) {
    TX_ASSIGN_OR_RETURN(exec::CommandResult removed,
                        Git(*top, {"worktree", "remove", "--force", "--force", path}));
    if (!removed.ok()) fs::remove_all(path, ec);  // not a worktree git knows: a plain directory
    if (fs::exists(path, ec)) return Error::Unavailable("cannot remove the worktree " + path);
  }
  TX_ASSIGN_OR_RETURN(exec::CommandResult pruned, Git(*top, {"worktree", "prune"}));
  if (!pruned.ok()) return GitFailed("git worktree prune in " + *top, pruned);
  return Ok();
}

}  // namespace tx::git
