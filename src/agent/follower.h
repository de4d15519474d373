#pragma once
// Follower: one attempt's agent output, followed as it is written — split into lines, parsed by
// the profile's adapter (parser.h), summed into what the ledger keeps (session, model, tokens,
// cost, turns, permission denials) and what the attempt's decisions need (a usage limit, a
// refused login, the running cost), and rendered as the lines a person reads in `tx task log`.
// Pure: the worker hands it bytes and writes what it returns.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "agent/events.h"
#include "agent/limits.h"
#include "agent/parser.h"
#include "agent/prices.h"
#include "agent/profile.h"
#include "core/usage.h"

namespace tx::agent {

// What the output said, so far.
// The permission denials an attempt keeps; later ones are only counted.
inline constexpr std::size_t kMaxDenials = 100;

struct RunSummary {
  std::string session_id;
  std::string model;
  TokenCounts tokens;  // the run's total when the agent reported one, else the sum
  std::optional<double> reported_cost_usd;  // the agent's own figure
  int turns = 0;
  nlohmann::json denials = nlohmann::json::array();  // [{"tool", "input"}], kMaxDenials at most
  std::int64_t denials_dropped = 0;                  // those past kMaxDenials
  std::optional<AgentEvent> limit;                   // the first usage limit seen
  std::string auth_error;                            // a refused login ("" = none)
  bool result_seen = false;
  bool result_is_error = false;
  std::string result_text;
  std::string last_error;
};

class Follower {
 public:
  // Lines longer than this are cut to it (the rest of the line is skipped).
  static constexpr std::size_t kMaxLine = 1 << 20;

  // `patterns` (the profile's limit patterns) and `prices` must outlive the follower.
  Follower(Family family, const LimitPatterns* patterns, const PriceTable* prices);

  // Takes raw output; appends the readable lines it completes to `readable` (nothing for a
  // plain-text family, whose raw output is its readable log).
  void Feed(std::string_view chunk, std::string& readable);
  // End of output: a last line without a newline is taken as a line.
  void Finish(std::string& readable);

  bool structured() const { return parser_->structured(); }
  const RunSummary& summary() const { return summary_; }
  // The agent's own cost once it has reported one, else the estimate from the tokens so far.
  double cost_usd() const;
  bool cost_estimated() const { return !summary_.reported_cost_usd.has_value(); }
  // Whether anything changed since the last call (the ledger is written only then).
  bool TakeChanged();
  // Tokens to take off every total: a resumed Codex thread reports the thread's, not the run's.
  void SetBaseline(const TokenCounts& baseline) { baseline_ = baseline; }
  // The model the run is taken to use until its output names one (Codex's never does): what
  // prices its tokens, and what the ledger records.
  void SetModelHint(const std::string& model) { model_hint_ = model; }
  const std::string& model() const { return summary_.model.empty() ? model_hint_ : summary_.model; }

 private:
  void Line(std::string_view line, bool truncated, std::string& readable);
  void Apply(const AgentEvent& e, std::string& readable);

  std::unique_ptr<OutputParser> parser_;
  const LimitPatterns* patterns_;
  const PriceTable* prices_;
  RunSummary summary_;
  std::string partial_;                          // the current line so far
  bool skipping_ = false;                        // past kMaxLine: dropping the rest of a line
  std::map<std::string, TokenCounts> per_call_;  // by message id: a call may be reported twice
  std::optional<TokenCounts> result_tokens_;
  TokenCounts baseline_;
  std::string model_hint_;
  std::map<std::string, std::size_t> denial_index_;  // tool_use id → its entry in denials
  bool changed_ = false;
  std::vector<AgentEvent> events_;  // reused between lines
};

// The readable form of one event, a line or more ending in '\n' ("" for events a person need
// not see, such as usage).
std::string Render(const AgentEvent& e);

}  // namespace tx::agent
