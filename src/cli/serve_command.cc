// tx serve: the HTTP API alone, until SIGTERM or SIGINT.

#include <signal.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "api/server_options.h"
#include "cli/commands.h"
#include "cli/http_api.h"
#include "log/process_log.h"
#include "orchestrator/process_liveness.h"
#include "store/location.h"

namespace tx::cli {

Handler SetupServe(CLI::App& cmd) {
  auto http = std::make_shared<std::string>("127.0.0.1:8787");
  NonEmpty(cmd.add_option("--http", *http,
                          "Address to listen on (default 127.0.0.1:8787; port 0 = any free)")
               ->type_name("HOST:PORT"));
  auto threads = std::make_shared<std::string>();
  NonEmpty(cmd.add_option("--http-threads", *threads,
                          "Most threads serving requests at once (default 256, started as needed; "
                          "see docs/api.md)")
               ->type_name("N"));
  return [http, threads](Context& ctx) -> Status {
    TX_ASSIGN_OR_RETURN(auto address, ParseListenAddress(*http));
    api::ServerOptions o;
    o.db_path = ctx.DbPath();
    if (!store::IsPostgresUrl(o.db_path) && !std::filesystem::exists(o.db_path)) {
      return Error::NotFound("no store at " + o.db_path + " (run tx init)");
    }
    o.local_pool = ctx.LocalPool();
    o.host = address.first;
    o.port = address.second;
    o.service = ctx.options();
    if (!threads->empty()) {
      TX_ASSIGN_OR_RETURN(o.threads,
                          ParseCount("--http-threads", *threads, api::ServerOptions::kMaxThreads));
    }
    // Its lines (a store's warnings, the notifications') as the orchestrator's: text, UTC with Z.
    TX_ASSIGN_OR_RETURN(std::shared_ptr<log::ProcessLog> process_log,
                        log::ProcessLog::Open(log::ProcessLog::Options{}));
    process_log->InstallAsDefault("tx-serve");
    // Signals are taken by sigwait below; blocked first so the server's threads inherit the mask.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);  // ignored: logrotate and a closed terminal must not stop it
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    TX_ASSIGN_OR_RETURN(std::unique_ptr<HttpApi> server, StartHttpApi(o));
    std::string shown = o.host.find(':') == std::string::npos ? o.host : "[" + o.host + "]";
    if (ctx.json()) {
      ctx.PrintJson({{"listening", "http://" + shown + ":" + std::to_string(server->port())}});
    } else {
      ctx.out() << "listening on http://" << shown << ":" << server->port() << std::endl;
    }
    ctx.out().flush();
    int sig = SIGHUP;
    while (sig == SIGHUP) sigwait(&stop, &sig);
    server->Stop();
    return Ok();
  };
}

}  // namespace tx::cli
