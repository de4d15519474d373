#include "store/sqlite/small_alloc.h"

#include <sqlite3.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/sanitizers.h"

namespace tx::store::sqlite {

namespace {

// A block is an 8-byte header holding its usable size, then the bytes SQLite uses (8-byte
// aligned, as SQLite requires). Small blocks are 16..kMaxSmall bytes in all, in steps of 16;
// anything larger goes to malloc and free directly.
constexpr std::size_t kHeader = 8;
constexpr std::size_t kStep = 16;
constexpr std::size_t kMaxSmall = 2048;
constexpr int kClasses = kMaxSmall / kStep;
// Each class keeps at most this many bytes of free blocks per thread (256 blocks of 32 bytes, 4
// of 2 KiB), so a thread holds at most 1 MiB, in practice a few KiB.
constexpr std::size_t kMaxCachedBytes = 8 * 1024;

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it can be read after the thread's cache is gone (a free during the
// destruction of another thread_local or static object then goes straight to free()).
thread_local bool t_cache_gone = false;

struct Cache {
  FreeBlock* head[kClasses] = {};
  int count[kClasses] = {};
  ~Cache() {
    for (int c = 0; c < kClasses; ++c) {
      for (FreeBlock* b = head[c]; b != nullptr;) {
        FreeBlock* next = b->next;
        std::free(b);
        b = next;
      }
    }
    t_cache_gone = true;
  }
};

thread_local Cache t_cache;

// The whole block size for a request of n bytes (n > 0).
std::size_t BlockSize(std::size_t n) {
  std::size_t total = n + kHeader;
  return total <= kMaxSmall ? (total + kStep - 1) / kStep * kStep : (total + 7) / 8 * 8;
}

void* Malloc(int n) {
  if (n <= 0) return nullptr;
  std::size_t size = BlockSize(static_cast<std::size_t>(n));
  void* block = nullptr;
  if (size <= kMaxSmall && !t_cache_gone) {
    int c = static_cast<int>(size / kStep) - 1;
    Cache& cache = t_cache;
    if (cache.head[c] != nullptr) {
      FreeBlock* b = cache.head[c];
      cache.head[c] = b->next;
      --cache.count[c];
      block = b;
    }
  }
  if (block == nullptr) block = std::malloc(size);
  if (block == nullptr) return nullptr;
  auto* header = static_cast<std::uint64_t*>(block);
  *header = size - kHeader;
  return static_cast<char*>(block) + kHeader;
}

std::uint64_t UsableSize(void* p) {
  return *reinterpret_cast<std::uint64_t*>(static_cast<char*>(p) - kHeader);
}

void Free(void* p) {
  if (p == nullptr) return;
  void* block = static_cast<char*>(p) - kHeader;
  std::size_t size = UsableSize(p) + kHeader;
  if (size <= kMaxSmall && !t_cache_gone) {
    int c = static_cast<int>(size / kStep) - 1;
    Cache& cache = t_cache;
    if (static_cast<std::size_t>(cache.count[c]) * size < kMaxCachedBytes) {
      auto* b = static_cast<FreeBlock*>(block);
      b->next = cache.head[c];
      cache.head[c] = b;
      ++cache.count[c];
      return;
    }
  }
  std::free(block);
}

void* Realloc(void* p, int n) {
  if (p == nullptr) return Malloc(n);
  if (n <= 0) {
    Free(p);
    return nullptr;
  }
  std::uint64_t have = UsableSize(p);
  if (static_cast<std::uint64_t>(n) <= have) return p;
  void* q = Malloc(n);
  if (q == nullptr) return nullptr;  // SQLite keeps (and later frees) p
  std::memcpy(q, p, have);
  Free(p);
  return q;
}

int Size(void* p) { return p == nullptr ? 0 : static_cast<int>(UsableSize(p)); }

int Roundup(int n) {
  return n <= 0 ? n : static_cast<int>(BlockSize(static_cast<std::size_t>(n)) - kHeader);
}

int Init(void*) { return SQLITE_OK; }
void Shutdown(void*) {}

}  // namespace

bool InstallSmallAlloc() {
#if defined(TX_ADDRESS_SANITIZER)
  return false;  // let AddressSanitizer see each of SQLite's blocks
#endif
  static const sqlite3_mem_methods kMethods = {Malloc,  Free, Realloc,  Size,
                                               Roundup, Init, Shutdown, nullptr};
  return sqlite3_config(SQLITE_CONFIG_MALLOC, &kMethods) == SQLITE_OK;
}

}  // namespace tx::store::sqlite
