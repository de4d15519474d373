#pragma once
// TX_ADDRESS_SANITIZER is defined when AddressSanitizer instruments this translation unit. GCC
// says so with __SANITIZE_ADDRESS__; clang 14 only through __has_feature(address_sanitizer).

#if defined(__SANITIZE_ADDRESS__)
#define TX_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TX_ADDRESS_SANITIZER 1
#endif
#endif
