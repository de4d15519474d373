// The cost of git isolation (issue 7): making and removing a task's worktree (git/worktree.h)
// in a repository of --files files (default 10,000, 100 directories of 100, ~200 bytes each),
// each time with a new task id. "make" is PrepareWorktree + WriteInstructions (what a worker does
// before an agent starts): --runs times (default 10) from a spare, the steady state, and
// --fresh-runs times (default 3) from nothing, with "remove" (RemoveWorktree) handing it back as a
// spare or deleting it. Beside them, a bare `git worktree add -b` and `git worktree remove`
// (--fresh-runs times), the floor git sets. Prints medians, min..max and the ± spread in
// milliseconds, and one JSON line.
//
// usage: tx_worktree_bench [--files N] [--runs R] [--fresh-runs F]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "exec/command.h"
#include "git/worktree.h"

namespace {

using namespace tx;
using Steady = std::chrono::steady_clock;

double MsSince(Steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
}

void Run(const std::vector<std::string>& argv, const std::string& cwd) {
  exec::CommandResult r = bench::CheckOk(exec::RunCommand(argv, cwd), argv[0]);
  if (!r.ok()) {
    std::fprintf(stderr, "%s %s: %s\n", argv[0].c_str(), argv[1].c_str(), r.FirstLine().c_str());
    std::exit(1);
  }
}

void Print(const char* what, const bench::RunStats& s) {
  std::printf("%-28s median %7.1f ms  (min %.1f, max %.1f, ±%.0f%%)\n", what, s.median, s.min,
              s.max, s.spread_pct);
}

}  // namespace

int main(int argc, char** argv) {
  int files = 10'000;
  int runs = 10;
  int fresh_runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--files") {
      files = std::atoi(argv[i + 1]);
    } else if (flag == "--runs") {
      runs = std::atoi(argv[i + 1]);
    } else if (flag == "--fresh-runs") {
      fresh_runs = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: tx_worktree_bench [--files N] [--runs R] [--fresh-runs F]\n");
      return 2;
    }
  }
  if (files < 1 || runs < 1 || fresh_runs < 1) {
    std::fprintf(stderr, "tx_worktree_bench: --files, --runs and --fresh-runs must be positive\n");
    return 2;
  }

  bench::TempDir dir;
  std::string repo = dir.File("repo");
  std::filesystem::create_directories(repo);
  Run({"git", "init", "-q", "-b", "main"}, repo);
  std::string line(190, 'x');
  for (int i = 0; i < files; ++i) {
    std::string sub = repo + "/d" + std::to_string(i / 100);
    if (i % 100 == 0) std::filesystem::create_directories(sub);
    std::ofstream(sub + "/f" + std::to_string(i) + ".txt") << i << ' ' << line << '\n';
  }
  Run({"git", "add", "-A"}, repo);
  Run({"git", "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "-m", "files"},
      repo);

  // A task's worktree made from a spare (the steady state once one task has finished in the
  // repository: [git] spare_worktrees, 1 by default) and handed back as a spare; then made afresh
  // and deleted (spare_worktrees = 0, or the first task); then git alone.
  std::vector<double> spare_make, spare_park, make, remove, git_add, git_remove;
  auto one = [&](const std::string& id, int keep, std::vector<double>& made,
                 std::vector<double>& removed) {
    auto t0 = Steady::now();
    git::Worktree wt = bench::CheckOk(git::PrepareWorktree(repo, "main", id), "prepare");
    bench::CheckOk(git::WriteInstructions(wt, "Do the thing.\n"), "instructions");
    made.push_back(MsSince(t0));
    t0 = Steady::now();
    bench::CheckOk(git::RemoveWorktree(repo, id, keep), "remove");
    removed.push_back(MsSince(t0));
  };
  std::vector<double> first_make, first_park;
  one("task-bench-first", 1, first_make, first_park);  // leaves the spare the next ones take
  for (int r = 0; r < runs; ++r) {
    one("task-bench-spare" + std::to_string(r), 1, spare_make, spare_park);
  }
  if (git::CountSpares(repo) != 1) {
    std::fprintf(stderr, "tx_worktree_bench: expected 1 spare, found %d\n", git::CountSpares(repo));
    return 1;
  }
  for (int r = 0; r < fresh_runs; ++r) {
    // The spare is taken by a task of its own first, so the measured one starts from nothing.
    if (r == 0) {
      bench::CheckOk(git::PrepareWorktree(repo, "main", "task-bench-holder"), "hold");
    }
    one("task-bench-fresh" + std::to_string(r), 0, make, remove);
  }
  for (int r = 0; r < fresh_runs; ++r) {
    std::string path = dir.File("plain-" + std::to_string(r));
    auto t0 = Steady::now();
    Run({"git", "worktree", "add", "-q", "-b", "plain/" + std::to_string(r), path, "main"}, repo);
    git_add.push_back(MsSince(t0));
    t0 = Steady::now();
    Run({"git", "worktree", "remove", "--force", path}, repo);
    git_remove.push_back(MsSince(t0));
  }
  bench::RunStats sm = bench::Summarize(spare_make), sp = bench::Summarize(spare_park),
                  m = bench::Summarize(make), rm = bench::Summarize(remove),
                  ga = bench::Summarize(git_add), gr = bench::Summarize(git_remove);
  std::printf("worktree of a %d-file repository: %d runs from a spare, %d fresh\n", files, runs,
              fresh_runs);
  Print("make, from a spare", sm);
  Print("hand back as a spare", sp);
  Print("make, fresh", m);
  Print("remove (delete)", rm);
  Print("git worktree add -b", ga);
  Print("git worktree remove", gr);
  std::printf("first make (no spare yet): %.1f ms\n", first_make[0]);
  std::printf(
      "JSON {\"bench\":\"worktree\",\"files\":%d,\"runs\":%d,\"fresh_runs\":%d,"
      "\"spare_make_ms\":%.1f,\"spare_make_min\":%.1f,\"spare_make_max\":%.1f,"
      "\"spare_park_ms\":%.1f,\"fresh_make_ms\":%.1f,\"fresh_make_min\":%.1f,"
      "\"fresh_make_max\":%.1f,\"remove_ms\":%.1f,\"git_add_ms\":%.1f,\"git_remove_ms\":%.1f}\n",
      files, runs, fresh_runs, sm.median, sm.min, sm.max, sp.median, m.median, m.min, m.max,
      rm.median, ga.median, gr.median);
  return 0;
}
