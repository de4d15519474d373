// tx claim, claim:release, claim:renew

#include <unistd.h>

#include <functional>
#include <memory>

#include "cli/commands.h"
#include "cli/table.h"
#include "core/duration.h"
#include "core/json.h"
#include "core/validation.h"
#include "exec/process_info.h"
#include "service/claim_service.h"
#include "service/worker_service.h"

namespace tx::cli {

namespace {

// A hand-run claim acts as a worker name, registered on first use with a heartbeat interval as
// long as the lease so it outlives the command (the registration commits with the claim).
service::ManualWorker Manual(const std::string& flag, Millis lease_ms) {
  return {flag.empty() ? "cli" : flag, lease_ms, exec::Hostname(), getppid()};
}

void PrintClaim(Context& ctx, const service::ClaimResult& r) {
  if (ctx.json()) {
    nlohmann::json j = ToJson(r.claim);
    j["task"] = ToJson(r.task, {});
    ctx.PrintJson(j);
    return;
  }
  ctx.out() << "claimed " << r.task.id << " (" << Printable(r.task.title) << ")\n"
            << "  token      " << r.claim.token << "\n"
            << "  worker     " << r.claim.worker_id << "\n"
            << "  attempt    " << r.task.attempt << " of " << r.task.max_attempts << "\n"
            << "  lease      until " << FormatTime(r.claim.lease_expires_at) << " ("
            << FormatDuration(r.claim.lease_ms) << ")\n";
}

}  // namespace

Handler SetupClaim(CLI::App& cmd) {
  struct Args {
    std::string task, lease, worker;
    bool next = false;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("task", a->task, "Task id to claim")->type_name("");
  cmd.add_flag("--next", a->next, "Claim the best eligible ready task instead of a named one");
  NonEmpty(cmd.add_option("--lease", a->lease, "Lease duration (default 30m)")->type_name("DUR"));
  NonEmpty(cmd.add_option("--worker", a->worker,
                          "Worker id, or a name registered on first use (default: cli)")
               ->type_name("W"));
  return [a](Context& ctx) -> Status {
    if (a->next == !a->task.empty()) {
      return Error::InvalidArgument("tx claim takes a task id or --next (one of them)");
    }
    Millis lease = ctx.options().default_lease_ms;
    if (!a->lease.empty()) {
      TX_ASSIGN_OR_RETURN(lease, ParseDuration(a->lease));
      if (lease <= 0)
        return Error::InvalidArgument("invalid lease '" + a->lease + "': must be more than 0s");
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::ClaimService claims(*store, ctx.clock(), ctx.options());
    bool by_id = a->worker.rfind("worker-", 0) == 0;
    if (a->next && by_id) {
      TX_ASSIGN_OR_RETURN(std::optional<service::ClaimResult> r,
                          claims.ClaimNext(a->worker, lease));
      if (!r) return Error::NotFound("no eligible ready task for worker " + a->worker);
      PrintClaim(ctx, *r);
    } else if (a->next) {
      TX_ASSIGN_OR_RETURN(service::ClaimResult r,
                          claims.ClaimNextAs(Manual(a->worker, lease), lease));
      PrintClaim(ctx, r);
    } else if (by_id) {
      TX_ASSIGN_OR_RETURN(service::ClaimResult r, claims.ClaimTask(a->task, a->worker, lease));
      PrintClaim(ctx, r);
    } else {
      TX_ASSIGN_OR_RETURN(service::ClaimResult r,
                          claims.ClaimTaskAs(a->task, Manual(a->worker, lease), lease));
      PrintClaim(ctx, r);
    }
    return Ok();
  };
}

namespace {

// A command on the holder's own claim: the task, and its token (--token or $TX_CLAIM_TOKEN).
// `run` gets the resolved token and an open ClaimService.
using HeldClaimFn =
    std::function<Status(Context&, service::ClaimService&, const std::string&, std::int64_t)>;

Handler SetupHeldClaimCommand(CLI::App& cmd, const char* name, HeldClaimFn run) {
  struct Args {
    std::string task, token;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("task", a->task, "Task id")->type_name("")->required();
  NonEmpty(
      cmd.add_option("--token", a->token, "The claim's fencing token (default: $TX_CLAIM_TOKEN)")
          ->type_name("N"));
  return [a, name, run](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(std::int64_t token, ResolveToken(a->token, name));
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::ClaimService claims(*store, ctx.clock(), ctx.options());
    return run(ctx, claims, a->task, token);
  };
}

}  // namespace

Handler SetupClaimRelease(CLI::App& cmd) {
  return SetupHeldClaimCommand(cmd, "tx claim:release",
                               [](Context& ctx, service::ClaimService& claims,
                                  const std::string& task, std::int64_t token) -> Status {
                                 TX_ASSIGN_OR_RETURN(Task t, claims.Release(task, token));
                                 if (ctx.json()) {
                                   ctx.PrintJson(ToJson(t, {}));
                                 } else {
                                   ctx.out() << "released " << t.id << ": it is "
                                             << ToString(t.status) << " again\n";
                                 }
                                 return Ok();
                               });
}

Handler SetupClaimRenew(CLI::App& cmd) {
  return SetupHeldClaimCommand(cmd, "tx claim:renew",
                               [](Context& ctx, service::ClaimService& claims,
                                  const std::string& task, std::int64_t token) -> Status {
                                 TX_ASSIGN_OR_RETURN(Claim c, claims.Renew(task, token));
                                 if (ctx.json()) {
                                   ctx.PrintJson(ToJson(c));
                                 } else {
                                   ctx.out() << "renewed " << c.task_id << " (token " << c.token
                                             << "): lease until " << FormatTime(c.lease_expires_at)
                                             << ", renewal " << c.renewed_count << " of "
                                             << ctx.options().max_renewals << '\n';
                                 }
                                 return Ok();
                               });
}

}  // namespace tx::cli
