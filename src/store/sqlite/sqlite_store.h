#pragma once
// The SQLite Store: WAL, a short-sleep busy handler, cached prepared statements, BEGIN IMMEDIATE
// for writes. Private to store/: callers use store::Open().

#include <memory>
#include <string>

#include "store/store.h"

namespace tx::store::sqlite {

Result<std::unique_ptr<Store>> OpenSqlite(const OpenOptions& options);

}  // namespace tx::store::sqlite
