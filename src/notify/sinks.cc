#include "notify/sinks.h"

#include <algorithm>

#include "exec/command.h"
#include "exec/http_module.h"

namespace tx::notify {
namespace {

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

Result<WebhookMaker> Maker() { return exec::HttpEntry(&tx_webhook_maker, "tx_webhook_maker"); }

bool HasWebhooks(const std::vector<SinkSpec>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const SinkSpec& s) { return !s.url.empty(); });
}

Status CheckWebhooks() {
  TX_RETURN_IF_ERROR(Maker());
  return Ok();
}

Result<std::unique_ptr<Sink>> MakeSink(const SinkSpec& spec) {
  if (spec.url.empty()) return std::unique_ptr<Sink>(std::make_unique<CommandSink>(spec.command));
  Result<WebhookMaker> maker = Maker();
  if (!maker.ok()) {
    return Error::Unavailable("webhook " + spec.url + ": " + maker.error().message());
  }
  return (*maker)(spec);
}

}  // namespace tx::notify
