#include "exec/http_module.h"

#include <dlfcn.h>

#include <string>

namespace tx::exec {
namespace {

struct Module {
  void* handle = nullptr;
  std::string error;  // why it could not be opened, when handle is null
};

const Module& Open() {
  static const Module module = [] {
    Module m;
    // RTLD_LOCAL: its own definitions stay its own; RTLD_NOW: a symbol tx does not export is
    // reported here, in one line, rather than at the first call that needs it.
    m.handle = ::dlopen(kHttpModule, RTLD_NOW | RTLD_LOCAL);
    if (m.handle == nullptr) {
      const char* why = ::dlerror();
      m.error = why != nullptr ? why : "dlopen failed";
    }
    return m;
  }();
  return module;
}

}  // namespace

Result<const void*> HttpModuleEntry(const char* name) {
  const Module& m = Open();
  if (m.handle == nullptr) {
    return Error::Unavailable(std::string("this command needs tx's HTTP module, which is built and "
                                          "installed with tx: ") +
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
