#include "agent/follower.h"

#include <cstdio>

namespace tx::agent {

namespace {

std::string Dollars(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f", v);
  return buf;
}

std::string Indented(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    out += line;
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::string Render(const AgentEvent& e) {
  using K = AgentEvent::Kind;
  switch (e.kind) {
    case K::kText:
      return e.text.empty() ? "" : Indented(e.text);
    case K::kToolCall:
      return "→ " + e.tool + (e.text.empty() ? "" : ": " + e.text) + "\n";
    case K::kToolResult:
      return "  ← " + std::string(e.is_error ? "error: " : "") + OneLine(e.text, 160) + "\n";
    case K::kSession:
      if (e.text.empty()) return "";
      return "· session " + e.text + (e.model.empty() ? "" : " · model " + e.model) + "\n";
    case K::kUsage:
      return "";
    case K::kResult: {
      std::string line = e.is_error ? "✗ " : "✓ ";
      line += OneLine(e.text.empty() ? (e.is_error ? "error" : "finished") : e.text, 300);
      if (e.turns > 0)
        line += " · " + std::to_string(e.turns) + (e.turns == 1 ? " turn" : " turns");
      if (e.cost_usd && *e.cost_usd > 0) line += " · " + Dollars(*e.cost_usd);
      return line + "\n";
    }
    case K::kLimit:
      return "! usage limit: " + OneLine(e.text, 300) + "\n";
    case K::kDenial:
      return "! permission denied: " + e.tool + (e.text.empty() ? "" : ": " + e.text) + "\n";
    case K::kAuth:
      return "! not logged in: " + OneLine(e.text, 300) + "\n";
    case K::kError:
      return "! error: " + OneLine(e.text, 300) + "\n";
  }
  return "";
}

namespace {
TokenCounts Less(const TokenCounts& a, const TokenCounts& b) {
  auto sub = [](std::int64_t x, std::int64_t y) { return x > y ? x - y : 0; };
  return {sub(a.input, b.input), sub(a.output, b.output), sub(a.cache_read, b.cache_read),
          sub(a.cache_write, b.cache_write)};
}
}  // namespace

Follower::Follower(Family family, const LimitPatterns* patterns, const PriceTable* prices)
    : parser_(MakeParser(family)), patterns_(patterns), prices_(prices) {}

void Follower::Feed(std::string_view chunk, std::string& readable) {
  while (!chunk.empty()) {
    std::size_t nl = chunk.find('\n');
    std::string_view piece = chunk.substr(0, nl);
    if (!skipping_) {
      std::size_t room = kMaxLine - partial_.size();
      if (piece.size() > room) {
        partial_.append(piece.substr(0, room));
        Line(partial_, /*truncated=*/true, readable);
        partial_.clear();
        skipping_ = true;
      } else if (nl != std::string_view::npos && partial_.empty()) {
        Line(piece, false, readable);  // a whole line in the chunk: no copy
      } else {
        partial_.append(piece);
        if (nl != std::string_view::npos) {
          Line(partial_, false, readable);
          partial_.clear();
        }
      }
    }
    if (nl == std::string_view::npos) return;
    skipping_ = false;
    chunk.remove_prefix(nl + 1);
  }
}

void Follower::Finish(std::string& readable) {
  if (!partial_.empty() && !skipping_) Line(partial_, false, readable);
  partial_.clear();
  skipping_ = false;
}

void Follower::Line(std::string_view line, bool truncated, std::string& readable) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  events_.clear();
  parser_->ParseLine(line, truncated, events_);
  // A profile's own limit patterns: on a structured stream, only on what is not the agent's
  // JSON (its tool results hold whatever the task's files say) and on the errors it reports.
  if (patterns_ != nullptr && !patterns_->empty() && !summary_.limit) {
    bool json = parser_->structured() && line.starts_with("{");
    std::optional<AgentEvent> l;
    if (!json) l = patterns_->Match(line);
    for (std::size_t i = 0; !l && json && i < events_.size(); ++i) {
      if (events_[i].kind == AgentEvent::Kind::kError) l = patterns_->Match(events_[i].text);
    }
    if (l) events_.push_back(std::move(*l));
  }
  for (const AgentEvent& e : events_) Apply(e, readable);
}

void Follower::Apply(const AgentEvent& e, std::string& readable) {
  using K = AgentEvent::Kind;
  bool show = true;  // said once: a session or a limit repeated is not shown again
  switch (e.kind) {
    case K::kSession:
      show = false;
      if (!e.text.empty() && e.text != summary_.session_id) {
        summary_.session_id = e.text;
        changed_ = show = true;
      }
      if (!e.model.empty() && e.model != summary_.model) {
        summary_.model = e.model;
        changed_ = show = true;
      }
      break;
    case K::kUsage: {
      if (!e.model.empty() && summary_.model.empty()) summary_.model = e.model;
      bool first = per_call_.find(e.id) == per_call_.end();
      per_call_[e.id] = e.tokens;
      if (first) summary_.turns += e.turns;
      if (!result_tokens_) {
        TokenCounts sum;
        for (const auto& [id, t] : per_call_) sum += t;
        summary_.tokens = Less(sum, baseline_);
      }
      if (e.cost_usd) summary_.reported_cost_usd = *e.cost_usd;
      changed_ = true;
      break;
    }
    case K::kResult:
      summary_.result_seen = true;
      summary_.result_is_error = e.is_error;
      summary_.result_text = e.text;
      if (!e.tokens.empty()) {
        result_tokens_ = e.tokens;
        summary_.tokens = Less(e.tokens, baseline_);
      }
      if (e.cost_usd) summary_.reported_cost_usd = *e.cost_usd;
      if (e.turns > 0) summary_.turns = e.turns;
      if (!e.model.empty()) summary_.model = e.model;
      changed_ = true;
      break;
    case K::kLimit:
      show = !summary_.limit;
      if (!summary_.limit) summary_.limit = e;
      changed_ = true;
      break;
    case K::kDenial: {
      auto seen = e.id.empty() ? denial_index_.end() : denial_index_.find(e.id);
      if (seen != denial_index_.end()) {
        if (!e.text.empty()) summary_.denials[seen->second]["input"] = OneLine(e.text, 500);
        changed_ = true;
        return;  // said already
      }
      // The first kMaxDenials are kept (an agent looping on a refused tool would otherwise grow
      // the ledger's row without end); the rest are counted.
      if (summary_.denials.size() >= kMaxDenials) {
        ++summary_.denials_dropped;
        changed_ = true;
        break;
      }
      if (!e.id.empty()) denial_index_[e.id] = summary_.denials.size();
      summary_.denials.push_back({{"tool", e.tool}, {"input", OneLine(e.text, 500)}});
      changed_ = true;
      break;
    }
    case K::kAuth:
      if (summary_.auth_error.empty()) summary_.auth_error = e.text;
      changed_ = true;
      break;
    case K::kError:
      summary_.last_error = e.text;
      break;
    case K::kText:
    case K::kToolCall:
    case K::kToolResult:
      break;
  }
  if (show && parser_->structured()) readable += Render(e);
}

double Follower::cost_usd() const {
  if (summary_.reported_cost_usd) return *summary_.reported_cost_usd;
  return prices_ == nullptr ? 0 : prices_->Cost(model(), summary_.tokens);
}

bool Follower::TakeChanged() {
  bool c = changed_;
  changed_ = false;
  return c;
}

}  // namespace tx::agent
