#pragma once
// Sinks: where a delivery is sent (docs/notifications.md). A command sink runs a program with the
// delivery's JSON on its standard input; a webhook POSTs it. Webhooks need the HTTP library,
// in tx's HTTP module (exec/http_module.h), opened by the first webhook made.

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

bool HasWebhooks(const std::vector<SinkSpec>& specs);

// Ok when webhooks can be made: opens the HTTP module; unavailable, saying why, when it cannot be.
// For a program to refuse a config it could not serve before it starts.
Status CheckWebhooks();

// The sink a spec describes; unavailable for a webhook when the HTTP module cannot be opened.
Result<std::unique_ptr<Sink>> MakeSink(const SinkSpec& spec);

}  // namespace tx::notify

// The HTTP module's entry (webhook.cc); weak here: null unless this program links webhook.o
// itself, as a test of the webhook does (exec/http_module.h).
extern "C" const tx::notify::WebhookMaker tx_webhook_maker __attribute__((weak));
