#pragma once
// Ids: "task-" or "worker-" followed by 8 lowercase base32 characters (40 random bits).
// Callers check for a collision inside the transaction that inserts the id.

#include <string>
#include <string_view>

namespace tx {

std::string NewTaskId();
std::string NewWorkerId();
// 64 hex characters: 256 bits from the kernel's random source (getrandom), for API tokens and
// worker credentials. Aborts if the kernel gives none (there is no safe fallback).
std::string NewToken();

bool LooksLikeTaskId(std::string_view s);
bool LooksLikeWorkerId(std::string_view s);

}  // namespace tx
