// tx sandbox gc: what container sandboxes leave behind (docs/sandbox.md).

#include <set>
#include <sstream>

#include "cli/commands.h"
#include "exec/command.h"
#include "service/worker_service.h"
#include "worker/flags.h"
#include "worker/sandbox.h"

namespace tx::cli {

Handler SetupSandboxGc(CLI::App& cmd) {
  (void)cmd;
  return [](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(worker::WorkerConfig config,
                        worker::BuildWorkerConfig(ctx.DbPath(), SelfExe(), {}));
    std::vector<std::string> engine = worker::EngineCommand(config.sandbox);
    if (engine.empty()) {
      return Error::InvalidArgument(
          "no container sandbox is configured here ([worker] sandbox = \"podman\" or \"docker\")");
    }
    // This store's containers, with the worker each ran for.
    std::vector<std::string> list = engine;
    std::string worker_of = config.sandbox.kind == worker::SandboxKind::kDocker
                                ? "{{.Label \"tx.worker\"}}"
                                : "{{index .Labels \"tx.worker\"}}";
    list.insert(list.end(), {"ps", "-a", "--filter", "label=tx.store=" + config.local_dir,
                             "--format", "{{.ID}} " + worker_of});
    TX_ASSIGN_OR_RETURN(exec::CommandResult listed,
                        exec::RunCommand(list, "", {}, 1 << 20, 60'000));
    if (!listed.ok()) return Error::Unavailable(engine[0] + " ps: " + listed.FirstLine());
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, workers.List(LiveWorkerStatuses()));
    std::set<std::string> alive;
    for (const auto& w : live) alive.insert(w.id);
    std::vector<std::string> doomed;
    std::istringstream lines(listed.out);
    for (std::string id, worker_id; lines >> id >> worker_id;) {
      if (!alive.contains(worker_id)) doomed.push_back(id);
    }
    if (!doomed.empty()) {
      std::vector<std::string> rm = engine;
      rm.insert(rm.end(), {"rm", "-f"});
      rm.insert(rm.end(), doomed.begin(), doomed.end());
      TX_ASSIGN_OR_RETURN(exec::CommandResult removed,
                          exec::RunCommand(rm, "", {}, 1 << 20, 120'000));
      if (!removed.ok()) return Error::Unavailable(engine[0] + " rm: " + removed.FirstLine());
    }
    std::vector<std::string> prune = engine;
    prune.insert(prune.end(), {"image", "prune", "-f"});
    TX_ASSIGN_OR_RETURN(exec::CommandResult pruned,
                        exec::RunCommand(prune, "", {}, 1 << 20, 120'000));
    if (!pruned.ok()) return Error::Unavailable(engine[0] + " image prune: " + pruned.FirstLine());
    if (ctx.json()) {
      ctx.PrintJson({{"removed_containers", doomed}});
    } else {
      ctx.out() << "removed " << doomed.size()
                << " container(s) of workers no longer alive; pruned dangling images\n";
    }
    return Ok();
  };
}

}  // namespace tx::cli
