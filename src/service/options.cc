#include "service/options.h"

#include <random>

namespace tx::service {

ServiceOptions WithDefaults(ServiceOptions options) {
  if (!options.unit_random) {
    options.unit_random = [] {
      thread_local std::mt19937_64 rng{std::random_device{}()};
      return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    };
  }
  if (!options.orchestrator_alive) options.orchestrator_alive = RecentlySeen;
  if (!options.worker_alive) {
    options.worker_alive = [](const Worker& w, const Moment& now) { return !IsStale(w, now); };
  }
  return options;
}

}  // namespace tx::service
