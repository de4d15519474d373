#include "core/ids.h"

#include <sys/random.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <random>

namespace tx {

namespace {
constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";

// Seeded again in a forked child: a child copies its parent's generator, and two children
// drawing the same ids would clash (or, for API tokens, share one).
std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  thread_local pid_t seeded_in = ::getpid();
  if (pid_t pid = ::getpid(); pid != seeded_in) {
    rng.seed(std::random_device{}());
    seeded_in = pid;
  }
  return rng;
}

std::string Random(std::string_view prefix, std::string_view alphabet, int n) {
  std::string out(prefix);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::mt19937_64& rng = Rng();  // once: its fork check is a system call
  for (int i = 0; i < n; ++i) out += alphabet[pick(rng)];
  return out;
}

bool HasShape(std::string_view s, std::string_view prefix) {
  if (s.size() != prefix.size() + 8 || s.substr(0, prefix.size()) != prefix) return false;
  for (char c : s.substr(prefix.size())) {
    if (kBase32.find(c) == std::string_view::npos && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}
}  // namespace

namespace {
// The base32 characters in byte order, so that the ids of a run sort as their values do.
constexpr std::string_view kBase32Sorted = "234567abcdefghijklmnopqrstuvwxyz";
constexpr std::uint64_t kIdMask = (std::uint64_t{1} << 40) - 1;  // an id's 40 bits

struct TaskIdRun {
  std::uint64_t next = 0;
  pid_t drawn_in = 0;  // 0: no run yet
};
thread_local TaskIdRun task_id_run;

void StartTaskIdRun(pid_t pid) {
  task_id_run.next = Rng()() & kIdMask;
  task_id_run.drawn_in = pid;
}
}  // namespace

std::string NewTaskId() {
  // Rng() reseeds itself in a forked child, whose run must not repeat its parent's either.
  if (pid_t pid = ::getpid(); pid != task_id_run.drawn_in) StartTaskIdRun(pid);
  std::uint64_t value = task_id_run.next;
  task_id_run.next = (value + 1) & kIdMask;
  std::string out = "task-________";
  for (std::size_t i = out.size(); i-- > 5; value >>= 5) out[i] = kBase32Sorted[value & 31];
  return out;
}

void RestartTaskIds() { StartTaskIdRun(::getpid()); }

std::string NewWorkerId() { return Random("worker-", kBase32, 8); }
std::string NewToken() {
  unsigned char bytes[32];
  // getrandom(2) blocks only before the kernel's pool is first seeded, and a read of 32 bytes is
  // never cut short once it is; anything else is no source of secrets, and no token is made.
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

bool LooksLikeTaskId(std::string_view s) { return HasShape(s, "task-"); }
bool LooksLikeWorkerId(std::string_view s) { return HasShape(s, "worker-"); }

}  // namespace tx
