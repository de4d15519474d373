#include "exec/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "exec/unique_fd.h"

namespace tx::exec {

Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // Built with append: GCC 12 reports a false -Wrestrict on "." + name + ".tmp".
  std::string name = ".";
  name.append(target.filename().string()).append(".tmp");
  std::string tmp = (dir / name).string();
  auto fail = [&](const std::string& what) {
    int err = errno;
    ::unlink(tmp.c_str());
    return PosixError(what + " " + path, err);
  };
  {
    // A new file, never one that was planted at its name (a symlink would be followed); rename
    // then replaces `path` itself, a symlink there included, without following it.
    ::unlink(tmp.c_str());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid()) return fail("cannot write");
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd.get(), p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("cannot write");
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) return fail("cannot fsync");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename into");
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.valid()) ::fsync(d.get());
  return Ok();
}

}  // namespace tx::exec
