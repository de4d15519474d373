#include "cli/context.h"

#include <cstdlib>
#include <filesystem>

#include "core/orchestrator.h"
#include "core/validation.h"
#include "exec/process_info.h"
#include "orchestrator/process_liveness.h"
#include "store/location.h"

namespace tx::cli {

Context::Context(GlobalFlags flags, std::ostream& out) : flags_(std::move(flags)), out_(out) {
  options_.orchestrator_alive = orchestrator::OrchestratorAlive;
  options_.worker_alive = orchestrator::WorkerAlive;
}

std::string Context::LocalPool() const {
  return PoolId(exec::Hostname(), store::LocalDir(DbPath()));
}

std::string Context::DbPath() const {
  if (!flags_.db.empty()) return flags_.db;
  if (const char* env = std::getenv("TX_DB"); env != nullptr && *env != '\0') return env;
  return ".tx/tx.db";
}

std::string Context::ConfigPath() const {
  return (std::filesystem::path(store::LocalDir(DbPath())) / "config.toml").string();
}

std::optional<RemoteFleet> Context::Remote() const {
  const char* server = std::getenv("TX_SERVER");
  const char* db = std::getenv("TX_DB");
  if (!flags_.db.empty() || (db != nullptr && *db != '\0') || server == nullptr ||
      *server == '\0') {
    return std::nullopt;
  }
  const char* token = std::getenv("TX_API_TOKEN");
  return RemoteFleet{server, token != nullptr ? token : ""};
}

Result<store::Store*> Context::Store(bool create) {
  if (!store_ && Remote()) {
    return Error::InvalidArgument(
        "no store here, only the server at $TX_SERVER: task show, done, fail, review, ask and "
        "note, and an agent's task add, work through it (or pass --db)");
  }
  if (!store_) {
    store::OpenOptions o;
    o.url = DbPath();
    o.create = create;
    if (const char* sync = std::getenv("TX_SYNCHRONOUS"); sync != nullptr && *sync != '\0') {
      o.synchronous = sync;
    }
    TX_ASSIGN_OR_RETURN(store_, store::Open(o));
  }
  return store_.get();
}

void Context::PrintJson(const nlohmann::json& j) {
  out_ << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

Result<std::string> ResolveAgentTask(const std::string& flag, const char* command) {
  std::string id = flag;
  if (id.empty()) {
    if (const char* env = std::getenv("TX_TASK_ID"); env != nullptr) id = env;
  }
  if (id.empty()) {
    return Error::InvalidArgument(std::string(command) +
                                  " needs the task: pass --task ID or set TX_TASK_ID (as a worker "
                                  "does for its agent)");
  }
  return id;
}

Result<std::int64_t> ResolveToken(const std::string& flag, const char* command, bool forceable) {
  std::string text = flag;
  if (text.empty()) {
    if (const char* env = std::getenv("TX_CLAIM_TOKEN"); env != nullptr) text = env;
  }
  if (text.empty()) {
    return Error::InvalidArgument(std::string(command) +
                                  " needs the claim's token: pass --token N or set TX_CLAIM_TOKEN" +
                                  (forceable ? " (an operator may use --force instead)" : ""));
  }
  return ParseInteger("token", text);
}

}  // namespace tx::cli
