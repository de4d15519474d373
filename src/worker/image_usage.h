#pragma once
// When this machine last ran each container image for an agent, so that `tx sandbox gc` removes
// the images tx ran and nobody has used for a while, and no image it never ran (docs/sandbox.md).
//
// The record is a directory (ImageUsesDir: beside the store's local files, so a worker and `tx
// sandbox gc` of the same store agree) of one file per image: its name the image's name escaped
// (letters, digits, '-', '_' and '.' as they are, any other byte and a leading '.' as %XX), its
// content the image's name, its modification time the image's last use. Several workers record
// into it at once; each call is a file system operation or two, no lock.

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace tx::worker {

// <local_dir>/sandbox-images.
std::string ImageUsesDir(const std::string& local_dir);

// Marks `image` used now: sets its file's time (one utimensat), or creates it, and `dir`, the
// first time. unavailable, naming the image and the file system's error, when it cannot (a name
// too long for a file name among them).
Status RecordImageUse(const std::string& dir, const std::string& image);

struct ImageUse {
  std::string image;
  Millis last_used_ms = 0;
  bool operator==(const ImageUse&) const = default;
};

// Every image recorded in `dir`, in the order of their file names; none when `dir` does not
// exist. Files whose names are not an escaped image name are passed over. unavailable when `dir`
// cannot be read.
Result<std::vector<ImageUse>> ListImageUses(const std::string& dir);

// Drops the record of `image` (none is fine). unavailable when its file cannot be removed.
Status ForgetImageUse(const std::string& dir, const std::string& image);

// An image reference as the engines complete it, so that names written differently compare
// equal: "busybox" is "docker.io/library/busybox:latest", "localhost/a" is "localhost/a:latest";
// a reference with a tag or a digest keeps it.
std::string CanonicalImage(const std::string& image);

// Of `uses`, the images unused for at least `unused_for_ms` at `now_ms` that are neither
// `configured` (in [sandbox.images]: the next attempt runs them) nor `in_use` (by an existing
// container, any of the engine's), compared as CanonicalImage does. In the order of `uses`.
std::vector<std::string> ImagesToRemove(const std::vector<ImageUse>& uses,
                                        const std::vector<std::string>& configured,
                                        const std::vector<std::string>& in_use, Millis now_ms,
                                        Millis unused_for_ms);

}  // namespace tx::worker
