// Fuzz target "requests": the JSON bodies the HTTP API accepts. Each input is a request body,
// parsed as the server parses it (ParseObject) and handed to every decoder in kDecoders.
//
// Besides "no crash, no sanitizer report", it checks:
//  - no exception leaves ParseObject or a decoder (nlohmann throws on a wrong get<>());
//  - a refusal is an invalid argument with a message (a bad body is the client's fault: 400);
//  - what a decoder accepts is what the body says: an integer keeps its value (no wrap-around),
//    a string and the metadata arrive unchanged; an accepted task has a wire form (ToJson);
//  - an accepted body survives a copy and a dump (each recursing once per level of nesting).
//
// A new decoder is one row of kDecoders: {"DecodeX", Decode<&DecodeX>} for the generic checks, or
// a function of its own for more.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "core/json.h"
#include "service/worker_wire.h"

namespace {

using nlohmann::json;
using tx::api::TaskChange;

[[noreturn]] void Fail(std::string_view decoder, std::string_view what) {
  std::fprintf(stderr, "fuzz_requests: %.*s: %.*s\n", static_cast<int>(decoder.size()),
               decoder.data(), static_cast<int>(what.size()), what.data());
  std::abort();
}

void Expect(bool ok, std::string_view decoder, std::string_view what) {
  if (!ok) Fail(decoder, what);
}

template <typename T>
void ExpectInvalidArgumentIfRefused(std::string_view decoder, const tx::Result<T>& r) {
  if (r.ok()) return;
  Expect(
      r.error().code() == tx::ErrorCode::kInvalidArgument, decoder,
      "refused with " + std::string(tx::CodeName(r.error().code())) + ": " + r.error().message());
  Expect(!r.error().message().empty(), decoder, "refused without a message");
}

// The generic checks, for any `Result<T> F(const json&)`.
template <auto F>
void Decode(std::string_view name, const json& body) {
  ExpectInvalidArgumentIfRefused(name, F(body));
}

// True when `field` of `body` is absent or null, or holds exactly `got`.
bool SameInteger(const json& body, std::string_view field, std::int64_t got) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return true;
  if (it->is_number_unsigned()) {
    auto v = it->get<std::uint64_t>();
    return v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) &&
           static_cast<std::int64_t>(v) == got;
  }
  return it->is_number_integer() && it->get<std::int64_t>() == got;
}

bool SameString(const json& body, std::string_view field, const std::string& got) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return true;
  return it->is_string() && it->get_ref<const std::string&>() == got;
}

void CheckNewTask(std::string_view name, const json& body) {
  auto r = tx::api::DecodeNewTask(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  const tx::Task& t = *r;
  Expect(SameString(body, "title", t.title), name, "title changed");
  Expect(SameString(body, "queue", t.queue), name, "queue changed");
  Expect(SameInteger(body, "priority", t.priority), name, "priority changed");
  Expect(SameInteger(body, "max_attempts", t.max_attempts), name, "max_attempts changed");
  if (auto it = body.find("timeout"); it != body.end() && it->is_number()) {
    Expect(SameInteger(body, "timeout", t.timeout_ms), name, "timeout changed");
  }
  if (auto it = body.find("metadata"); it != body.end() && !it->is_null()) {
    Expect(*it == t.metadata, name, "metadata changed");
  }
  // The server answers with the task's wire form; dump() throws on a string that is not UTF-8.
  Expect(!tx::ToJson(t, {}).dump().empty(), name, "the task's wire form is empty");
}

void CheckTaskChange(std::string_view name, const json& body) {
  auto r = tx::api::DecodeTaskChange(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  const TaskChange& c = *r;
  switch (c.kind) {
    case TaskChange::Kind::kFields:
      Expect(c.fields.title || c.fields.priority || c.fields.after || c.fields.metadata_merge, name,
             "a change of no field accepted");
      if (c.fields.priority) {
        Expect(SameInteger(body, "priority", *c.fields.priority), name, "priority changed");
      }
      break;
    case TaskChange::Kind::kOutcome:
      Expect(c.force != c.token.has_value(), name, "an outcome needs a token or force, not both");
      if (c.token) Expect(SameInteger(body, "token", *c.token), name, "token changed");
      break;
    case TaskChange::Kind::kCancel:
    case TaskChange::Kind::kRetry:
    case TaskChange::Kind::kApprove:
    case TaskChange::Kind::kAnswer:
      Expect(!c.force && !c.token, name,
             "a cancel, retry, approval or answer took a token or force");
      break;
  }
}

void CheckScale(std::string_view name, const json& body) {
  auto r = tx::api::DecodeScale(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  Expect(*r >= 0 && *r <= 10'000, name, "workers out of 0..10000: " + std::to_string(*r));
  Expect(SameInteger(body, "workers", *r), name, "workers changed");
}

void CheckStop(std::string_view name, const json& body) {
  auto r = tx::api::DecodeStop(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  auto it = body.find("force");
  Expect(*r == (it != body.end() && it->is_boolean() && it->get<bool>()), name, "force changed");
}

void CheckNewWorker(std::string_view name, const json& body) {
  auto r = tx::api::DecodeNewWorker(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  const auto& args = r->args;
  Expect(args.size() % 2 == 0, name, "worker flags without their values");
  for (std::size_t i = 0; i < args.size(); i += 2) {
    Expect(args[i].starts_with("--") && !args[i + 1].empty(), name,
           "a bad worker flag: " + args[i] + " '" + args[i + 1] + "'");
  }
  Expect(SameString(body, "workdir", r->workdir), name, "workdir changed");
  Expect(SameString(body, "instructions", r->instructions), name, "instructions changed");
}

// The remote-worker protocol's bodies: lenient (unknown fields are ignored), so only the generic
// checks, plus the token of a fenced call kept exactly.
void CheckFenced(std::string_view name, const json& body) {
  using tx::service::FencedCall;
  for (FencedCall call : {FencedCall::kRenew, FencedCall::kRelease, FencedCall::kReport,
                          FencedCall::kFail, FencedCall::kGiveUp, FencedCall::kAsk}) {
    auto r = tx::service::DecodeFenced(call, body);
    ExpectInvalidArgumentIfRefused(name, r);
    if (r.ok()) Expect(SameInteger(body, "token", r->token), name, "token changed");
  }
}

void CheckClaim(std::string_view name, const json& body) {
  auto r = tx::service::DecodeClaim(body);
  ExpectInvalidArgumentIfRefused(name, r);
  if (!r.ok()) return;
  Expect(r->wait_ms >= 0 && r->wait_ms <= tx::service::kMaxClaimWaitMs, name,
         "wait_ms out of range");
  Expect(SameInteger(body, "wait_ms", r->wait_ms), name, "wait_ms changed");
}

struct Decoder {
  std::string_view name;
  void (*check)(std::string_view name, const json& body);
};

// Every decoder of a request body. Add a row per new decoder (and its .cc to CMakeLists.txt).
constexpr Decoder kDecoders[] = {
    {"DecodeNewTask", CheckNewTask},
    {"DecodeTaskChange", CheckTaskChange},
    {"DecodeScale", CheckScale},
    {"DecodeStop", CheckStop},
    {"DecodeNewWorker", CheckNewWorker},
    {"DecodeRegistration", Decode<&tx::service::DecodeRegistration>},
    {"DecodeHeartbeat", Decode<&tx::service::DecodeHeartbeat>},
    {"DecodeDeregister", Decode<&tx::service::DecodeDeregister>},
    {"DecodeClaim", CheckClaim},
    {"DecodeFenced", CheckFenced},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  std::string_view current = "ParseObject";
  try {
    auto parsed = tx::api::ParseObject(body);
    ExpectInvalidArgumentIfRefused(current, parsed);
    if (!parsed.ok()) return 0;
    Expect(parsed->is_object(), current, "accepted a body that is not an object");
    // What the server does with a body besides decoding it: copy, compare, write it out. Each
    // recurses once per level of nesting.
    json copy = *parsed;
    Expect(copy == *parsed && json::parse(copy.dump()) == *parsed, current,
           "the body does not survive a copy and a dump");
    for (const Decoder& d : kDecoders) {
      current = d.name;
      d.check(d.name, *parsed);
    }
  } catch (const std::exception& e) {
    Fail(current, std::string("threw: ") + e.what());
  } catch (...) {
    Fail(current, "threw something that is not a std::exception");
  }
  return 0;
}
