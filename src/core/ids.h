#pragma once
// Ids: "task-" or "worker-" followed by 8 lowercase base32 characters (40 bits).
// Callers check for a collision inside the transaction that inserts the id.

#include <string>
#include <string_view>

namespace tx {

// Task ids come in runs: a random 40-bit start, then the next value at each call, written so that
// a run's ids sort in the order they were drawn. The tasks a thread adds one after another then
// sit side by side in the store's id index, where random ids each landed on a page of their own
// (a bulk add of 100,000 ran 1.25x as fast with runs: docs/performance.md). One run a thread,
// begun again in a forked child.
std::string NewTaskId();
// Begins the thread's run again at a fresh random start: for a caller whose id was taken (it
// reached another run's ids), lest the next ones be taken too.
void RestartTaskIds();
std::string NewWorkerId();
// 64 hex characters: 256 bits from the kernel's random source (getrandom), for API tokens and
// worker credentials. Aborts if the kernel gives none (there is no safe fallback).
std::string NewToken();

bool LooksLikeTaskId(std::string_view s);
bool LooksLikeWorkerId(std::string_view s);

}  // namespace tx
