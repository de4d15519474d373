// The adapters' parsers on the fixtures under tests/agents/fixtures/: captured from Claude Code
// 2.1.332 and the Codex CLI 0.171.0 run against a scripted model API (docs/agents.md), and
// written after Aider's and Claude's documented formats where no real run could show a case.

#include "agent/follower.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace tx::agent {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TX_SOURCE_DIR) + "/tests/agents/fixtures/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Followed {
  RunSummary summary;
  std::string readable;
  double cost = 0;
  bool estimated = true;
};

// Feeds `output` to a follower in chunks of `chunk` bytes, as a pipe would hand it over.
Followed Follow(Family family, const std::string& output, std::size_t chunk = 4096,
                const LimitPatterns* patterns = nullptr) {
  PriceTable prices = PriceTable::Defaults();
  Follower f(family, patterns, &prices);
  Followed r;
  for (std::size_t i = 0; i < output.size(); i += chunk) {
    f.Feed(std::string_view(output).substr(i, chunk), r.readable);
  }
  f.Finish(r.readable);
  r.summary = f.summary();
  r.cost = f.cost_usd();
  r.estimated = f.cost_estimated();
  return r;
}

bool Contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(ClaudeAdapter, ASuccessfulRunGivesSessionTokensCostTurnsAndAReadableLog) {
  Followed r = Follow(Family::kClaude, Fixture("claude_bash_success.jsonl"));
  EXPECT_EQ(r.summary.session_id, "56809c50-e63b-484f-86b4-d682c5e1976c");
  EXPECT_EQ(r.summary.model, "claude-opus-5-5");
  // The result's own totals, and Claude Code's own cost, win over the per-message sums.
  EXPECT_EQ(r.summary.tokens.input, 2600);
  EXPECT_EQ(r.summary.tokens.output, 48);
  EXPECT_EQ(r.summary.tokens.cache_read, 300);
  EXPECT_EQ(r.summary.tokens.cache_write, 50);
  ASSERT_TRUE(r.summary.reported_cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*r.summary.reported_cost_usd, 0.01167);
  EXPECT_FALSE(r.estimated);
  EXPECT_EQ(r.summary.turns, 2);
  EXPECT_TRUE(r.summary.result_seen);
  EXPECT_FALSE(r.summary.result_is_error);
  EXPECT_TRUE(r.summary.denials.empty());
  EXPECT_FALSE(r.summary.limit.has_value());
  // What a person reads: the text, each tool call on one line, its result, the end.
  EXPECT_TRUE(Contains(r.readable, "I'll mark it done.\n")) << r.readable;
  EXPECT_TRUE(Contains(r.readable, "→ Bash: tx task done X\n")) << r.readable;
  EXPECT_TRUE(Contains(r.readable, "  ← tx: ok (task done X)\n")) << r.readable;
  EXPECT_TRUE(Contains(r.readable, "✓ Done. · 2 turns · $0.0117\n")) << r.readable;
  EXPECT_FALSE(Contains(r.readable, "{\"type\"")) << r.readable;
}

TEST(ClaudeAdapter, PermissionDenialsAreRecordedWithTheToolAndItsInput) {
  Followed r = Follow(Family::kClaude, Fixture("claude_bash_denied.jsonl"));
  ASSERT_EQ(r.summary.denials.size(), 1u) << r.summary.denials.dump();
  EXPECT_EQ(r.summary.denials[0]["tool"], "Bash");
  EXPECT_EQ(r.summary.denials[0]["input"], "tx task done X");
  EXPECT_FALSE(r.summary.result_is_error);  // the agent said "Done." all the same
  EXPECT_TRUE(Contains(r.readable, "! permission denied: Bash")) << r.readable;
}

TEST(ClaudeAdapter, An429FromTheApiIsALimitNotAFailure) {
  Followed r = Follow(Family::kClaude, Fixture("claude_api_429.jsonl"));
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_TRUE(Contains(r.summary.limit->text, "429")) << r.summary.limit->text;
  EXPECT_TRUE(r.summary.result_is_error);
  EXPECT_TRUE(r.summary.auth_error.empty());
}

TEST(ClaudeAdapter, ARefusedLoginIsSaidAtTheFirstRetry) {
  Followed r = Follow(Family::kClaude, Fixture("claude_auth_401.jsonl"));
  EXPECT_FALSE(r.summary.auth_error.empty());
  EXPECT_TRUE(Contains(r.summary.auth_error, "authentication_failed")) << r.summary.auth_error;
  EXPECT_FALSE(r.summary.limit.has_value());
}

TEST(ClaudeAdapter, ASubscriptionLimitCarriesItsResetFromTheRateLimitEvent) {
  Followed r = Follow(Family::kClaude, Fixture("claude_usage_limit.jsonl"));
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_EQ(r.summary.limit->reset.at, 1796828400000);  // resetsAt, epoch seconds
  EXPECT_TRUE(Contains(r.readable, "! usage limit")) << r.readable;
}

TEST(ClaudeAdapter, TheLimitTextAloneGivesItsResetTimeAndZone) {
  AgentEvent e = *RecognizeLimit("You've hit your session limit · resets 3pm (Europe/Berlin)");
  EXPECT_EQ(e.reset.hour, 15);
  EXPECT_EQ(e.reset.minute, 0);
  EXPECT_EQ(e.reset.zone, "Europe/Berlin");
  Followed r = Follow(Family::kClaude, Fixture("claude_usage_limit_text.txt"));
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_EQ(r.summary.limit->reset.at, 1767225600000);
}

TEST(ClaudeAdapter, AnUnknownSessionToResumeIsAnErrorResultWithNoTurns) {
  Followed r = Follow(Family::kClaude, Fixture("claude_resume_unknown.jsonl"));
  EXPECT_TRUE(r.summary.result_is_error);
  EXPECT_TRUE(Contains(r.summary.result_text, "No conversation found")) << r.summary.result_text;
  EXPECT_EQ(r.summary.turns, 0);
  EXPECT_FALSE(r.summary.limit.has_value());
}

TEST(CodexAdapter, AnExecRunGivesItsThreadTokensAndEachCommandOnALine) {
  Followed r = Follow(Family::kCodex, Fixture("codex_exec.jsonl"));
  EXPECT_EQ(r.summary.session_id, "01a218a9-9605-70a2-af81-ff8be8587a96");
  // Cached input is counted inside input_tokens by OpenAI; the ledger keeps it apart.
  EXPECT_EQ(r.summary.tokens.input, 10000 - 6100);
  EXPECT_EQ(r.summary.tokens.cache_read, 6100);
  EXPECT_EQ(r.summary.tokens.output, 100);
  EXPECT_EQ(r.summary.turns, 1);
  EXPECT_TRUE(r.estimated);  // Codex reports no cost: priced from [prices]
  EXPECT_GT(r.cost, 0);
  // Its output names no model: priced as the one its argv asks for.
  PriceTable prices = PriceTable::Defaults();
  Follower f(Family::kCodex, nullptr, &prices);
  f.SetModelHint("gpt-5-mini");
  std::string readable;
  f.Feed(Fixture("codex_exec.jsonl"), readable);
  EXPECT_DOUBLE_EQ(f.cost_usd(), prices.Cost("gpt-5-mini", f.summary().tokens));
  EXPECT_LT(f.cost_usd(), r.cost);
  EXPECT_TRUE(Contains(r.readable,
                       "→ shell: /bin/bash -c 'echo hello > out.txt && tx task done X && cat "
                       "out.txt'\n"))
      << r.readable;
  EXPECT_TRUE(Contains(r.readable, "  ← exit 0: tx ok: task done X hello\n")) << r.readable;
  EXPECT_TRUE(Contains(r.readable, "  ← error: exit 1\n")) << r.readable;
  EXPECT_TRUE(Contains(r.readable, "→ edit: add /tmp/research-codex/work/exec_json/notes.md"))
      << r.readable;
  EXPECT_TRUE(Contains(r.readable, "Done.\n")) << r.readable;
  // Each command is shown once, though started and completed are both reported.
  EXPECT_EQ(r.readable.find("→ shell: /bin/bash -c false"),
            r.readable.rfind("→ shell: /bin/bash -c false"));
}

TEST(CodexAdapter, AUsageLimitGivesTheDayAndTimeToTryAgain) {
  Followed r = Follow(Family::kCodex, Fixture("codex_usage_limit_date.jsonl"));
  ASSERT_TRUE(r.summary.limit.has_value());
  const ResetHint& h = r.summary.limit->reset;
  EXPECT_EQ(h.year, 2026);
  EXPECT_EQ(h.month, 11);
  EXPECT_EQ(h.day, 29);
  EXPECT_EQ(h.hour, 16);
  EXPECT_EQ(h.minute, 32);
  Followed today = Follow(Family::kCodex, Fixture("codex_usage_limit_today.jsonl"));
  ASSERT_TRUE(today.summary.limit.has_value());
  EXPECT_EQ(today.summary.limit->reset.hour, 17);
  EXPECT_EQ(today.summary.limit->reset.minute, 22);
  EXPECT_EQ(today.summary.limit->reset.month, 0);
}

TEST(CodexAdapter, RetriesExhaustedOnA429AreALimitAndA401IsALogin) {
  Followed r = Follow(Family::kCodex, Fixture("codex_rate_limit.jsonl"));
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_FALSE(r.summary.limit->reset.given());
  Followed a = Follow(Family::kCodex, Fixture("codex_auth_401.jsonl"));
  EXPECT_FALSE(a.summary.auth_error.empty());
  EXPECT_FALSE(a.summary.limit.has_value());
}

TEST(AiderAdapter, TokensAndTheSessionCostAreReadFromItsUsageLines) {
  Followed r = Follow(Family::kAider, Fixture("aider_session.txt"));
  EXPECT_EQ(r.summary.model, "claude-sonnet-4-5-20250929");
  // 12k sent of which 1.2k written to and 3.4k read from the cache; then 2.3k more.
  EXPECT_EQ(r.summary.tokens.input, 12000 - 1200 - 3400 + 2300);
  EXPECT_EQ(r.summary.tokens.cache_write, 1200);
  EXPECT_EQ(r.summary.tokens.cache_read, 3400);
  EXPECT_EQ(r.summary.tokens.output, 245 + 88);
  EXPECT_EQ(r.summary.turns, 2);
  ASSERT_TRUE(r.summary.reported_cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*r.summary.reported_cost_usd, 0.06);
  EXPECT_TRUE(r.readable.empty());  // plain text: the raw log is the readable one
}

TEST(AiderAdapter, LitellmsRateLimitErrorIsALimit) {
  Followed r = Follow(Family::kAider, Fixture("aider_rate_limit.txt"));
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_TRUE(Contains(r.summary.limit->text, "RateLimitError"));
}

// A task about limits: the agent's own words and its tools' output mention them, and it is not
// stopped for it.
TEST(Follower, WhatTheAgentWritesOrReadsIsNeverTakenForALimitOrARefusedLogin) {
  std::string aider =
      "Aider v0.86.2\n"
      "I will handle the 'rate limit exceeded' error and the 'Invalid API key' response.\n"
      "You have hit your usage limit. Your limit resets at 3pm.\n";
  Followed a = Follow(Family::kAider, aider);
  EXPECT_FALSE(a.summary.limit.has_value());
  EXPECT_TRUE(a.summary.auth_error.empty()) << a.summary.auth_error;

  Result<LimitPatterns> p = LimitPatterns::Compile({"rate limit exceeded"});
  ASSERT_TRUE(p.ok());
  std::string claude =
      R"({"type":"user","message":{"role":"user","content":[{"type":"tool_result",)"
      R"("tool_use_id":"t1","content":"grep: src/api.c: 'rate limit exceeded' and 'invalid api key'"}]}})"
      "\n";
  Followed c = Follow(Family::kClaude, claude, 5, &*p);
  EXPECT_FALSE(c.summary.limit.has_value());
  EXPECT_TRUE(c.summary.auth_error.empty()) << c.summary.auth_error;
}

TEST(GenericAdapter, ProfilePatternsFindALimitInPlainOutput) {
  Result<LimitPatterns> p = LimitPatterns::Compile({"quota (is )?gone"});
  ASSERT_TRUE(p.ok());
  Followed r =
      Follow(Family::kGeneric, "working\nsorry: QUOTA gone, try again in 2 hours\n", 5, &*p);
  ASSERT_TRUE(r.summary.limit.has_value());
  EXPECT_EQ(r.summary.limit->reset.after_ms, 2 * 3'600'000);
  Followed none = Follow(Family::kGeneric, "I added rate limiting to the API client\n");
  EXPECT_FALSE(none.summary.limit.has_value());
  EXPECT_FALSE(LimitPatterns::Compile({"(unclosed"}).ok());
}

TEST(Follower, ChunkBoundariesAnywhereGiveTheSameResult) {
  std::string out = Fixture("claude_bash_success.jsonl");
  Followed whole = Follow(Family::kClaude, out, out.size());
  for (std::size_t chunk : {1u, 2u, 7u, 64u, 1000u}) {
    Followed r = Follow(Family::kClaude, out, chunk);
    EXPECT_EQ(r.readable, whole.readable) << chunk;
    EXPECT_EQ(r.summary.tokens, whole.summary.tokens) << chunk;
    EXPECT_EQ(r.summary.session_id, whole.summary.session_id) << chunk;
  }
}

TEST(Follower, TruncatedAndGarbageLinesNeverCrashAndUnknownTypesAreIgnored) {
  std::string good = Fixture("claude_bash_success.jsonl");
  std::string noise =
      "not json at all\n{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\n"
      "{\"type\":\"future_event\",\"x\":1}\n{}\n[]\n\"str\"\n{\"type\":\"result\",\"usage\":5,"
      "\"total_cost_usd\":\"x\",\"permission_denials\":{}}\n"
      "{\"type\":\"assistant\",\"message\":{\"content\":\"oops\",\"usage\":[]}}\n"
      "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":7}]}}\n"
      "\xff\xfe\x00\x01 binary\n";
  Followed r = Follow(Family::kClaude, noise + good + noise);
  EXPECT_EQ(r.summary.session_id, "56809c50-e63b-484f-86b4-d682c5e1976c");
  EXPECT_TRUE(Contains(r.readable, "not json at all\n"));
  for (Family family : {Family::kClaude, Family::kCodex, Family::kAider, Family::kGeneric}) {
    // Every prefix of every fixture, and random bytes, in one-byte chunks.
    for (const char* name : {"claude_bash_success.jsonl", "codex_exec.jsonl",
                             "claude_usage_limit.jsonl", "aider_session.txt"}) {
      std::string text = Fixture(name);
      for (std::size_t cut = 0; cut < text.size(); cut += 97) {
        Follow(family, text.substr(0, cut), 1 + cut % 13);
      }
    }
    std::mt19937 rng(42);
    std::string random(20'000, '\0');
    for (char& c : random) c = static_cast<char>(rng() % 4 == 0 ? '\n' : rng());
    Follow(family, random, 333);
  }
}

TEST(Follower, ALineLongerThanTheCapIsCutAndTheNextLineStillParses) {
  std::string huge =
      "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\","
      "\"content\":\"" +
      std::string(Follower::kMaxLine + 10, 'x') + "\"}]}}\n";
  Followed r = Follow(Family::kClaude, huge + Fixture("claude_bash_success.jsonl"), 65536);
  EXPECT_TRUE(Contains(r.readable, "(a result of more than 1 MiB)")) << r.readable.substr(0, 300);
  EXPECT_EQ(r.summary.turns, 2);
}

// A big tool result is summed up by a scan, not a parse: the same line either way.
TEST(ClaudeAdapter, ABigToolResultReadsTheSameScannedAsParsed) {
  std::string body;
  for (int i = 0; i < 400; ++i)
    body += "line " + std::to_string(i) + " with a \\\"quote\\\" and a tab\\t\\n";
  auto line = [&](const std::string& head) {
    return head +
           "\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"toolu_1\","
           "\"type\":\"tool_result\",\"content\":\"" +
           body + "\",\"is_error\":true}]}}\n";
  };
  std::string scanned = line("{\"type\":\"user\",");  // starts as Claude Code writes it
  std::string parsed = line("{\"parent_tool_use_id\":null,\"type\":\"user\",");  // not
  ASSERT_GT(scanned.size(), 4096u);
  Followed a = Follow(Family::kClaude, scanned);
  Followed b = Follow(Family::kClaude, parsed);
  EXPECT_EQ(a.readable, b.readable);
  EXPECT_EQ(a.readable, "  ← error: line 0 with a \"quote\" and a tab (400 lines)\n");
}

TEST(Follower, TheRunningEstimateComesFromThePriceTableUntilTheAgentSaysItsCost) {
  PriceTable prices;
  prices.Set("m", {1.0, 10.0, 0.1, 2.0});
  Follower f(Family::kClaude, nullptr, &prices);
  std::string readable;
  f.Feed(
      "{\"type\":\"assistant\",\"message\":{\"id\":\"a\",\"model\":\"m-1\",\"content\":[],"
      "\"usage\":{\"input_tokens\":1000000,\"output_tokens\":100000}}}\n"
      "{\"type\":\"assistant\",\"message\":{\"id\":\"a\",\"model\":\"m-1\",\"content\":[],"
      "\"usage\":{\"input_tokens\":1000000,\"output_tokens\":100000}}}\n",
      readable);
  // The same message reported twice counts once: $1 of input and $1 of output.
  EXPECT_DOUBLE_EQ(f.cost_usd(), 2.0);
  EXPECT_TRUE(f.cost_estimated());
  f.Feed("{\"type\":\"result\",\"is_error\":false,\"total_cost_usd\":1.5,\"num_turns\":1}\n",
         readable);
  EXPECT_DOUBLE_EQ(f.cost_usd(), 1.5);
  EXPECT_FALSE(f.cost_estimated());
}

TEST(Prices, TheLongestPrefixPricesAModelAndDefaultCoversTheRest) {
  PriceTable t = PriceTable::Defaults();
  ASSERT_NE(t.For("claude-sonnet-4-5-20250929"), nullptr);
  EXPECT_DOUBLE_EQ(t.For("claude-sonnet-4-5-20250929")->input, 3.0);
  EXPECT_DOUBLE_EQ(t.For("gpt-5-mini-2025")->input, 0.25);
  EXPECT_DOUBLE_EQ(t.For("gpt-5-codex")->output, 10.0);
  EXPECT_EQ(t.For("some-new-model"), t.For("default"));
  TokenCounts tokens{1'000'000, 0, 0, 0};
  EXPECT_DOUBLE_EQ(t.Cost("claude-haiku-4-5", tokens), 1.0);
  // Opus: 4.5 and every later one at 5 / 25, Opus 4 and 4.1 at 15 / 75 (docs/agents.md).
  for (const char* newer : {"claude-opus-4-5-20251101", "claude-opus-4-6", "claude-opus-5-5"}) {
    EXPECT_DOUBLE_EQ(t.For(newer)->input, 5.0) << newer;
    EXPECT_DOUBLE_EQ(t.For(newer)->output, 25.0) << newer;
  }
  for (const char* older : {"claude-opus-4-20250514", "claude-opus-4-0", "claude-opus-4-1",
                            "claude-opus-4-1-20250805"}) {
    EXPECT_DOUBLE_EQ(t.For(older)->input, 15.0) << older;
  }
}

TEST(Limits, ResetsAreReadInEveryFormTheAgentsWrite) {
  EXPECT_EQ(FindReset("Claude AI usage limit reached|1767225600").at, 1767225600000);
  ResetHint in = FindReset("Rate limit reached. Please try again in 1.5s.");
  EXPECT_EQ(in.after_ms, 1500);
  EXPECT_EQ(FindReset("try again in 2 days 3 hours 4 minutes").after_ms,
            ((2 * 24 + 3) * 60 + 4) * 60'000);
  ResetHint pm = FindReset("5-hour limit reached ∙ resets 5am");
  EXPECT_EQ(pm.hour, 5);
  EXPECT_EQ(pm.zone, "");
  ResetHint late =
      FindReset("Claude usage limit reached. Your limit will reset at 11:30pm (Etc/GMT+5).");
  EXPECT_EQ(late.hour, 23);
  EXPECT_EQ(late.minute, 30);
  EXPECT_EQ(late.zone, "Etc/GMT+5");
  ResetHint dated =
      FindReset("You've hit your weekly limit · resets Jan 30, 11:30am (America/New_York)");
  EXPECT_EQ(dated.month, 1);
  EXPECT_EQ(dated.day, 30);
  EXPECT_EQ(dated.year, 0);
  EXPECT_EQ(dated.hour, 11);
  EXPECT_EQ(dated.zone, "America/New_York");
  EXPECT_FALSE(FindReset("try again later").given());
  EXPECT_FALSE(FindReset("the limit is 25 items").given());
}

TEST(Limits, OnlyTheAgentsOwnWordsForALimitAreOne) {
  for (const char* limit :
       {"Claude AI usage limit reached|1767225600", "You've hit your limit · resets 3pm",
        "You’ve hit your usage limit. Upgrade to Pro or try again at 5:22 PM.",
        "API Error: Request rejected (429) · Rate limited", "You're out of usage credits",
        "exceeded retry limit, last status: 429 Too Many Requests",
        "litellm.RateLimitError: RateLimitError: OpenAIException - rate limit"}) {
    EXPECT_TRUE(RecognizeLimit(limit).has_value()) << limit;
  }
  for (const char* other : {"I added a rate limiter", "limit the list to 10", "Resets the counter",
                            "the quota field", ""}) {
    EXPECT_FALSE(RecognizeLimit(other).has_value()) << other;
  }
}

}  // namespace
}  // namespace tx::agent
