#include "notify/sinks.h"

#include <algorithm>

#include "exec/command.h"

namespace tx::notify {
namespace {

WebhookMaker g_webhook_maker = nullptr;  // set once, before threads start (InstallWebhookMaker)

// Runs the command with the delivery's body on its standard input, and X-Tx-Event and
// X-Tx-Delivery as TX_EVENT and TX_DELIVERY in its environment.
class CommandSink final : public Sink {
 public:
  explicit CommandSink(std::vector<std::string> argv) : argv_(std::move(argv)) {}

  Status Send(const Delivery& d) override {
    TX_ASSIGN_OR_RETURN(
        exec::CommandResult r,
        exec::RunCommand(argv_, "", {"TX_EVENT=" + d.event_type, "TX_DELIVERY=" + d.id}, 64u << 10,
                         kSendTimeoutMs, -1, d.body));
    if (r.timed_out) return Error::Unavailable("no exit within 10 s; killed");
    if (r.ok()) return Ok();
    std::string line = r.FirstLine();
    return Error::Unavailable("exit code " + std::to_string(r.exit_code) +
                              (line.empty() ? "" : ": " + line));
  }

 private:
  std::vector<std::string> argv_;
};

}  // namespace

void InstallWebhookMaker(WebhookMaker maker) { g_webhook_maker = maker; }

bool CanMakeWebhooks() { return g_webhook_maker != nullptr; }

bool HasWebhooks(const std::vector<SinkSpec>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const SinkSpec& s) { return !s.url.empty(); });
}

Result<std::unique_ptr<Sink>> MakeSink(const SinkSpec& spec) {
  if (spec.url.empty()) return std::unique_ptr<Sink>(std::make_unique<CommandSink>(spec.command));
  if (g_webhook_maker == nullptr) {
    return Error::Unavailable("webhook " + spec.url + ": this binary has no HTTP client (tx-http)");
  }
  return g_webhook_maker(spec);
}

}  // namespace tx::notify
