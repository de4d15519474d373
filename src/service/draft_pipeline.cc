#include "service/draft_pipeline.h"

#include <algorithm>
#include <exception>
#include <system_error>

namespace tx::service {

DraftPipeline::DraftPipeline(std::size_t items, Decode decode, Label label, Options options,
                             HelperBudget* budget)
    : items_(items),
      decode_(std::move(decode)),
      label_(std::move(label)),
      options_(options),
      budget_(budget),
      decoded_(runs()) {
  {
    MutexLock lock(mu_);
    state_.assign(runs(), RunState::kWaiting);
  }
  if (items_ < options_.items_for_threads || runs() < 2) return;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned wanted = std::min(cores - 1, options_.max_threads);
  for (unsigned t = 0; t < wanted; ++t) {
    if (budget_ != nullptr && !budget_->TryTake()) break;
    try {
      threads_.emplace_back([this] {
        DecodeRuns();
        if (budget_ != nullptr) budget_->Give();
      });
    } catch (const std::system_error&) {  // no thread to be had: decode on the callers' thread
      if (budget_ != nullptr) budget_->Give();
      break;
    }
  }
}

DraftPipeline::~DraftPipeline() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

std::size_t DraftPipeline::runs() const {
  return (items_ + options_.run_items - 1) / options_.run_items;
}

std::optional<std::size_t> DraftPipeline::TakeRun() {
  MutexLock lock(mu_);
  if (stopping_) return std::nullopt;
  auto it = std::find(state_.begin(), state_.end(), RunState::kWaiting);
  if (it == state_.end()) return std::nullopt;
  *it = RunState::kDecoding;
  return static_cast<std::size_t>(it - state_.begin());
}

void DraftPipeline::DecodeRuns() {
  while (std::optional<std::size_t> r = TakeRun()) DecodeRun(*r);
}

void DraftPipeline::DecodeRun(std::size_t r) {
  Run& out = decoded_[r];
  std::size_t end = std::min(items_, (r + 1) * options_.run_items);
  out.tasks.reserve(end - r * options_.run_items);
  for (std::size_t i = r * options_.run_items; i < end; ++i) {
    Result<Task> t = Error::Internal("not decoded");
    try {
      t = decode_(i);
    } catch (const std::exception& e) {  // on a helper thread nothing above would catch it
      t = Error::Internal(label_(i) + ": " + e.what());
    }
    if (!t.ok()) {
      out.error = t.error();
      break;
    }
    out.tasks.push_back(std::move(*t));
  }
  MutexLock lock(mu_);
  state_[r] = RunState::kDone;
  done_.NotifyAll();
}

bool DraftPipeline::DecodeOrWait(std::size_t r) {
  {
    MutexLock lock(mu_);
    if (state_[r] != RunState::kWaiting) {
      done_.Wait(mu_, [&]() TX_REQUIRES(mu_) { return state_[r] == RunState::kDone; });
      return false;
    }
    state_[r] = RunState::kDecoding;
  }
  DecodeRun(r);
  return true;
}

void DraftPipeline::DecodeAll() {
  for (std::size_t r = 0; r < runs(); ++r) DecodeOrWait(r);
}

Result<Task*> DraftPipeline::At(std::size_t i, std::string& label) {
  if (i >= items_) return nullptr;
  std::size_t r = i / options_.run_items;
  DecodeOrWait(r);
  Run& run = decoded_[r];
  std::size_t k = i % options_.run_items;
  if (k >= run.tasks.size()) return *run.error;
  label = label_(i);
  return &run.tasks[k];
}

}  // namespace tx::service
