#pragma once
// When a usage limit resets, as a point in time: an agent's ResetHint (agent/events.h) — an
// epoch, a delay, or a time of day in a named time zone — resolved against now and the zone's
// rules, which the system's date(1) applies from the time zone database.

#include "agent/events.h"
#include "core/clock.h"

namespace tx::worker {

// Epoch milliseconds of the reset, later than `now`; 0 when the hint gives none or its zone is
// unknown (the caller then backs off). A time of day with no date is its next occurrence.
Millis ResolveReset(const agent::ResetHint& hint, Millis now);

}  // namespace tx::worker
