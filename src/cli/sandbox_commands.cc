// tx sandbox gc: what container sandboxes leave behind (docs/sandbox.md).

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "core/duration.h"
#include "exec/command.h"
#include "service/worker_service.h"
#include "worker/flags.h"
#include "worker/image_usage.h"
#include "worker/sandbox.h"

namespace tx::cli {
namespace {

// `engine` and `args`, run to their end; unavailable, quoting the engine, when it cannot be run or
// fails.
Result<std::string> Engine(const std::vector<std::string>& engine,
                           const std::vector<std::string>& args, long long timeout_ms = 60'000) {
  std::vector<std::string> argv = engine;
  argv.insert(argv.end(), args.begin(), args.end());
  TX_ASSIGN_OR_RETURN(exec::CommandResult r, exec::RunCommand(argv, "", {}, 1 << 20, timeout_ms));
  if (!r.ok()) return Error::Unavailable(engine[0] + " " + args[0] + ": " + r.FirstLine());
  return r.out;
}

}  // namespace

Handler SetupSandboxGc(CLI::App& cmd) {
  auto unused_for = std::make_shared<std::string>();
  NonEmpty(cmd.add_option("--unused-for", *unused_for,
                          "Remove the images tx ran that nothing used for DUR (default: [sandbox] "
                          "image_gc_after, 7d)")
               ->type_name("DUR"));
  return [unused_for](Context& ctx) -> Status {
    std::optional<Millis> unused_for_ms;
    if (!unused_for->empty()) {
      Result<Millis> ms = ParseDuration(*unused_for);
      if (!ms.ok()) return Error::InvalidArgument("--unused-for: " + ms.error().message());
      unused_for_ms = *ms;
    }
    TX_ASSIGN_OR_RETURN(worker::WorkerConfig config,
                        worker::BuildWorkerConfig(ctx.DbPath(), SelfExe(), {}));
    // Every engine this store's workers may run agents with: the worker's, its queues', and an
    // installed one a task may ask for (worker::ContainerEngines).
    std::vector<exec::ContainerEngine> engines = worker::ContainerEngines(config);
    if (engines.empty()) {
      return Error::InvalidArgument(
          "no container sandbox is configured here ([worker] sandbox = \"podman\" or \"docker\", "
          "a queue's, or [sandbox.images] for a task's)");
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::WorkerService workers(*store, ctx.clock(), ctx.options());
    TX_ASSIGN_OR_RETURN(std::vector<Worker> live, workers.List(LiveWorkerStatuses()));
    std::set<std::string> alive;
    for (const auto& w : live) alive.insert(w.id);
    std::vector<std::string> doomed;
    std::vector<std::string> in_use;
    std::vector<std::vector<std::string>> reachable;
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& [engine, configured] : engines) {
      // This store's containers, with the worker each ran for.
      std::string worker_of =
          engine[0] == "docker" ? "{{.Label \"tx.worker\"}}" : "{{index .Labels \"tx.worker\"}}";
      Result<std::string> listed =
          Engine(engine, {"ps", "-a", "--filter", "label=tx.store=" + config.local_dir, "--format",
                          "{{.ID}} " + worker_of});
      if (!listed.ok()) {
        // An engine no config names, only installed (docker without its daemon), is passed
        // over; one of several configured is reported, and the others go on.
        if (!configured) continue;
        if (engines.size() == 1) return listed.error();
        failed.push_back({{"engine", engine[0]}, {"error", listed.error().message()}});
        continue;
      }
      reachable.push_back(engine);
      std::vector<std::string> mine;
      std::istringstream lines(*listed);
      for (std::string id, worker_id; lines >> id >> worker_id;) {
        if (!alive.contains(worker_id)) mine.push_back(id);
      }
      if (!mine.empty()) {
        std::vector<std::string> rm = {"rm", "-f"};
        rm.insert(rm.end(), mine.begin(), mine.end());
        TX_RETURN_IF_ERROR(Engine(engine, rm, 120'000));
        doomed.insert(doomed.end(), mine.begin(), mine.end());
      }
      TX_ASSIGN_OR_RETURN(std::string containers,
                          Engine(engine, {"ps", "-a", "--format", "{{.Image}}"}));
      std::istringstream images(containers);
      for (std::string image; images >> image;) in_use.push_back(image);
    }

    // The images tx ran and nothing used for long enough: never one the config names (the next
    // attempt runs it) nor one any container still has (tx's or not), and never one tx did not
    // run (the other images are the user's).
    std::vector<std::string> configured;
    for (const auto& [cap, image] : config.sandbox.images) configured.push_back(image);
    std::string dir = worker::ImageUsesDir(config.local_dir);
    TX_ASSIGN_OR_RETURN(std::vector<worker::ImageUse> uses, worker::ListImageUses(dir));
    // The uses are this machine's file times: judged by its clock, not the store's.
    Millis after = unused_for_ms.value_or(config.sandbox.image_gc_after_ms);
    std::vector<std::string> unused =
        worker::ImagesToRemove(uses, configured, in_use, RealClock().NowMs(), after);
    // Without -f: an image a container has (since the listing, or under a name written
    // otherwise) stays, and the engine says why. An image is removed from every engine that
    // has it, and forgotten once none has.
    std::vector<std::string> removed, forgotten;
    for (const auto& image : unused) {
      bool gone = false, held = false;
      std::string why;
      for (const auto& engine : reachable) {
        if (!Engine(engine, {"image", "inspect", "--format", "{{.Id}}", image}).ok()) continue;
        Result<std::string> rmi = Engine(engine, {"rmi", image}, 120'000);
        if (rmi.ok()) {
          gone = true;
        } else {
          held = true;
          why = rmi.error().message();
        }
      }
      if (held) {
        failed.push_back({{"image", image}, {"error", why}});
        continue;
      }
      (gone ? removed : forgotten).push_back(image);  // forgotten: removed by someone else
      Status forget = worker::ForgetImageUse(dir, image);
      if (!forget.ok()) failed.push_back({{"image", image}, {"error", forget.error().message()}});
    }
    std::vector<std::string> kept;
    for (const auto& use : uses) {
      if (std::find(removed.begin(), removed.end(), use.image) == removed.end() &&
          std::find(forgotten.begin(), forgotten.end(), use.image) == forgotten.end()) {
        kept.push_back(use.image);
      }
    }
    if (ctx.json()) {
      ctx.PrintJson({{"removed_containers", doomed},
                     {"removed_images", removed},
                     {"forgotten_images", forgotten},
                     {"kept_images", kept},
                     {"failed_images", failed}});
      return Ok();
    }
    ctx.out() << "removed " << doomed.size() << " container(s) of workers no longer alive and "
              << removed.size() << " image(s) unused for " << FormatDuration(after) << "; kept "
              << kept.size() << " image(s) tx ran\n";
    for (const auto& f : failed) {
      if (f.contains("engine")) {
        ctx.out() << "could not list the containers of " << f["engine"].get<std::string>() << ": "
                  << f["error"].get<std::string>() << '\n';
      } else {
        ctx.out() << "could not remove image " << f["image"].get<std::string>() << ": "
                  << f["error"].get<std::string>() << '\n';
      }
    }
    return Ok();
  };
}

}  // namespace tx::cli
