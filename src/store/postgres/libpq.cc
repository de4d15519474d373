#include "store/postgres/libpq.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace tx::store::postgres::pq {

namespace {

Api api;
std::string load_error;

void LoadOnce() {
  // RTLD_LOCAL: its symbols stay out of the global scope, where a program that also links libpq
  // (the tests do) would otherwise see two definitions.
  void* lib = ::dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    load_error = std::string("PostgreSQL stores need libpq (the Debian package libpq5): ") +
                 (why != nullptr ? why : "dlopen failed");
    return;
  }
#define TX_PQ_RESOLVE(ret, name, params, args)                                                 \
  api.name = reinterpret_cast<ret(*) params>(::dlsym(lib, #name));                             \
  if (api.name == nullptr) {                                                                   \
    load_error = "the libpq found lacks " #name " (PostgreSQL stores need libpq 14 or later)"; \
    return;                                                                                    \
  }
  TX_PQ_FUNCTIONS(TX_PQ_RESOLVE)
#undef TX_PQ_RESOLVE
}

}  // namespace

Status Load() {
  static std::once_flag once;
  std::call_once(once, LoadOnce);
  if (!load_error.empty()) return Error::Unavailable(load_error);
  return Ok();
}

const Api& Loaded() { return api; }

}  // namespace tx::store::postgres::pq
