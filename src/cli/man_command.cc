// tx man: the manual page, in roff, made from the command tree CLI11 was given (the command
// table's commands, their help and every option's), so that it never drifts from --help. The
// build installs its output as share/man/man1/tx.1. The sections a command tree cannot give
// (environment, files, exit status) are written here, once.

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tx::cli {

namespace {

// Text for a roff line: backslashes and hyphens escaped, a character past ASCII as its code
// point (troff reads bytes), a break allowed after '|' (for "ready|running|..."), and a line
// that would start with a control character ('.' or '\'') made plain text.
std::string Roff(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0xC0) {
      int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
      unsigned code = c & (0x3F >> more);
      for (int k = 0; k < more && i + 1 < text.size(); ++k) {
        code = (code << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F);
      }
      char hex[16];
      std::snprintf(hex, sizeof hex, "\\[u%04X]", code);
      out += hex;
    } else if (c >= 0x80) {
      continue;  // a stray continuation byte
    } else if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (c == '|') {
      out += "|\\:";
    } else if (c == '\n') {
      out += "\n.br\n";
    } else {
      out += static_cast<char>(c);
    }
  }
  std::string safe;
  std::size_t line = 0;
  while (line <= out.size()) {
    std::size_t end = out.find('\n', line);
    if (end == std::string::npos) end = out.size();
    std::string l = out.substr(line, end - line);
    bool request = l == ".br";
    if (!request && !l.empty() && (l[0] == '.' || l[0] == '\'')) safe += "\\&";
    safe += l;
    if (end < out.size()) safe += '\n';
    line = end + 1;
  }
  return safe;
}

// "--queue Q" and "-n, --name NAME" in bold and italics; a positional as its name in italics.
std::string OptionTerm(const CLI::Option& o) {
  if (o.get_positional()) return "\\fI" + Roff(o.get_name()) + "\\fR";
  std::string term;
  for (const std::string& s : o.get_snames()) {
    term += (term.empty() ? "" : ", ") + std::string("\\fB\\-") + Roff(s) + "\\fR";
  }
  for (const std::string& l : o.get_lnames()) {
    term += (term.empty() ? "" : ", ") + std::string("\\fB\\-\\-") + Roff(l) + "\\fR";
  }
  if (o.get_expected_max() > 0) {
    std::string type = o.get_type_name();
    if (type.empty()) type = "VALUE";
    term += " \\fI" + Roff(type) + "\\fR";
  }
  return term;
}

void WriteOptions(std::string& out, const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().size() == 1 && o->get_lnames()[0] == "help") continue;
    out += ".TP\n" + OptionTerm(*o) + "\n";
    std::string help = o->get_description();
    if (o->get_required()) help += help.empty() ? "Required." : " (required)";
    out += Roff(help.empty() ? "(no description)" : help) + "\n";
  }
}

// A command's synopsis: "tx task show ID [OPTIONS]".
std::string Synopsis(const CLI::App& app, const std::string& path) {
  std::string s = "\\fBtx " + Roff(path) + "\\fR";
  bool options = false;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional()) {
      std::string name = "\\fI" + Roff(o->get_name()) + "\\fR";
      if (o->get_expected_max() > 1) name += "...";
      s += o->get_required() ? " " + name : " [" + name + "]";
    } else if (!(o->get_lnames().size() == 1 && o->get_lnames()[0] == "help")) {
      options = true;
    }
  }
  if (options) s += " [\\fIOPTIONS\\fR]";
  return s;
}

void WriteCommands(std::string& out, const CLI::App& app, const std::string& path) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    std::string p = path.empty() ? sub->get_name() : path + " " + sub->get_name();
    if (sub->get_subcommands([](const CLI::App*) { return true; }).empty()) {
      out += ".SS " + Synopsis(*sub, p) + "\n" + Roff(sub->get_description()) + "\n";
      WriteOptions(out, *sub);
    } else {
      WriteCommands(out, *sub, p);
    }
  }
}

constexpr const char* kEnvironment[][2] = {
    {"TX_DB", "The store: a SQLite file or a postgresql:// URL (--db wins)."},
    {"TX_DIR",
     "For a PostgreSQL store: this machine's directory for config.toml, logs and tokens (else "
     ".tx here)."},
    {"TX_SERVER, TX_API_TOKEN",
     "A remote fleet's HTTP API and its token, for the commands that work through it."},
    {"TX_SYNCHRONOUS", "SQLite's synchronous setting (NORMAL by default, FULL)."},
    {"TX_ALLOWED_COMMANDS",
     "A comma list of dotted command names (wildcards allowed): tx refuses any other."},
    {"TX_TASK_ID, TX_CLAIM_TOKEN, TX_ATTEMPT, TX_WORKER_ID",
     "Set by a worker for its agent: the task, its claim's fencing token, the attempt, the "
     "worker."},
    {"NO_COLOR", "When set and not empty, no colours."},
};

constexpr const char* kFiles[][2] = {
    {".tx/tx.db", "The SQLite store (tx init makes it)."},
    {".tx/config.toml",
     "The configuration of workers, the orchestrator, agents, git, sandboxes "
     "and notifications."},
    {".tx/token", "The API token (mode 0600)."},
    {".tx/logs/", "Each attempt's log, and the workers' logs."},
    {".tx/orchestrator.pid, .tx/orchestrator.log",
     "The running orchestrator's pid file and, as a daemon, its log."},
};

constexpr const char* kExitStatus[][2] = {
    {"0", "Success."},
    {"1", "Failure."},
    {"2", "Usage error: an unknown command, flag or value."},
    {"3", "Not found."},
    {"4", "Conflict: already claimed, a stale token, the wrong state."},
    {"5", "Backpressure: a full queue, no capacity."},
};

template <std::size_t N>
void WriteTable(std::string& out, const char* const (&rows)[N][2]) {
  for (const auto& row : rows) {
    out += ".TP\n\\fB" + Roff(row[0]) + "\\fR\n" + Roff(row[1]) + "\n";
  }
}

std::string ManPage(const CLI::App& root) {
  // The root's description: "tx — SUMMARY.\n\nMORE".
  std::string description = root.get_description();
  std::size_t eol = description.find('\n');
  std::string summary = description.substr(0, eol);
  std::string more = eol == std::string::npos ? "" : description.substr(eol);
  more.erase(0, std::min(more.size(), more.find_first_not_of('\n')));
  if (auto dash = summary.find(" — "); dash != std::string::npos) {
    summary = summary.substr(dash + std::string(" — ").size());
  }
  if (!summary.empty() && summary.back() == '.') summary.pop_back();
  std::string out = ".TH TX 1 \"\" \"tx " TX_VERSION "\" \"User Commands\"\n";
  out += ".SH NAME\ntx \\- " + Roff(summary) + "\n";
  out +=
      ".SH SYNOPSIS\n\\fBtx\\fR [\\fB\\-\\-db\\fR \\fIPATH\\fR] [\\fB\\-\\-json\\fR] "
      "\\fICOMMAND\\fR [\\fIARGS\\fR]\n";
  out += ".SH DESCRIPTION\n" + Roff(more) + "\n";
  out += ".SH GLOBAL OPTIONS\n";
  WriteOptions(out, root);
  out += ".SH COMMANDS\n";
  WriteCommands(out, root, "");
  out += ".SH ENVIRONMENT\n";
  WriteTable(out, kEnvironment);
  out += ".SH FILES\n";
  WriteTable(out, kFiles);
  out += ".SH EXIT STATUS\n";
  WriteTable(out, kExitStatus);
  out += ".SH SEE ALSO\n" +
         Roff(
             "The documentation installed with tx (share/doc/tx: README.md, "
             "docs/*.md); tx completion for shell completion.") +
         "\n";
  return out;
}

}  // namespace

Handler SetupMan(CLI::App& cmd) {
  return [&cmd](Context& ctx) -> Status {
    const CLI::App* root = &cmd;
    while (root->get_parent() != nullptr) root = root->get_parent();
    ctx.out() << ManPage(*root);
    return Ok();
  };
}

}  // namespace tx::cli
