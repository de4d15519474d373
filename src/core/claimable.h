#pragma once
// Whether any running worker could claim a task: the check behind `tx task add`'s warning and the
// mark on a ready task that nobody can run (the source notes' "no workers with fresh heartbeats
// available"). Pure: the caller passes the workers it read.

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/task.h"
#include "core/worker.h"

namespace tx {

// Why no worker in `workers` can claim `t`, or nullopt when one can. Only workers that may claim
// now or later count: live, fresh at `now` and not stopping (a paused one counts: it claims once
// resumed). The reason names the first requirement nobody meets, in the order a claim checks
// them: a running worker at all, the task's queue, its capabilities, its owner pin.
std::optional<std::string> WhyNoWorkerCanClaim(const Task& t, const std::vector<Worker>& workers,
                                               const Moment& now);

}  // namespace tx
