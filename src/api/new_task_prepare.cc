// DecodeAndPrepareNewTask (api/new_task.h), apart from the decoder so that the fuzz target builds
// the decoder alone, without the worker library.

#include "api/new_task.h"

namespace tx::api {

using nlohmann::json;

Result<Task> DecodeAndPrepareNewTask(const json& body, const worker::WorkerConfig& config) {
  TX_ASSIGN_OR_RETURN(Task t, DecodeNewTask(body));
  TX_RETURN_IF_ERROR(worker::PrepareGitTask(config, /*auto_merge=*/false, t));
  TX_RETURN_IF_ERROR(worker::PrepareAgentTask(config, t));
  return t;
}

}  // namespace tx::api
