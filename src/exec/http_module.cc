#include "exec/http_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "exec/process_info.h"

namespace tx::exec {
namespace {

namespace fs = std::filesystem;

struct Module {
  void* handle = nullptr;
  std::string error;  // why it could not be opened, when handle is null
};

Module OpenModule() {
  Module m;
  fs::path exe = SelfExecutable();
  if (exe.empty()) {
    m.error = "/proc/self/exe cannot be read";
    return m;
  }
  fs::path beside = exe.parent_path() / kHttpModule;
  fs::path installed = (exe.parent_path() / TX_HTTP_MODULE_DIR / kHttpModule).lexically_normal();
  const fs::path& path = ::access(beside.c_str(), F_OK) == 0 ? beside : installed;
  if (::access(path.c_str(), F_OK) != 0) {
    m.error = std::string(kHttpModule) + " is neither beside " + exe.string() + " nor in " +
              installed.parent_path().string();
    return m;
  }
  // RTLD_LOCAL: its own definitions stay its own; RTLD_NOW: a symbol tx does not export is
  // reported here, in one line, rather than at the first call that needs it.
  m.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.handle == nullptr) {
    const char* why = ::dlerror();
    m.error = why != nullptr ? why : path.string() + ": dlopen failed";
  }
  return m;
}

const Module& Open() {
  static const Module module = OpenModule();
  return module;
}

}  // namespace

Result<const void*> HttpModuleEntry(const char* name) {
  const Module& m = Open();
  if (m.handle == nullptr) {
    return Error::Unavailable(
        "this command needs tx's HTTP module, which is built and installed "
        "with tx: " +
        m.error);
  }
  // dlerror is per thread; clear it so that a null entry is told from an error.
  ::dlerror();
  void* entry = ::dlsym(m.handle, name);
  if (entry == nullptr) {
    const char* why = ::dlerror();
    return Error::Unavailable(std::string(kHttpModule) + " has no " + name + ": " +
                              (why != nullptr ? why : "null entry") +
                              " (a module of another tx build?)");
  }
  return static_cast<const void*>(entry);
}

}  // namespace tx::exec
