#pragma once
// Clang thread-safety annotations (-Wthread-safety); they compile to nothing elsewhere.

#if defined(__clang__)
#define TX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TX_THREAD_ANNOTATION(x)
#endif

#define TX_GUARDED_BY(m) TX_THREAD_ANNOTATION(guarded_by(m))
#define TX_REQUIRES(m) TX_THREAD_ANNOTATION(requires_capability(m))
#define TX_EXCLUDES(m) TX_THREAD_ANNOTATION(locks_excluded(m))
