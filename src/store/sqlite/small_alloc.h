#pragma once
// SQLite's memory allocator for tx: per-thread free lists of small blocks over malloc.
//
// SQLite frees a statement's register buffers every time the statement ends, and copies every
// text column it reads into a fresh buffer, so one claim-and-report transaction makes about 200
// malloc/free pairs, most of a few dozen bytes. glibc's per-thread cache holds only 7 blocks of a
// size; the rest take the slower arena path, which cost ~14% of the claim path's instructions.
// These lists keep up to 8 KiB of free blocks per size class per thread, so a transaction reuses
// the blocks the previous one freed.

namespace tx::store::sqlite {

// Installs the allocator (SQLITE_CONFIG_MALLOC). Only possible before SQLite initializes: returns
// false, leaving SQLite's default allocator, when it is too late (an embedding program used SQLite
// first).
bool InstallSmallAlloc();

}  // namespace tx::store::sqlite
