// Fuzz target "argv": the agent's ARGV TEMPLATE as a worker reads it. Each input is a command
// line: SplitArgv splits it, ValidateTemplate checks the words as a template, ExpandTemplate
// expands them for a sample attempt. The input split at its first NUL byte is also an allow-list
// and a command for IsAllowed (TX_ALLOWED_COMMANDS).
//
// Besides "no crash, no hang, no sanitizer report", it checks:
//  - a refusal is an invalid argument; an accepted line has at least one word;
//  - the words, each single-quoted and joined by spaces, split back into the same words;
//  - an expansion keeps the number of words, and for a valid template equals replacing each
//    {placeholder} by its value: a value never splits a word or expands again.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/agent.h"
#include "core/argv.h"

namespace {

using Words = std::vector<std::string>;

[[noreturn]] void Fail(std::string_view input, std::string_view what) {
  std::fprintf(stderr, "fuzz_argv: '%.*s': %.*s\n", static_cast<int>(input.size()), input.data(),
               static_cast<int>(what.size()), what.data());
  std::abort();
}

void Expect(bool ok, std::string_view input, std::string_view what) {
  if (!ok) Fail(input, what);
}

// Quotes `words` for a POSIX shell: each in single quotes, a quote inside as '\''.
std::string Quote(const Words& words) {
  std::string line;
  for (const auto& w : words) {
    if (!line.empty()) line += ' ';
    line += '\'';
    for (char c : w) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// The obvious dynamic program for '*' globs, to check IsAllowed's matcher against.
bool GlobReference(std::string_view pattern, std::string_view text) {
  // match[j]: pattern[0, i) matches text[0, j).
  std::vector<char> match(text.size() + 1, 0);
  match[0] = 1;
  for (char c : pattern) {
    std::vector<char> next(text.size() + 1, 0);
    for (std::size_t j = 0; j <= text.size(); ++j) {
      if (c == '*') {
        next[j] = match[j] || (j > 0 && next[j - 1]);
      } else {
        next[j] = j > 0 && match[j - 1] && text[j - 1] == c;
      }
    }
    match = std::move(next);
  }
  return match[text.size()];
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

void CheckTemplate(std::string_view input, const Words& argv) {
  // Values with no braces, so an expansion cannot make a new placeholder.
  tx::AgentContext context{.prompt = "fix the bug; rm -rf / $(id) 'x' \"y\"",
                           .task_id = "task-0a1b2c3d",
                           .title = "a title\nwith a newline",
                           .workdir = "/tmp/work dir",
                           .attempt = 2,
                           .session_id = "3f2c9a10-session"};
  Words expanded = tx::ExpandTemplate(argv, context);
  Expect(expanded.size() == argv.size(), input, "the expansion changed the number of words");
  if (!tx::ValidateTemplate("fuzz", argv).ok()) return;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string want = argv[i];
    ReplaceAll(want, "{prompt}", context.prompt);
    ReplaceAll(want, "{task_id}", context.task_id);
    ReplaceAll(want, "{title}", context.title);
    ReplaceAll(want, "{workdir}", context.workdir);
    ReplaceAll(want, "{attempt}", std::to_string(context.attempt));
    ReplaceAll(want, "{session_id}", context.session_id);
    Expect(expanded[i] == want, input,
           "word " + std::to_string(i) + " expands to '" + expanded[i] + "', not '" + want + "'");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);

  auto split = tx::SplitArgv(line);
  if (!split.ok()) {
    Expect(split.error().code() == tx::ErrorCode::kInvalidArgument, line, "not invalid_argument");
  } else {
    const Words& words = *split;
    Expect(!words.empty(), line, "accepted with no word");
    std::string quoted = Quote(words);
    auto again = tx::SplitArgv(quoted);
    Expect(again.ok() && *again == words, line, "the quoted words split differently: " + quoted);
    CheckTemplate(line, words);
  }

  std::size_t nul = line.find('\0');
  std::string_view allow_list = line.substr(0, nul);
  std::string_view command = nul == std::string_view::npos ? "task.done" : line.substr(nul + 1);
  bool allowed = tx::IsAllowed(command, allow_list);
  if (allowed) Expect(!allow_list.empty(), line, "an empty allow-list allowed a command");
  if (allow_list.find(',') == std::string_view::npos &&
      allow_list.size() * command.size() <= 100'000) {
    std::string_view item = Trim(allow_list);
    Expect(allowed == (!item.empty() && GlobReference(item, command)), line,
           "IsAllowed disagrees with the reference glob");
  }
  // A plain name (no comma, star or surrounding space) is allowed by a list naming it.
  if (!command.empty() && command.find_first_of(",*") == std::string_view::npos &&
      command.front() != ' ' && command.back() != ' ') {
    Expect(tx::IsAllowed(command, "x, " + std::string(command) + " ,y"), line,
           "a command is not allowed by a list naming it");
  }
  return 0;
}
