// tx top: a live view of the pool, the queue and the newest events (docs/operations.md, "tx top").
// What it shows is read as tx orchestrator status, tx worker list and tx events read it; the
// frame is top.h's. On a terminal it draws in place on the alternate screen, with colours unless
// NO_COLOR is set; anywhere else it prints plain frames, one per interval, a blank line between.

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/top.h"
#include "core/duration.h"
#include "core/validation.h"
#include "exec/unique_fd.h"
#include "service/event_log.h"
#include "service/pool_status.h"
#include "service/worker_service.h"

namespace tx::cli {

namespace {

constexpr Millis kDefaultIntervalMs = 1'000;
constexpr int kEventsOffTerminal = 10;  // events a plain or JSON frame holds

// Columns and rows of the terminal on `fd`; nullopt when it is none (or will not say).
std::optional<std::pair<std::size_t, std::size_t>> TerminalSize(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return std::nullopt;
  return std::pair<std::size_t, std::size_t>{ws.ws_col, ws.ws_row};
}

// https://no-color.org: set and not empty means no colours.
bool NoColor() {
  const char* v = std::getenv("NO_COLOR");
  return v != nullptr && *v != '\0';
}

// A terminal that cannot move the cursor: treated as no terminal.
bool DumbTerminal() {
  const char* v = std::getenv("TERM");
  return v != nullptr && std::strcmp(v, "dumb") == 0;
}

// The signals a live view stops or redraws on, taken from a signalfd: blocked from Open until
// destruction, which restores the mask there was. Signals only wake the loop (style.md).
class SignalWait {
 public:
  static Result<std::unique_ptr<SignalWait>> Open() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&set, s);
    auto w = std::unique_ptr<SignalWait>(new SignalWait);
    if (int rc = pthread_sigmask(SIG_BLOCK, &set, &w->old_); rc != 0) {
      return PosixError("sigprocmask", rc, ErrorCode::kInternal);
    }
    w->blocked_ = true;
    w->fd_.Reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!w->fd_.valid()) return PosixError("signalfd", errno, ErrorCode::kInternal);
    return w;
  }
  SignalWait(const SignalWait&) = delete;
  SignalWait& operator=(const SignalWait&) = delete;
  ~SignalWait() {
    if (blocked_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

  // The signal that came within `ms` (SIGINT, SIGTERM, SIGHUP or SIGWINCH), else 0.
  int Wait(Millis ms) {
    pollfd p{fd_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::clamp<Millis>(ms, 0, 60'000)));
    if (n <= 0) return 0;
    signalfd_siginfo si{};
    if (::read(fd_.get(), &si, sizeof si) != static_cast<ssize_t>(sizeof si)) return 0;
    return static_cast<int>(si.ssi_signo);
  }

 private:
  SignalWait() = default;
  exec::UniqueFd fd_;
  sigset_t old_{};
  bool blocked_ = false;
};

// The terminal while a live view owns it: the alternate screen with the cursor hidden, given back
// (the screen as it was, the cursor shown) on destruction, however the view ends.
class Screen {
 public:
  Screen(std::ostream& out, bool colour) : out_(out), colour_(colour) {
    out_ << "\x1b[?1049h\x1b[?25l" << std::flush;
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;
  ~Screen() { out_ << (colour_ ? "\x1b[0m" : "") << "\x1b[?25h\x1b[?1049l" << std::flush; }

  // Draws over the last frame from the top left: each line, the rest of it cleared, and
  // everything below the last cleared. No newline after the last line, so a frame as high as the
  // terminal does not scroll it.
  void Draw(const std::vector<std::string>& lines) {
    std::string frame = "\x1b[H";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      frame += lines[i];
      frame += "\x1b[K";
      if (i + 1 < lines.size()) frame += '\n';
    }
    frame += "\x1b[J";
    out_ << frame << std::flush;
  }

 private:
  std::ostream& out_;
  bool colour_;
};

Result<TopData> ReadTop(Context& ctx, store::Store& store, const std::string& id, int events) {
  TopData d;
  d.store = store.Describe();
  d.now = ctx.clock().Now();
  TX_ASSIGN_OR_RETURN(d.pool,
                      service::PoolStatus(store, ctx.options(), d.now.wall, id, ctx.LocalPool()));
  service::WorkerService workers(store, ctx.clock(), ctx.options());
  TX_ASSIGN_OR_RETURN(d.workers, workers.List(LiveWorkerStatuses()));
  service::EventLog log(store);
  TX_ASSIGN_OR_RETURN(std::int64_t last, log.LastId());
  TX_ASSIGN_OR_RETURN(d.events, log.Since(std::max<std::int64_t>(0, last - events), events));
  return d;
}

}  // namespace

Handler SetupTop(CLI::App& cmd) {
  struct Args {
    std::string interval, id;
    bool once = false;
  };
  auto a = std::make_shared<Args>();
  NonEmpty(
      cmd.add_option("--interval", a->interval, "Refresh every (default 1s)")->type_name("DUR"));
  cmd.add_flag("--once", a->once, "Print one frame and exit");
  NonEmpty(cmd.add_option("--id", a->id,
                          "The orchestrator whose pool to show, as tx orchestrator status lists "
                          "them (default: this directory's, else the only one running)")
               ->type_name("ID"));
  return [a](Context& ctx) -> Status {
    Millis interval = kDefaultIntervalMs;
    if (!a->interval.empty()) {
      TX_ASSIGN_OR_RETURN(interval, ParseDuration(a->interval));
      if (interval <= 0) {
        return Error::InvalidArgument("invalid --interval '" + a->interval + "': not positive");
      }
    }
    TX_ASSIGN_OR_RETURN(store::Store * store, ctx.Store());
    // A terminal gets escapes (colours only without NO_COLOR); anything else, plain text.
    const bool terminal = !ctx.json() && ::isatty(STDOUT_FILENO) == 1 && !DumbTerminal();
    TopView view;
    view.colour = terminal && !NoColor();
    const auto size = terminal ? TerminalSize(STDOUT_FILENO) : std::nullopt;
    const int events =
        size ? static_cast<int>(std::max<std::size_t>(size->second, 10)) : kEventsOffTerminal;

    if (a->once) {
      TX_ASSIGN_OR_RETURN(TopData data, ReadTop(ctx, *store, a->id, events));
      if (ctx.json()) {
        ctx.PrintJson(TopJson(data));
        return Ok();
      }
      if (size) view.width = size->first;
      for (const std::string& line : RenderTop(data, view)) ctx.out() << line << '\n';
      return Ok();
    }

    view.interval = interval;
    TX_ASSIGN_OR_RETURN(std::unique_ptr<SignalWait> signals, SignalWait::Open());
    std::optional<Screen> screen;
    if (terminal) screen.emplace(ctx.out(), view.colour);
    TopData data;
    data.store = store->Describe();
    bool first = true;
    auto next_read = std::chrono::steady_clock::now();
    bool read = true;
    for (;;) {
      if (read) {
        Result<TopData> fresh = ReadTop(ctx, *store, a->id, events);
        if (fresh.ok()) {
          data = std::move(*fresh);
        } else {
          // Shown with what was read last, and tried again at the next refresh (a PostgreSQL
          // server that restarts, a store busy past its timeout).
          data.error = fresh.error().message();
          data.now = ctx.clock().Now();
        }
        next_read += std::chrono::milliseconds(interval);
      }
      if (ctx.json()) {
        ctx.out() << TopJson(data).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << '\n';
      } else if (screen) {
        auto now_size = TerminalSize(STDOUT_FILENO);
        view.width = now_size ? now_size->first : 0;
        view.height = now_size ? now_size->second : 0;
        screen->Draw(RenderTop(data, view));
      } else {
        if (!first) ctx.out() << '\n';
        for (const std::string& line : RenderTop(data, view)) ctx.out() << line << '\n';
      }
      first = false;
      ctx.out().flush();
      if (!ctx.out()) return Ok();  // the reader went away
      // Until the next refresh, or a signal: SIGWINCH redraws at the terminal's new size.
      for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            next_read - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          read = true;
          break;
        }
        int sig = signals->Wait(left.count());
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) return Ok();
        if (sig == SIGWINCH && screen) {
          read = false;
          break;
        }
      }
      // A refresh that fell behind (a slow store) starts its interval afresh.
      next_read = std::max(next_read, std::chrono::steady_clock::now());
    }
  };
}

}  // namespace tx::cli
