// tx task ask|answer: questions from agents (docs/agents.md, "Questions"). An agent asks with its
// claim's token, as it reports; a person answers, and the task goes back to the queue.

#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/print.h"
#include "core/json.h"
#include "service/claim_service.h"
#include "service/task_service.h"
#include "worker/remote.h"

namespace tx::cli {

Handler SetupTaskAsk(CLI::App& cmd) {
  struct Args {
    std::string question, task, token;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("question", a->question, "What a person should answer")->type_name("")->required();
  NonEmpty(cmd.add_option("--task", a->task, "The task (default: $TX_TASK_ID)")->type_name("ID"));
  NonEmpty(
      cmd.add_option("--token", a->token, "The claim's fencing token (default: $TX_CLAIM_TOKEN)")
          ->type_name("N"));
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(std::string id, ResolveAgentTask(a->task, "tx task ask"));
    TX_ASSIGN_OR_RETURN(std::int64_t token,
                        ResolveToken(a->token, "tx task ask", /*forceable=*/false));
    Task asked;
    if (std::optional<RemoteFleet> remote = ctx.Remote()) {
      // An agent of a remote worker asks through the server, fenced by the same token.
      TX_ASSIGN_OR_RETURN(auto fleet, worker::ConnectRemote(remote->url, remote->token));
      TX_ASSIGN_OR_RETURN(asked, fleet->Ask(id, token, a->question));
    } else {
      TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
      service::ClaimService claims(*store, ctx.clock(), ctx.options());
      TX_ASSIGN_OR_RETURN(asked, claims.Ask(id, token, a->question));
    }
    if (ctx.json()) {
      ctx.PrintJson(ToJson(asked, {}));
    } else {
      // Read by the agent that asked: what to do now.
      ctx.out() << asked.id << "  " << ToString(asked.status)
                << "  your question is recorded for a person to answer. Stop here and exit: the "
                   "task runs again with the answer.\n";
    }
    return Ok();
  };
}

Handler SetupTaskAnswer(CLI::App& cmd) {
  struct Args {
    std::string id, answer;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("id", a->id, "Task id (a waiting task)")->type_name("")->required();
  cmd.add_option("answer", a->answer, "The answer, for the agent's next attempt")
      ->type_name("")
      ->required();
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::TaskService tasks(*store, ctx.clock(), ctx.options());
    TX_RETURN_IF_ERROR(tasks.Answer(a->id, a->answer));
    return ShowTask(ctx, *store, a->id);
  };
}

}  // namespace tx::cli
