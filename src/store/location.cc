#include "store/location.h"

#include <cstdlib>
#include <filesystem>

namespace tx::store {

namespace fs = std::filesystem;

bool IsPostgresUrl(std::string_view db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string Describe(const std::string& db) {
  // postgresql://user:password@host/db → postgresql://user@host/db
  if (!IsPostgresUrl(db)) return db;
  std::size_t scheme = db.find("://");
  std::size_t at = db.find('@', scheme + 3);
  std::size_t slash = db.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return db;
  std::size_t colon = db.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return db;
  return db.substr(0, colon) + db.substr(at);
}

std::string AbsoluteLocation(const std::string& db) {
  if (IsPostgresUrl(db) || db == ":memory:") return db;
  return fs::absolute(db).string();
}

std::string LocalDir(const std::string& db) {
  if (IsPostgresUrl(db) || db == ":memory:") {
    if (const char* dir = std::getenv("TX_DIR"); dir != nullptr && *dir != '\0') {
      return fs::absolute(dir).string();
    }
    return fs::absolute(".tx").string();
  }
  return fs::absolute(db).parent_path().string();
}

std::string AttemptLogPath(const std::string& logs_dir, const std::string& task_id, int attempt) {
  return logs_dir + "/" + task_id + "/" + std::to_string(attempt) + ".log";
}

std::string AttemptRawLogPath(const std::string& logs_dir, const std::string& task_id,
                              int attempt) {
  return logs_dir + "/" + task_id + "/" + std::to_string(attempt) + ".raw";
}

}  // namespace tx::store
