#include "core/ids.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

namespace tx {
namespace {

TEST(NewToken, Is256RandomBitsInHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string t = NewToken();
    ASSERT_EQ(t.size(), 64u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(NewTaskId, HasTheShapeItsCheckerExpects) {
  EXPECT_TRUE(LooksLikeTaskId(NewTaskId()));
  EXPECT_TRUE(LooksLikeWorkerId(NewWorkerId()));
  EXPECT_FALSE(LooksLikeTaskId(NewWorkerId()));
}

// A thread's ids follow one another and sort in the order they were drawn (byte order, as the
// store's index compares them), across 70,000 ids: carries up to the fourth character from the end.
TEST(NewTaskId, ARunsIdsAreDistinctAndSortInTheOrderDrawn) {
  std::string before = NewTaskId();
  for (int i = 0; i < 70000; ++i) {
    std::string id = NewTaskId();
    ASSERT_TRUE(LooksLikeTaskId(id)) << id;
    // A run wraps past "task-zzzzzzzz" once in 2^40 ids: the only step down.
    if (before != "task-zzzzzzzz") {
      ASSERT_LT(before, id);
    }
    before = id;
  }
}

TEST(NewTaskId, ARestartedRunStartsElsewhere) {
  std::set<std::string> starts;
  for (int i = 0; i < 20; ++i) {
    RestartTaskIds();
    starts.insert(NewTaskId().substr(0, 9));  // the first four characters: 20 bits
  }
  EXPECT_GE(starts.size(), 18u);  // 20 random draws of 20 bits: a repeat is ~2e-4 likely
}

// A forked child copies its parent's memory, run and all: its ids must not be its parent's.
TEST(NewTaskId, AForkedChildDrawsARunOfItsOwn) {
  NewTaskId();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string id = NewTaskId();
    ssize_t n = ::write(fds[1], id.data(), id.size());
    ::_exit(n == static_cast<ssize_t>(id.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string child(13, '\0');
  ssize_t n = ::read(fds[0], child.data(), child.size());
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(n, 13) << "the child wrote no id";
  std::string parent = NewTaskId();
  EXPECT_NE(child.substr(0, 9), parent.substr(0, 9)) << child << " " << parent;
}

}  // namespace
}  // namespace tx
