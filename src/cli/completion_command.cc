// tx completion bash|zsh|fish: a shell completion script made from the command tree CLI11 was
// given — the command table's groups and verbs, each with its long flags — so that it never
// drifts from --help. Task ids are completed from `tx task list` where a command's positional is
// a task id. A --status, --sandbox or --queue value is completed too, the queues from the
// store's tasks.

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/task.h"

namespace tx::cli {

namespace {

// One place on the command line: tx itself (path ""), a group ("task") or a command ("task
// list").
struct Node {
  std::string path;
  std::string help;
  std::vector<std::string> words;   // the commands that may follow
  std::vector<std::string> flags;   // long flags: its own, then its groups', then tx's
  std::vector<std::string> valued;  // those of `flags` that take a value
  std::vector<std::string> flag_help;
  bool task_id = false;  // a positional of it is a task id
};

void Collect(const CLI::App& app, const std::string& path, const Node& parent,
             std::vector<Node>& out) {
  Node n;
  n.path = path;
  n.help = app.get_description();
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional()) {
      n.task_id = n.task_id || o->get_description().rfind("Task id", 0) == 0;
      continue;
    }
    for (const std::string& name : o->get_lnames()) {
      n.flags.push_back("--" + name);
      n.flag_help.push_back(o->get_description());
      if (o->get_expected_max() > 0) n.valued.push_back("--" + name);
    }
  }
  for (std::size_t i = 0; i < parent.flags.size(); ++i) {
    const std::string& f = parent.flags[i];
    if (std::find(n.flags.begin(), n.flags.end(), f) != n.flags.end()) continue;
    n.flags.push_back(f);
    n.flag_help.push_back(parent.flag_help[i]);
  }
  for (const std::string& f : parent.valued) {
    if (std::find(n.valued.begin(), n.valued.end(), f) == n.valued.end()) n.valued.push_back(f);
  }
  auto subs = app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* sub : subs) n.words.push_back(sub->get_name());
  out.push_back(n);
  Node inherited = out.back();  // a copy: `out` grows below
  for (const CLI::App* sub : subs) {
    Collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), inherited, out);
  }
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The values a flag's argument is completed from: fixed words, or the queue names of the store's
// tasks (read as you type, from the first page of `tx task list`).
struct FlagValues {
  std::string_view flag;
  std::string words;  // empty: the store's queues
};

std::vector<FlagValues> ValueCompletions() {
  std::string statuses;
  for (TaskStatus s = TaskStatus::kBlocked; s <= TaskStatus::kWaiting;
       s = static_cast<TaskStatus>(static_cast<int>(s) + 1)) {
    statuses += (statuses.empty() ? "" : " ") + std::string(ToString(s));
  }
  return {{"--status", statuses},
          {"--sandbox", "none bwrap podman docker"},
          {"--queue", ""},
          {"--queues", ""}};
}

constexpr const char* kQueuesSh =
    "command tx task list --json 2>/dev/null | sed -n 's/^ *\"queue\": \"\\([^\"]*\\)\".*/\\1/p' "
    "| sort -u";

// The data functions bash and zsh share: which commands and flags follow a path, which flags take
// a value, which commands take a task id.
void WriteShData(std::ostream& out, const std::vector<Node>& nodes) {
  auto table = [&](const char* fn, auto field) {
    out << fn << "() {\n  case \"$1\" in\n";
    for (const Node& n : nodes) {
      std::string words = Join(field(n));
      if (!words.empty()) out << "    '" << n.path << "') echo '" << words << "' ;;\n";
    }
    out << "  esac\n}\n";
  };
  table("_tx_words", [](const Node& n) { return n.words; });
  table("_tx_flags", [](const Node& n) { return n.flags; });
  table("_tx_valued", [](const Node& n) { return n.valued; });
  out << "_tx_takes_task() {\n  case \"$1\" in\n";
  std::vector<std::string> takes;
  for (const Node& n : nodes) {
    if (n.task_id) takes.push_back("'" + n.path + "'");
  }
  std::string alternatives;
  for (const auto& t : takes) alternatives += (alternatives.empty() ? "" : "|") + t;
  if (!alternatives.empty()) out << "    " << alternatives << ") return 0 ;;\n";
  out << "  esac\n  return 1\n}\n"
      << "_tx_task_ids() {\n"
      << "  command tx task list 2>/dev/null | awk '$1 ~ /^task-[a-z0-9]+$/ { print $1 }'\n"
      << "}\n"
      << "_tx_has() {\n  [[ \" $1 \" == *\" $2 \"* ]]\n}\n"
      << "_tx_values() {\n  case \"$1\" in\n";
  for (const FlagValues& v : ValueCompletions()) {
    out << "    " << v.flag << ") "
        << (v.words.empty() ? std::string(kQueuesSh) : "echo '" + v.words + "'") << " ;;\n";
  }
  out << "  esac\n}\n";
}

std::string Bash(const std::vector<Node>& nodes) {
  std::ostringstream out;
  out << "# bash completion for tx, made by `tx completion bash` from its command table.\n"
      << "# Install: tx completion bash > ~/.local/share/bash-completion/completions/tx\n";
  WriteShData(out, nodes);
  out << R"sh(_tx() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" node="" next w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    _tx_has "$(_tx_valued "$node")" "${COMP_WORDS[i-1]}" && continue
    _tx_has "$(_tx_words "$node")" "$w" && node="${node:+$node }$w"
  done
  ((COMP_CWORD > 1)) && prev="${COMP_WORDS[COMP_CWORD-1]}"
  if [[ $prev == -* ]] && _tx_has "$(_tx_valued "$node")" "$prev"; then
    COMPREPLY=($(compgen -W "$(_tx_values "$prev")" -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    next="$(_tx_flags "$node")"
  else
    next="$(_tx_words "$node")"
    [[ -z $next ]] && _tx_takes_task "$node" && next="$(_tx_task_ids)"
  fi
  COMPREPLY=($(compgen -W "$next" -- "$cur"))
}
complete -o default -F _tx tx
)sh";
  return out.str();
}

std::string Zsh(const std::vector<Node>& nodes) {
  std::ostringstream out;
  out << "#compdef tx\n"
      << "# zsh completion for tx, made by `tx completion zsh` from its command table.\n"
      << "# Install: tx completion zsh > ~/.zfunc/_tx (a directory on $fpath, before compinit)\n";
  WriteShData(out, nodes);
  out << R"sh(_tx() {
  local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}" node="" next w i
  for ((i = 2; i < CURRENT; i++)); do
    w="${words[i]}"
    [[ $w == -* ]] && continue
    _tx_has "$(_tx_valued "$node")" "${words[i-1]}" && continue
    _tx_has "$(_tx_words "$node")" "$w" && node="${node:+$node }$w"
  done
  if [[ $prev == -* ]] && _tx_has "$(_tx_valued "$node")" "$prev"; then
    next="$(_tx_values "$prev")"
    if [[ -n $next ]]; then compadd -- ${=next}; else _files; fi
    return
  fi
  if [[ $cur == -* ]]; then
    next="$(_tx_flags "$node")"
  else
    next="$(_tx_words "$node")"
    [[ -z $next ]] && _tx_takes_task "$node" && next="$(_tx_task_ids)"
  fi
  compadd -- ${=next}
}
if [[ "${funcstack[1]}" == "_tx" ]]; then
  _tx "$@"
else
  compdef _tx tx
fi
)sh";
  return out.str();
}

// A fish single-quoted string.
std::string FishQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string Fish(const std::vector<Node>& nodes) {
  std::ostringstream out;
  out << "# fish completion for tx, made by `tx completion fish` from its command table.\n"
      << "# Install: tx completion fish > ~/.config/fish/completions/tx.fish\n";
  auto table = [&](const char* fn, auto field) {
    out << "function " << fn << "\n    switch \"$argv[1]\"\n";
    for (const Node& n : nodes) {
      std::string words = Join(field(n));
      if (!words.empty())
        out << "        case '" << n.path << "'\n            echo " << words << "\n";
    }
    out << "    end\nend\n";
  };
  table("__tx_words", [](const Node& n) { return n.words; });
  table("__tx_valued", [](const Node& n) { return n.valued; });
  out << R"sh(# The command the words before the cursor name: "", "task", "task list", ...
function __tx_node
    set -l node ''
    set -l prev ''
    set -l words (commandline -opc)
    set -e words[1]
    for w in $words
        if not string match -q -- '-*' $w
            and not contains -- $prev (string split ' ' -- (__tx_valued $node))
            and contains -- $w (string split ' ' -- (__tx_words $node))
            set node (string trim -- "$node $w")
        end
        set prev $w
    end
    echo $node
end
function __tx_at
    set -l node (__tx_node)
    test "$node" = "$argv[1]"
end
function __tx_task_ids
    command tx task list 2>/dev/null | string match -r '^task-[a-z0-9]+'
end
function __tx_queues
    command tx task list --json 2>/dev/null | string replace -rf '^ *"queue": "([^"]*)".*' '$1' | sort -u
end
complete -c tx -f
)sh";
  std::map<std::string, const Node*> by_path;
  for (const Node& n : nodes) by_path[n.path] = &n;
  for (const Node& n : nodes) {
    std::string at = "-n " + FishQuote("__tx_at " + FishQuote(n.path));
    for (const std::string& w : n.words) {
      std::string path = n.path.empty() ? w : n.path + " " + w;
      out << "complete -c tx " << at << " -a " << w << " -d " << FishQuote(by_path[path]->help)
          << "\n";
    }
    for (std::size_t i = 0; i < n.flags.size(); ++i) {
      bool valued = std::find(n.valued.begin(), n.valued.end(), n.flags[i]) != n.valued.end();
      std::string values = valued ? " -r -F" : "";
      for (const FlagValues& v : ValueCompletions()) {
        if (valued && v.flag == n.flags[i]) {
          values = " -x -a " + FishQuote(v.words.empty() ? "(__tx_queues)" : v.words);
        }
      }
      out << "complete -c tx " << at << " -l " << n.flags[i].substr(2) << values << " -d "
          << FishQuote(n.flag_help[i]) << "\n";
    }
    if (n.task_id) out << "complete -c tx " << at << " -a '(__tx_task_ids)'\n";
  }
  return out.str();
}

}  // namespace

Handler SetupCompletion(CLI::App& cmd) {
  auto shell = std::make_shared<std::string>();
  cmd.add_option("shell", *shell, "bash, zsh or fish")->type_name("SHELL")->required();
  return [shell, &cmd](Context& ctx) -> Status {
    if (*shell != "bash" && *shell != "zsh" && *shell != "fish") {
      return Error::InvalidArgument("unknown shell '" + *shell +
                                    "': tx completion knows bash, zsh and fish");
    }
    const CLI::App* root = &cmd;
    while (root->get_parent() != nullptr) root = root->get_parent();
    std::vector<Node> nodes;
    Collect(*root, "", Node{}, nodes);
    ctx.out() << (*shell == "bash" ? Bash(nodes) : *shell == "zsh" ? Zsh(nodes) : Fish(nodes));
    return Ok();
  };
}

}  // namespace tx::cli
