#include "core/error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace tx {
namespace {

TEST(PosixError, NamesWhatFailedAndWhyAsStrerrorSaysIt) {
  Error e = PosixError("cannot open /nowhere/x", ENOENT);
  EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(e.message(), "cannot open /nowhere/x: No such file or directory");
}

TEST(PosixError, KeepsTheCodeItIsGiven) {
  Error fd = PosixError("eventfd", EMFILE, ErrorCode::kInternal);
  EXPECT_EQ(fd.code(), ErrorCode::kInternal);
  EXPECT_EQ(fd.message(), "eventfd: Too many open files");
  EXPECT_EQ(HttpStatus(fd.code()), 500);
  Error missing = PosixError("cannot read tasks.jsonl", ENOENT, ErrorCode::kNotFound);
  EXPECT_EQ(ExitCode(missing.code()), 3);
}

TEST(PosixError, AnErrnoTheLibraryDoesNotKnowIsStillNamed) {
  EXPECT_EQ(PosixError("ioctl", 9999).message(), "ioctl: Unknown error 9999");
}

}  // namespace
}  // namespace tx
