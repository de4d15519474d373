#pragma once
// GateAgentCommand: what an agent may ask its worker to run (the worker's gateway,
// worker/agent_gateway.h). An agent's `tx` does not act itself: it hands its arguments to the
// worker, which runs them only if they are one of the commands on its own task below, within the
// worker's allow-list, and never as an operator.
//
//   task show [ID]                 its own task (the default)
//   task done|fail|review [ID]     its own task, --result/--error, --token (its own) if given
//   task ask QUESTION              --task (its own) if given
//   task note TEXT                 --task (its own) if given
//   task add TITLE [options]       a subtask of its own (the worker's tx adds it under the task),
//                                  naming neither its workdir, repository, command, owner nor
//                                  metadata, in its own sandbox at least (--sandbox added)
//
// plus `--json` before the command, and --help anywhere. Never --db, --force, another task's id
// or token, or any option the command does not have.

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace tx {

struct AgentIdentity {
  std::string task_id;
  std::string token;       // the claim's fencing token, as text
  std::string allow_list;  // the worker's allowed_commands (core/argv.h IsAllowed); "" = all
  std::string sandbox;     // the sandbox it runs in, which its subtasks inherit; "" = none
};

// The arguments (without "tx") the worker's own tx is to run for `args`: the same, with the
// task's id added where the command needs it and left out. invalid_argument naming what is
// refused: a command outside the list above or the allow-list, an operator's option, another
// task.
Result<std::vector<std::string>> GateAgentCommand(const std::vector<std::string>& args,
                                                  const AgentIdentity& agent);

// The wire between an agent's tx and its worker: one line of JSON each way.
//   request {"args": [...], "key": "..."}  reply {"exit_code": N, "out": "...", "err": "..."}
// The key is the attempt's (TX_AGENT_KEY): a worker answers only its current attempt's.
struct AgentRequest {
  std::vector<std::string> args;
  std::string key;
};
struct AgentReply {
  int exit_code = 0;
  std::string out;
  std::string err;
};
std::string EncodeAgentRequest(const AgentRequest& request);
Result<AgentRequest> DecodeAgentRequest(std::string_view line);
std::string EncodeAgentReply(const AgentReply& reply);
Result<AgentReply> DecodeAgentReply(std::string_view line);

}  // namespace tx
