#include "git/merge.h"

#include <regex>

#include "exec/file_lock.h"
#include "git/git.h"
#include "git/worktree.h"

namespace tx::git {
namespace {

constexpr int kMergeTries = 3;              // the base moved meanwhile: start over, this often
constexpr std::size_t kCheckOutput = 4000;  // the tail of a failing check kept for the agent

Result<std::string> Head(const std::string& dir, const std::string& rev) {
  TX_ASSIGN_OR_RETURN(exec::CommandResult r, git::Run(dir, {"rev-parse", "--verify", rev}));
  if (!r.ok()) return git::Failed("git rev-parse " + rev, r);
  return git::Trimmed(r.out);
}

Result<std::string> RequireBranch(const std::string& top, const std::string& task_id) {
  std::string branch = TaskBranch(task_id);
  TX_ASSIGN_OR_RETURN(bool exists, git::BranchExists(top, branch));
  if (!exists) {
    return Error::NotFound("task " + task_id + " has no branch " + branch + " in " + top);
  }
  return branch;
}

// Where `base` is checked out (the main checkout, usually), or "".
std::string CheckoutOf(const std::string& top, const std::string& base) {
  Result<exec::CommandResult> r = git::Run(top, {"worktree", "list", "--porcelain"});
  if (!r.ok() || !r->ok()) return "";
  std::string path;
  std::size_t pos = 0;
  while (pos < r->out.size()) {
    std::size_t end = r->out.find('\n', pos);
    if (end == std::string::npos) end = r->out.size();
    std::string line = r->out.substr(pos, end - pos);
    if (line.rfind("worktree ", 0) == 0) path = line.substr(9);
    if (line == "branch refs/heads/" + base) return path;
    pos = end + 1;
  }
  return "";
}

// A committer for the rebase when the repository and the user name none.
std::vector<std::string> IdentityEnv(const std::string& dir) {
  Result<exec::CommandResult> r = git::Run(dir, {"var", "GIT_COMMITTER_IDENT"});
  if (r.ok() && r->ok()) return {};
  return {"GIT_COMMITTER_NAME=tx", "GIT_COMMITTER_EMAIL=tx@localhost", "GIT_AUTHOR_NAME=tx",
          "GIT_AUTHOR_EMAIL=tx@localhost"};
}

std::string Joined(const std::string& lines) {
  std::string out;
  std::size_t pos = 0;
  while (pos < lines.size()) {
    std::size_t end = lines.find('\n', pos);
    if (end == std::string::npos) end = lines.size();
    if (end > pos) out += (out.empty() ? "" : ", ") + lines.substr(pos, end - pos);
    pos = end + 1;
  }
  return out;
}

int Number(const std::string& text, const char* pattern) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(pattern))) return std::stoi(m[1].str());
  return 0;
}

}  // namespace

Result<BranchSummary> SummarizeBranch(const std::string& repo, const std::string& task_id,
                                      const std::string& base) {
  TX_ASSIGN_OR_RETURN(std::string top, git::TopLevel(repo));
  BranchSummary s;
  TX_ASSIGN_OR_RETURN(s.branch, RequireBranch(top, task_id));
  TX_ASSIGN_OR_RETURN(s.base, TaskBase(repo, task_id, base));
  TX_ASSIGN_OR_RETURN(s.head, Head(top, "refs/heads/" + s.branch));
  std::string range = "refs/heads/" + s.base + "..refs/heads/" + s.branch;
  TX_ASSIGN_OR_RETURN(exec::CommandResult log,
                      git::Run(top, {"log", "--reverse", "--format=%H%x09%s", range}));
  if (!log.ok()) return git::Failed("git log " + range, log);
  std::size_t pos = 0;
  while (pos < log.out.size()) {
    std::size_t end = log.out.find('\n', pos);
    if (end == std::string::npos) end = log.out.size();
    std::string line = log.out.substr(pos, end - pos);
    if (std::size_t tab = line.find('\t'); tab != std::string::npos) {
      s.commits.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
    pos = end + 1;
  }
  std::string forked = "refs/heads/" + s.base + "...refs/heads/" + s.branch;
  TX_ASSIGN_OR_RETURN(exec::CommandResult stat, git::Run(top, {"diff", "--shortstat", forked}));
  if (!stat.ok()) return git::Failed("git diff " + forked, stat);
  s.files_changed = Number(stat.out, R"((\d+) files? changed)");
  s.insertions = Number(stat.out, R"((\d+) insertions?\(\+\))");
  s.deletions = Number(stat.out, R"((\d+) deletions?\(-\))");
  return s;
}

Result<std::string> BranchDiff(const std::string& repo, const std::string& task_id,
                               const std::string& base) {
  TX_ASSIGN_OR_RETURN(std::string top, git::TopLevel(repo));
  TX_ASSIGN_OR_RETURN(std::string branch, RequireBranch(top, task_id));
  TX_ASSIGN_OR_RETURN(std::string b, TaskBase(repo, task_id, base));
  std::string forked = "refs/heads/" + b + "...refs/heads/" + branch;
  TX_ASSIGN_OR_RETURN(exec::CommandResult diff, git::Run(top, {"diff", forked}));
  if (!diff.ok()) return git::Failed("git diff " + forked, diff);
  return diff.out;
}

Result<MergeResult> MergeBranch(const std::string& repo, const std::string& task_id,
                                const std::string& base, const MergeSettings& settings) {
  TX_ASSIGN_OR_RETURN(std::string top, git::TopLevel(repo));
  // The merge queue: one merge at a time in the repository, whoever runs it. The branch is looked
  // for once the lock is held: a merge of the same task just before may have deleted it.
  TX_ASSIGN_OR_RETURN(exec::UniqueFd lock, exec::LockFile(top + "/.tx/merge.lock"));
  TX_ASSIGN_OR_RETURN(std::string branch, RequireBranch(top, task_id));
  // And the task's worktree is the merge's until it ends: a cancel by hand meanwhile leaves it.
  TX_ASSIGN_OR_RETURN(exec::UniqueFd task_lock, LockTaskWorktree(repo, task_id));
  MergeResult out;
  TX_ASSIGN_OR_RETURN(out.base, TaskBase(repo, task_id, base));
  TX_ASSIGN_OR_RETURN(Worktree wt, PrepareWorktree(repo, out.base, task_id));
  std::vector<std::string> env = IdentityEnv(wt.path);
  // Only what the branch holds is merged: whatever the agent left uncommitted goes. Ignored files
  // (what the setup commands made: dependencies, .env) stay, for the check.
  for (std::vector<std::string> step : {std::vector<std::string>{"reset", "-q", "--hard"},
                                        std::vector<std::string>{"clean", "-q", "-ffd"}}) {
    TX_ASSIGN_OR_RETURN(exec::CommandResult r, git::Run(wt.path, step));
    if (!r.ok()) return git::Failed("git " + step[0] + " in " + wt.path, r);
  }

  std::string base_ref = "refs/heads/" + out.base;
  bool merged = false;
  for (int attempt = 1; attempt <= kMergeTries && !merged; ++attempt) {
    TX_ASSIGN_OR_RETURN(std::string base_tip, Head(top, base_ref));
    std::vector<std::string> integrate = {"rebase", "-q", base_ref};
    if (!settings.rebase) integrate = {"merge", "-q", "--no-edit", base_ref};
    // A branch the agent already brought up to date (by a merge of the base, say, to resolve a
    // conflict it was sent back with) is taken as it is: a rebase would drop that merge and
    // meet the same conflict again.
    TX_ASSIGN_OR_RETURN(exec::CommandResult up_to_date,
                        git::Run(wt.path, {"merge-base", "--is-ancestor", base_ref, "HEAD"}));
    exec::CommandResult r;
    if (!up_to_date.ok()) {
      TX_ASSIGN_OR_RETURN(r, git::Run(wt.path, integrate, env));
    }
    if (!r.ok()) {
      TX_ASSIGN_OR_RETURN(exec::CommandResult conflicted,
                          git::Run(wt.path, {"diff", "--name-only", "--diff-filter=U"}));
      TX_ASSIGN_OR_RETURN(exec::CommandResult aborted,
                          git::Run(wt.path, {integrate[0], "--abort"}));
      (void)aborted;  // nothing to abort when it never started: the error below says why
      std::string files = Joined(conflicted.out);
      if (files.empty()) return git::Failed("git " + integrate[0] + " in " + wt.path, r);
      out.kind = MergeResult::Kind::kConflict;
      out.detail = std::string(settings.rebase ? "Rebasing " + branch + " onto " + out.base
                                               : "Merging " + out.base + " into " + branch) +
                   " (at " + base_tip.substr(0, 12) + ") stopped at a conflict in: " + files +
                   ". Bring your branch up to date with " + out.base +
                   " and resolve the conflict, keeping both sides' intent, then commit.";
      return out;
    }
    if (!settings.check.empty()) {
      TX_ASSIGN_OR_RETURN(
          exec::CommandResult check,
          exec::RunCommand({"/bin/sh", "-c", settings.check}, wt.path, {}, 16u << 20,
                           settings.check_timeout_ms, settings.cancel_fd));
      if (check.cancelled) {
        return Error::Unavailable("the merge of " + branch +
                                  " was stopped during its check by a stop signal: nothing merged");
      }
      if (!check.ok()) {
        std::string output = check.out + check.err;
        if (check.timed_out) {
          output += "\n[tx: the check was stopped after " +
                    std::to_string(settings.check_timeout_ms / 1000) + " s]";
        }
        if (output.size() > kCheckOutput)
          output = "…" + output.substr(output.size() - kCheckOutput);
        out.kind = MergeResult::Kind::kCheckFailed;
        out.detail = "The check `" + settings.check + "` failed (exit status " +
                     std::to_string(check.exit_code) + ") on " + branch +
                     " brought up to date with " + out.base + " (at " + base_tip.substr(0, 12) +
                     "); make it pass. Its output:\n" + output;
        return out;
      }
    }
    TX_ASSIGN_OR_RETURN(out.head, Head(wt.path, "HEAD"));
    if (std::string checkout = CheckoutOf(top, out.base); !checkout.empty()) {
      // Its files follow the ref; local edits there that the merge would touch refuse it.
      TX_ASSIGN_OR_RETURN(exec::CommandResult ff,
                          git::Run(checkout, {"merge", "-q", "--ff-only", out.head}));
      if (ff.ok()) {
        merged = true;
      } else {
        TX_ASSIGN_OR_RETURN(std::string now, Head(top, base_ref));
        if (now == base_tip)
          return git::Failed("cannot fast-forward " + out.base + " in " + checkout, ff);
      }
    } else {
      TX_ASSIGN_OR_RETURN(exec::CommandResult cas,
                          git::Run(top, {"update-ref", base_ref, out.head, base_tip}));
      merged = cas.ok();
    }
  }
  if (!merged) {
    return Error::Unavailable(out.base + " kept moving while " + branch +
                              " was merged; nothing was merged, try again");
  }
  // Merged: what follows tidies up, and cannot undo it, so its failures are not the merge's.
  Status removed = RemoveWorktree(repo, task_id, settings.keep_spares);
  (void)removed;  // a worktree left behind is removed with the next prune, or by hand
  Result<exec::CommandResult> deleted = git::Run(top, {"branch", "-q", "-D", branch});
  (void)deleted;  // a branch checked out by hand somewhere stays
  ForgetBase(repo, task_id);
  return out;
}

}  // namespace tx::git
