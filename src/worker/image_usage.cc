#include "worker/image_usage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>

#include "exec/unique_fd.h"

namespace tx::worker {
namespace {

bool Plain(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || (c == '.' && !first);
}

// The file name of an image's record: read back by ImageOf, and never "." or ".." nor with a '/'.
std::string FileName(const std::string& image) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0; i < image.size(); ++i) {
    auto c = static_cast<unsigned char>(image[i]);
    if (Plain(image[i], i == 0)) {
      out += image[i];
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The image a file is the record of; "" for a file FileName did not name (a stray file).
std::string ImageOf(const std::string& name) {
  std::string image;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') {
      image += name[i];
      continue;
    }
    if (i + 2 >= name.size()) return "";
    int hi = HexDigit(name[i + 1]), lo = HexDigit(name[i + 2]);
    if (hi < 0 || lo < 0) return "";
    image += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return FileName(image) == name ? image : "";
}

Error Failed(const std::string& what, const std::string& path, int err) {
  return PosixError(what + " (" + path + ")", err);
}

}  // namespace

std::string ImageUsesDir(const std::string& local_dir) { return local_dir + "/sandbox-images"; }

Status RecordImageUse(const std::string& dir, const std::string& image) {
  if (image.empty()) return Error::InvalidArgument("record an image's use: no image");
  std::string what = "record the use of image '" + image + "'";
  std::string path = dir + "/" + FileName(image);
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) return Ok();
  if (errno != ENOENT) return Failed(what, path, errno);
  // Its first use. A reader takes the image from the file's name, so content half written by a
  // worker recording the same image at the same moment misleads nobody.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Failed(what, dir, ec.value());
  exec::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) return Failed(what, path, errno);
  std::string content = image + "\n";
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return Failed(what, path, errno);
  }
  return Ok();
}

Result<std::vector<ImageUse>> ListImageUses(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return std::vector<ImageUse>{};
  if (ec) return Failed("list the images used", dir, ec.value());
  std::vector<std::string> names;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return Failed("list the images used", dir, ec.value());
  std::sort(names.begin(), names.end());
  std::vector<ImageUse> uses;
  for (const auto& name : names) {
    std::string image = ImageOf(name);
    struct stat st {};
    if (image.empty() || ::stat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      continue;  // a stray file, or a record forgotten meanwhile
    }
    uses.push_back({image, Millis{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000});
  }
  return uses;
}

Status ForgetImageUse(const std::string& dir, const std::string& image) {
  std::string path = dir + "/" + FileName(image);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Failed("forget the use of image '" + image + "'", path, errno);
  }
  return Ok();
}

std::string CanonicalImage(const std::string& image) {
  // Docker's rules (podman's for a name it finds on docker.io): a first component that is not a
  // host (no '.' or ':', not localhost) means docker.io, and a name alone there its library/.
  std::string name = image.substr(0, image.find('@'));
  std::string digest = image.substr(name.size());
  std::size_t slash = name.find('/');
  std::string first = slash == std::string::npos ? "" : name.substr(0, slash);
  if (slash == std::string::npos) {
    name = "docker.io/library/" + name;
  } else if (first == "index.docker.io") {
    name = "docker.io" + name.substr(slash);
  } else if (first.find_first_of(".:") == std::string::npos && first != "localhost") {
    name = "docker.io/" + name;
  }
  bool tagged = name.find(':', name.rfind('/') + 1) != std::string::npos;
  if (!tagged && digest.empty()) name += ":latest";
  return name + digest;
}

std::vector<std::string> ImagesToRemove(const std::vector<ImageUse>& uses,
                                        const std::vector<std::string>& configured,
                                        const std::vector<std::string>& in_use, Millis now_ms,
                                        Millis unused_for_ms) {
  std::set<std::string> kept;
  for (const auto& image : configured) kept.insert(CanonicalImage(image));
  for (const auto& image : in_use) kept.insert(CanonicalImage(image));
  std::vector<std::string> doomed;
  for (const auto& use : uses) {
    if (now_ms - use.last_used_ms >= unused_for_ms && !kept.contains(CanonicalImage(use.image))) {
      doomed.push_back(use.image);
    }
  }
  return doomed;
}

}  // namespace tx::worker
