#pragma once
// Clang thread-safety annotations (-Wthread-safety); they compile to nothing elsewhere. The
// capability they name is a tx::Mutex (core/mutex.h): scripts/thread_safety checks them.

#if defined(__clang__)
#define TX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TX_THREAD_ANNOTATION(x)
#endif

// On a class whose objects are locks (tx::Mutex), and on an RAII class that holds one.
#define TX_CAPABILITY(name) TX_THREAD_ANNOTATION(capability(name))
#define TX_SCOPED_CAPABILITY TX_THREAD_ANNOTATION(scoped_lockable)

// On a member: read or written only while holding `m`.
#define TX_GUARDED_BY(m) TX_THREAD_ANNOTATION(guarded_by(m))

// On a function: called only while holding (REQUIRES) or not holding (EXCLUDES) these; it takes
// (ACQUIRE) or gives up (RELEASE) these, or the object's own when none are named.
#define TX_REQUIRES(...) TX_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TX_EXCLUDES(...) TX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TX_ACQUIRE(...) TX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TX_RELEASE(...) TX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
