#include "store/postgres/pg_lead.h"

#include <string_view>
#include <utility>

namespace tx::store::postgres {

namespace {

// The key of the advisory lock whose holder leads the reconciler (any constant of ours; advisory
// locks are per database).
constexpr const char* kLeaderLock = "SELECT pg_try_advisory_lock(7478000002)";

// Held on a connection of its own, outside the store's transactions: a session-level lock, which
// the server drops when the session ends — when its holder exits or is killed, at once; when its
// host vanishes, once the server's TCP keepalives (set short here) give up on the connection.
class AdvisoryLeadership final : public Leadership {
 public:
  explicit AdvisoryLeadership(PgConnPtr conn) : conn_(std::move(conn)) {}
  bool Held() override {
    if (!conn_) return false;
    PgResultPtr r(pq::PQexec(conn_.get(), "SELECT 1"));
    if (pq::PQresultStatus(r.get()) != PGRES_TUPLES_OK) conn_.reset();  // lost: never taken back
    return conn_ != nullptr;
  }

 private:
  PgConnPtr conn_;
};

}  // namespace

Result<std::unique_ptr<Leadership>> TryAdvisoryLead(PgConnPtr& lead_conn, const std::string& url) {
  if (lead_conn && pq::PQstatus(lead_conn.get()) != CONNECTION_OK) lead_conn.reset();
  if (!lead_conn) {
    TX_ASSIGN_OR_RETURN(lead_conn, Connect(url));
    // The server notices a leader's vanished host in about 11 s and drops its lock.
    PgResultPtr keepalives(pq::PQexec(lead_conn.get(),
                                      "SET tcp_keepalives_idle = 5; "
                                      "SET tcp_keepalives_interval = 2; "
                                      "SET tcp_keepalives_count = 3"));
  }
  PgResultPtr r(pq::PQexec(lead_conn.get(), kLeaderLock));
  if (pq::PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
    std::string why = pq::PQerrorMessage(lead_conn.get());
    lead_conn.reset();
    return Error::Unavailable("cannot ask for the reconciler's lead: " + why);
  }
  if (std::string_view(pq::PQgetvalue(r.get(), 0, 0)) != "t") {
    return std::unique_ptr<Leadership>();
  }
  return std::unique_ptr<Leadership>(new AdvisoryLeadership(std::move(lead_conn)));
}

}  // namespace tx::store::postgres
