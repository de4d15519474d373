#pragma once
// Ids: "task-" or "worker-" followed by 8 lowercase base32 characters (40 random bits).
// Callers check for a collision inside the transaction that inserts the id.

#include <string>
#include <string_view>

namespace tx {

std::string NewTaskId();
std::string NewWorkerId();
std::string NewToken();  // 32 hex chars, for API tokens

bool LooksLikeTaskId(std::string_view s);
bool LooksLikeWorkerId(std::string_view s);

}  // namespace tx
