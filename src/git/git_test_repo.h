#pragma once
// For the worker's git tests (worktree_test.cc, merge_test.cc): a real repository in a temp dir,
// on branch main, with one commit writing `first_file` as `first_text`.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "exec/command.h"
#include "run_process.h"

namespace tx::git {

class GitRepoTest : public ::testing::Test {
 protected:
  GitRepoTest(std::string first_file, std::string first_text)
      : first_file_(std::move(first_file)), first_text_(std::move(first_text)) {}

  void SetUp() override {
    repo_ = dir_.str() + "/repo";
    std::filesystem::create_directories(repo_);
    Git(repo_, {"init", "-q", "-b", "main"});
    Git(repo_, {"config", "user.email", "t@example.com"});
    Git(repo_, {"config", "user.name", "t"});
    Write(repo_ + "/" + first_file_, first_text_);
    Git(repo_, {"add", first_file_});
    Git(repo_, {"commit", "-q", "-m", "base"});
  }

  // Runs git in `dir` (with `env` added) and expects it to succeed; returns its stdout.
  std::string Git(const std::string& dir, std::vector<std::string> args,
                  const std::vector<std::string>& env = {}) {
    args.insert(args.begin(), {"git", "-C", dir});
    Result<exec::CommandResult> r = exec::RunCommand(args, "", env);
    EXPECT_TRUE(r.ok() && r->ok()) << args[3] << ": " << (r.ok() ? r->err : r.error().message());
    return r.ok() ? r->out : "";
  }

  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  tx::testing::TempDir dir_;
  std::string repo_;

 private:
  std::string first_file_;
  std::string first_text_;
};

}  // namespace tx::git
