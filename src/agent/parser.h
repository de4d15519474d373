#pragma once
// OutputParser: one agent family's output, a line at a time, into events (events.h). Each
// family's parser lives in its own file (claude.cc, codex.cc, aider.cc); tests feed them the
// fixtures under tests/agents/fixtures/.
//
// A parser never fails: a line it cannot read (not JSON, truncated, of an unknown type) gives
// what can be said of it — plain text, or nothing — and the next line starts afresh. Lines
// arrive without their newline; stdout and stderr are interleaved (they share one pipe).

#include <memory>
#include <string_view>
#include <vector>

#include "agent/events.h"
#include "agent/profile.h"

namespace tx::agent {

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // `truncated`: the line was longer than the follower keeps, and this is its head.
  virtual void ParseLine(std::string_view line, bool truncated, std::vector<AgentEvent>& out) = 0;
  // Whether the agent's output is structured (JSON lines), so that a readable log is written
  // beside it; plain-text output is its own readable log.
  virtual bool structured() const = 0;
};

std::unique_ptr<OutputParser> MakeParser(Family family);

// Shared by the parsers: what a plain line of text says — a limit (limits.h), a refused login
// (kAuth), or nothing. Appends at most one event.
void ClassifyPlainLine(std::string_view line, std::vector<AgentEvent>& out);

// A tool call's input in one line for a person: the command, path, pattern or URL it acts on,
// else the input's JSON, at most `max` bytes.
std::string OneLine(std::string_view text, std::size_t max = 200);

}  // namespace tx::agent
