#pragma once
// The webhook sink (cpp-httplib, in the HTTP module): a POST of the delivery's JSON with
// X-Tx-Event, X-Tx-Delivery and, with a secret, X-Tx-Signature: sha256=<hex HMAC-SHA256 of the
// body>, the way GitHub signs its webhooks. A 2xx answer is delivered; anything else, a refused
// connection or no answer within kSendTimeoutMs is a failed try. Redirects are not followed.

#include <memory>
#include <string>

#include "notify/sinks.h"

namespace tx::notify {

std::unique_ptr<Sink> MakeWebhook(const SinkSpec& spec);

// "sha256=" and the lowercase hex HMAC-SHA256 of `body` keyed by `secret`.
std::string SignBody(const std::string& secret, const std::string& body);

}  // namespace tx::notify
