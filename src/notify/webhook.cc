#include "notify/webhook.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace tx::notify {
namespace {

// "https://host:port" and "/path?query" of a URL ParseNotifyToml accepted.
std::pair<std::string, std::string> SplitUrl(const std::string& url) {
  std::size_t scheme_end = url.find("://") + 3;
  std::size_t path = url.find('/', scheme_end);
  if (path == std::string::npos) return {url, "/"};
  return {url.substr(0, path), url.substr(path)};
}

std::string Why(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (refused or unreachable)";
    case httplib::Error::ConnectionTimeout:
      return "no connection within 10 s";
    case httplib::Error::Read:
      return "no whole answer within 10 s";
    case httplib::Error::Write:
      return "the request could not be sent";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLLoadingCerts:
    case httplib::Error::SSLServerVerification:
      return "TLS: " + httplib::to_string(e);
    default:
      return httplib::to_string(e);
  }
}

class Webhook final : public Sink {
 public:
  explicit Webhook(const SinkSpec& spec) : secret_(spec.secret) {
    auto [origin, path] = SplitUrl(spec.url);
    origin_ = origin;
    path_ = path;
  }

  Status Send(const Delivery& d) override {
    // A client per try: a receiver that restarted leaves no stale connection behind.
    httplib::Client client(origin_);
    auto seconds = std::chrono::milliseconds(kSendTimeoutMs);
    client.set_connection_timeout(seconds);
    client.set_read_timeout(seconds);
    client.set_write_timeout(seconds);
    client.set_follow_location(false);
    httplib::Headers headers = {
        {"X-Tx-Event", d.event_type}, {"X-Tx-Delivery", d.id}, {"User-Agent", "tx-notify"}};
    if (!secret_.empty()) headers.emplace("X-Tx-Signature", SignBody(secret_, d.body));
    httplib::Result r = client.Post(path_, headers, d.body, "application/json");
    if (!r) return Error::Unavailable("POST " + origin_ + path_ + ": " + Why(r.error()));
    if (r->status < 200 || r->status > 299) {
      return Error::Unavailable("POST " + origin_ + path_ + ": HTTP " + std::to_string(r->status));
    }
    return Ok();
  }

 private:
  std::string origin_;
  std::string path_;
  std::string secret_;
};

}  // namespace

std::unique_ptr<Sink> MakeWebhook(const SinkSpec& spec) { return std::make_unique<Webhook>(spec); }

std::string SignBody(const std::string& secret, const std::string& body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 0xf];
  }
  return out;
}

}  // namespace tx::notify

extern "C" const tx::notify::WebhookMaker tx_webhook_maker = &tx::notify::MakeWebhook;
