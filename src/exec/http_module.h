#pragma once
// The HTTP part of tx — the API server (Boost.Asio and Beast, cpp-httplib's types), the remote
// workers' client (cpp-httplib) and the notifications' webhooks (OpenSSL's HMAC) — is a shared
// object, libtx_http.so, opened on first use as libpq is (store/postgres/libpq.h): the many tx
// processes that never speak HTTP (local workers, the CLI) map none of those libraries.
//
// The module is found relative to the running executable (/proc/self/exe): beside it in a build,
// in LIBDIR/tx of the prefix it is installed in (TX_HTTP_MODULE_DIR). Not by a RUNPATH: the
// loader would then look in tx's directory for every library tx links, ~100 failed opens at each
// start of every tx process. Its code calls the rest of tx in the executable, which exports the
// symbols it needs (CMakeLists.txt), and the C++ library tx links in
// (cmake/libstdcxx_exports.cmake).
// Each layer that reaches into it names its own entry, a constant defined in the module with C
// linkage (worker/remote.h, notify/sinks.h, cli/http_api.h), and declares it weak as well: a
// program that links the object defining an entry (a test of HttpCoordinator, of the webhook)
// uses its own and opens nothing. (A static library's object is linked only when something it
// defines is referenced strongly; a weak reference alone does not pull it in.)

#include "core/error.h"

namespace tx::exec {

// The module's file name.
inline constexpr const char* kHttpModule = "libtx_http.so";

// The address of the entry `name` of libtx_http.so, opened once (thread-safe, never closed);
// unavailable, in one line naming where it was looked for and why, when it cannot be opened or
// lacks `name`.
Result<const void*> HttpModuleEntry(const char* name);

// `linked` (the weak declaration of the entry) when this program was linked with the HTTP part,
// else the module's entry of that name.
template <typename Entry>
Result<Entry> HttpEntry(const Entry* linked, const char* name) {
  if (linked != nullptr) return *linked;
  TX_ASSIGN_OR_RETURN(const void* entry, HttpModuleEntry(name));
  return *static_cast<const Entry*>(entry);
}

}  // namespace tx::exec
