#pragma once
// Sinks: where a delivery is sent (docs/notifications.md). A command sink runs a program with the
// delivery's JSON on its standard input; a webhook POSTs it. Webhooks need the HTTP library,
// which tx-http alone links (cli/http_handoff.h): it installs their maker before anything runs,
// and a tx process whose sinks include a webhook runs as tx-http.

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/notify.h"

namespace tx::notify {

// How long one try of a delivery may take before it counts as failed.
inline constexpr Millis kSendTimeoutMs = 10'000;

class Sink {
 public:
  virtual ~Sink() = default;
  // One try, blocking for at most kSendTimeoutMs (and a command's own exit). Ok when the receiver
  // took it: a 2xx answer, an exit code of 0. Otherwise one line saying why.
  virtual Status Send(const Delivery& delivery) = 0;
};

using WebhookMaker = std::unique_ptr<Sink> (*)(const SinkSpec& spec);
// Called once, before any thread starts.
void InstallWebhookMaker(WebhookMaker maker);
bool CanMakeWebhooks();
bool HasWebhooks(const std::vector<SinkSpec>& specs);

// The sink a spec describes; unavailable for a webhook where no maker is installed.
Result<std::unique_ptr<Sink>> MakeSink(const SinkSpec& spec);

}  // namespace tx::notify
