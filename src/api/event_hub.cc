#include "api/event_hub.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "service/event_log.h"

namespace tx::api {

namespace {
constexpr int kPage = 1000;
constexpr auto kDepthSampleEvery = std::chrono::seconds(10);
constexpr auto kReadAtMostEvery = std::chrono::milliseconds(10);
}  // namespace

EventHub::EventHub(Key, std::unique_ptr<store::Store> store,
                   std::unique_ptr<store::ChangeWatch> watch, exec::UniqueFd stop_fd,
                   exec::UniqueFd poke_fd, std::chrono::milliseconds poll)
    : store_(std::move(store)),
      watch_(std::move(watch)),
      stop_fd_(std::move(stop_fd)),
      poke_fd_(std::move(poke_fd)),
      poll_(poll) {}

EventHub::~EventHub() { Stop(); }

Result<std::unique_ptr<EventHub>> EventHub::Start(const store::OpenOptions& options,
                                                  std::chrono::milliseconds poll) {
  TX_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> s, store::Open(options));
  TX_ASSIGN_OR_RETURN(std::unique_ptr<store::ChangeWatch> watch, s->Watch());
  exec::UniqueFd stop_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  exec::UniqueFd poke_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!stop_fd.valid() || !poke_fd.valid()) {
    return PosixError("eventfd", errno, ErrorCode::kInternal);
  }
  auto hub = std::make_unique<EventHub>(Key{}, std::move(s), std::move(watch), std::move(stop_fd),
                                        std::move(poke_fd), poll);
  TX_RETURN_IF_ERROR(hub->ReadNew());  // the whole log, before the first scrape or stream
  hub->SampleDepth();
  hub->thread_ = std::thread([h = hub.get()] { h->Run(); });
  return hub;
}

void EventHub::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  changed_.NotifyAll();
  std::uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

Status EventHub::ReadNew() {
  TX_ASSIGN_OR_RETURN(std::int64_t counter, store_->ChangeCounter());
  if (counter == counter_seen_) return Ok();
  counter_seen_ = counter;
  service::EventLog log(*store_);
  std::int64_t after = last_id();
  for (;;) {
    TX_ASSIGN_OR_RETURN(std::vector<StoredEvent> page, log.StoredSince(after, kPage));
    if (page.empty()) return Ok();
    after = page.back().id;
    {
      MutexLock lock(mu_);
      for (auto& e : page) {
        metrics_.Add(e);
        stats_.Add(e);
        recent_.push_back(std::move(e));
      }
      while (recent_.size() > kKeep) recent_.pop_front();
      last_id_ = after;
    }
    changed_.NotifyAll();
  }
}

void EventHub::Run() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_read = Clock::now();  // Start read the whole log
  bool unread = false;  // a commit made a task ready and its events are not read yet
  while (!stopping()) {
    auto wait = poll_;
    if (unread) {
      wait =
          std::chrono::ceil<std::chrono::milliseconds>(last_read + kReadAtMostEvery - Clock::now());
      wait = std::max(wait, std::chrono::milliseconds(0));
    }
    bool watch;
    {
      MutexLock lock(mu_);
      watch = watching_ = waiters_ > 0;
    }
    // Not watched, the store's commits are found at the next tick: poll ignores a negative fd.
    pollfd fds[] = {{watch ? watch_->fd() : -1, POLLIN, 0},
                    {stop_fd_.get(), POLLIN, 0},
                    {poke_fd_.get(), POLLIN, 0}};
    ::poll(fds, 3, static_cast<int>(wait.count()));
    if ((fds[2].revents & POLLIN) != 0) {
      std::uint64_t pokes;
      (void)!::read(poke_fd_.get(), &pokes, sizeof pokes);
    }
    // Unwatched, the watch is looked at on each wake all the same: a waiter that read the
    // generation before such a commit must see it change.
    if (!watch && watch_->fd() >= 0) {
      fds[0].fd = watch_->fd();
      ::poll(fds, 1, 0);
    }
    if ((fds[0].revents & POLLIN) != 0 && watch_->Drain()) {
      {
        MutexLock lock(mu_);
        ++ready_generation_;
      }
      changed_.NotifyAll();
      unread = true;
    }
    // A burst of commits is read once: each read takes the store's read lock and the pages the
    // writer changed, beside the writer.
    const Clock::time_point now = Clock::now();
    if (unread && now < last_read + kReadAtMostEvery) continue;
    unread = false;
    last_read = now;
    // A failed read (the store busy past its timeout, say) is retried at the next tick.
    (void)ReadNew();
    if (now >= next_sample_) SampleDepth();
  }
}

std::uint64_t EventHub::ready_generation() const {
  MutexLock lock(mu_);
  return ready_generation_;
}

void EventHub::AddWaiter() {
  if (waiters_++ == 0 && !watching_) {
    std::uint64_t one = 1;
    (void)!::write(poke_fd_.get(), &one, sizeof one);
  }
}

bool EventHub::WaitForReady(std::uint64_t seen, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  AddWaiter();
  bool changed = changed_.WaitFor(
      mu_, timeout, [&]() TX_REQUIRES(mu_) { return stopping_ || ready_generation_ != seen; });
  --waiters_;
  return changed && !stopping_;
}

EventHub::Batch EventHub::Wait(std::int64_t after, std::chrono::milliseconds timeout,
                               std::size_t max) {
  Batch out;
  MutexLock lock(mu_);
  AddWaiter();
  changed_.WaitFor(mu_, timeout, [&]() TX_REQUIRES(mu_) { return stopping_ || last_id_ > after; });
  --waiters_;
  if (stopping_) {
    out.stopped = true;
    return out;
  }
  if (recent_.empty() || recent_.back().id <= after) return out;
  // Ids may skip numbers (a rolled-back insert), so "still in memory" means the first kept event
  // is no later than the one after `after` could be.
  if (recent_.front().id > after + 1) {
    out.evicted = true;
    return out;
  }
  auto first = std::upper_bound(recent_.begin(), recent_.end(), after,
                                [](std::int64_t id, const StoredEvent& e) { return id < e.id; });
  for (auto it = first; it != recent_.end() && out.events.size() < max; ++it) {
    out.events.push_back(*it);
  }
  return out;
}

void EventHub::SampleDepth() {
  next_sample_ = std::chrono::steady_clock::now() + kDepthSampleEvery;
  std::vector<store::StatusCount> counts;
  Status read = store_->Read([&](store::Txn& txn) -> Status {
    TX_ASSIGN_OR_RETURN(counts, txn.CountTasks());
    return Ok();
  });
  if (!read.ok()) return;  // the next sample will do
  MutexLock lock(mu_);
  stats_.Sample(counts, store_->clock().NowMs());
}

nlohmann::json EventHub::RenderStats(Millis now, const StatsRange& range) const {
  MutexLock lock(mu_);
  return stats_.Render(now, range);
}

std::int64_t EventHub::last_id() const {
  MutexLock lock(mu_);
  return last_id_;
}

bool EventHub::stopping() const {
  MutexLock lock(mu_);
  return stopping_;
}

std::string EventHub::RenderMetrics(const MetricsSnapshot& now) const {
  MutexLock lock(mu_);
  return metrics_.Render(now);
}

}  // namespace tx::api
