#pragma once
// What every command handler gets: global flags, the store (opened on first use), the clock,
// the service options and the output helpers.

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "service/options.h"
#include "store/store.h"

namespace tx::cli {

// A fleet reached over HTTP alone: what an agent run by a remote worker (tx worker start
// --server) has — TX_SERVER and TX_API_TOKEN, and no store.
struct RemoteFleet {
  std::string url;
  std::string token;
};

struct GlobalFlags {
  std::string db;     // --db; else TX_DB; else .tx/tx.db
  bool json = false;  // --json
};

class Context {
 public:
  Context(GlobalFlags flags, std::ostream& out);

  bool json() const { return flags_.json; }
  std::ostream& out() { return out_; }
  // The store's clock once it is open (server time on a remote store), else this machine's.
  const Clock& clock() const { return store_ ? store_->clock() : clock_; }
  Moment now() const { return clock().Now(); }  // reads as Millis where a time is wanted
  const service::ServiceOptions& options() const { return options_; }

  // The store path or URL this invocation uses.
  std::string DbPath() const;
  // `config.toml` beside the store (its [git] settings are read by the review commands).
  std::string ConfigPath() const;
  // The pool of this machine's directory for the store (PoolId): the orchestrator an operator's
  // command here means, unless it names another (--id).
  std::string LocalPool() const;
  // Opens the store (once); `create` is for tx init. Over a remote fleet (Remote()), an invalid
  // argument saying which commands work there.
  Result<store::Store*> Store(bool create = false);
  // The fleet over HTTP, when TX_SERVER is set and neither --db nor TX_DB is: the commands an
  // agent uses (task show, done, fail, review, ask, note, and add for a subtask) then go through
  // the server.
  std::optional<RemoteFleet> Remote() const;

  // Prints one JSON document (pretty) followed by a newline.
  void PrintJson(const nlohmann::json& j);

  // The exit code of a command that printed its whole answer and still did not succeed (tx
  // doctor with a failed check): returned when its handler returns Ok, without the error line or
  // document a returned error would add.
  void set_exit_code(int code) { exit_code_ = code; }
  int exit_code() const { return exit_code_; }

 private:
  GlobalFlags flags_;
  std::ostream& out_;
  RealClock clock_;
  service::ServiceOptions options_;
  std::unique_ptr<store::Store> store_;
  int exit_code_ = 0;
};

// The task an agent's command acts on: --task, else TX_TASK_ID. Invalid argument when neither is
// set.
Result<std::string> ResolveAgentTask(const std::string& flag, const char* command);

// Reads --token, else TX_CLAIM_TOKEN. Invalid argument when neither is set or it is not an
// integer; `forceable`: the message names --force, the operator's way without a token.
Result<std::int64_t> ResolveToken(const std::string& flag, const char* command,
                                  bool forceable = true);

}  // namespace tx::cli
