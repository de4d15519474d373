// tx usage: the usage ledger summed; tx agent lift: a usage limit lifted by hand (docs/agents.md).

#include <memory>

#include "cli/commands.h"
#include "cli/print.h"
#include "cli/table.h"
#include "core/duration.h"
#include "service/agent_service.h"

namespace tx::cli {

Handler SetupUsage(CLI::App& cmd) {
  struct Args {
    std::string by = "task", since;
  };
  auto a = std::make_shared<Args>();
  NonEmpty(cmd.add_option("--by", a->by, "Group by task, queue, agent or day (UTC)")
               ->type_name("task|queue|agent|day"));
  NonEmpty(cmd.add_option("--since", a->since, "Only the last DUR, e.g. 24h or 7d (default: all)")
               ->type_name("DUR"));
  return [a](Context& ctx) -> Status {
    Millis since = 0;
    if (!a->since.empty()) {
      TX_ASSIGN_OR_RETURN(Millis d, ParseDuration(a->since));
      since = std::max<Millis>(0, ctx.now() - d);
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::AgentService agents(*store, ctx.clock(), ctx.options());
    if (ctx.json()) {
      TX_ASSIGN_OR_RETURN(nlohmann::json doc, agents.UsageDocument(a->by, since));
      ctx.PrintJson(doc);
      return Ok();
    }
    TX_ASSIGN_OR_RETURN(std::vector<service::UsageGroup> groups, agents.Summarize(a->by, since));
    UsageTotal total;
    for (const auto& g : groups) {
      total.tokens += g.total.tokens;
      total.cost_usd += g.total.cost_usd;
      total.turns += g.total.turns;
      total.attempts += g.total.attempts;
      total.estimated = total.estimated || g.total.estimated;
    }
    if (groups.empty()) {
      ctx.out() << "no agent usage" << (since > 0 ? " since " + FormatTime(since) : "") << '\n';
      return Ok();
    }
    std::vector<std::string> head = {a->by == "day"     ? "DAY"
                                     : a->by == "task"  ? "TASK"
                                     : a->by == "queue" ? "QUEUE"
                                                        : "AGENT"};
    if (a->by == "task") head.push_back("TITLE");
    for (const char* h :
         {"ATTEMPTS", "COST", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TURNS"}) {
      head.push_back(h);
    }
    Table table(head);
    auto row = [&](const std::string& key, const std::string& title, const UsageTotal& t) {
      std::vector<std::string> r = {key};
      if (a->by == "task") r.push_back(title);
      r.push_back(std::to_string(t.attempts));
      r.push_back(Dollars(t.cost_usd) + (t.estimated ? "~" : ""));
      r.push_back(Count(t.tokens.input));
      r.push_back(Count(t.tokens.output));
      r.push_back(Count(t.tokens.cache_read));
      r.push_back(Count(t.tokens.cache_write));
      r.push_back(std::to_string(t.turns));
      table.Add(r);
    };
    for (const auto& g : groups) row(g.key.empty() ? "-" : g.key, g.title, g.total);
    row("total", "", total);
    table.Print(ctx.out());
    if (total.estimated) ctx.out() << "~ estimated from the token counts and [prices]\n";
    return Ok();
  };
}

Handler SetupAgentLift(CLI::App& cmd) {
  struct Args {
    std::string profile, account;
  };
  auto a = std::make_shared<Args>();
  cmd.add_option("profile", a->profile, "Agent profile")->type_name("")->required();
  NonEmpty(
      cmd.add_option("--account", a->account, "Only this account of the profile")->type_name("A"));
  return [a](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    service::AgentService agents(*store, ctx.clock(), ctx.options());
    std::optional<std::string> account;
    if (!a->account.empty()) account = a->account;
    TX_ASSIGN_OR_RETURN(std::vector<AgentLimit> lifted, agents.Lift(a->profile, account));
    if (ctx.json()) {
      nlohmann::json out = {{"lifted", nlohmann::json::array()}};
      for (const auto& l : lifted) out["lifted"].push_back(ToJson(l));
      ctx.PrintJson(out);
      return Ok();
    }
    for (const auto& l : lifted) {
      ctx.out() << "lifted the limit of " << l.profile
                << (l.account.empty() ? "" : " (account " + l.account + ")")
                << "; its tasks may run now\n";
    }
    return Ok();
  };
}

}  // namespace tx::cli
