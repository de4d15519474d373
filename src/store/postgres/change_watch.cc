#include "store/postgres/change_watch.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "store/postgres/pg_conn.h"

namespace tx::store::postgres {

namespace {

constexpr Millis kFirstBackoffMs = 100;
constexpr Millis kMaxBackoffMs = 5'000;

Result<PgConnPtr> ConnectAndListen(const std::string& url) {
  TX_ASSIGN_OR_RETURN(PgConnPtr c, Connect(url));
  PgResultPtr r(pq::PQexec(c.get(), (std::string("LISTEN ") + kWakeChannel).c_str()));
  if (pq::PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    return Error::Unavailable(std::string("LISTEN failed: ") + pq::PQerrorMessage(c.get()));
  }
  return c;
}

class NotifyWatch final : public ChangeWatch {
 public:
  NotifyWatch(std::string url, PgConnPtr conn, int timer)
      : url_(std::move(url)), conn_(std::move(conn)), timer_(timer) {}
  ~NotifyWatch() override { ::close(timer_); }
  NotifyWatch(const NotifyWatch&) = delete;
  NotifyWatch& operator=(const NotifyWatch&) = delete;

  int fd() const override { return conn_ ? pq::PQsocket(conn_.get()) : timer_; }

  bool Drain() override {
    if (!conn_) return Relisten();
    if (pq::PQconsumeInput(conn_.get()) == 0 || pq::PQstatus(conn_.get()) != CONNECTION_OK) {
      // The server went away: listen again after a pause, on the timer's schedule.
      conn_.reset();
      backoff_ms_ = kFirstBackoffMs;
      Arm(backoff_ms_);
      return true;
    }
    bool any = false;
    while (PGnotify* n = pq::PQnotifies(conn_.get())) {
      pq::PQfreemem(n);
      any = true;
    }
    return any;
  }

 private:
  // The timer fired: connect and LISTEN again. A change may have been missed while the
  // connection was down, so a successful return says so.
  bool Relisten() {
    std::uint64_t expirations = 0;
    (void)!::read(timer_, &expirations, sizeof expirations);
    Result<PgConnPtr> c = ConnectAndListen(url_);
    if (c.ok()) {
      conn_ = std::move(*c);
      return true;
    }
    backoff_ms_ = std::min(backoff_ms_ * 2, kMaxBackoffMs);
    Arm(backoff_ms_);
    return false;
  }

  void Arm(Millis ms) {
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(ms / 1000);
    spec.it_value.tv_nsec = static_cast<long>((ms % 1000) * 1'000'000);
    (void)timerfd_settime(timer_, 0, &spec, nullptr);
  }

  std::string url_;
  PgConnPtr conn_;  // null while disconnected
  int timer_;       // a timerfd: readable when it is time to connect again
  Millis backoff_ms_ = kFirstBackoffMs;
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchNotifications(const std::string& url) {
  TX_ASSIGN_OR_RETURN(PgConnPtr c, ConnectAndListen(url));
  int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer < 0) return PosixError("timerfd_create", errno, ErrorCode::kInternal);
  return std::unique_ptr<ChangeWatch>(new NotifyWatch(url, std::move(c), timer));
}

}  // namespace tx::store::postgres
