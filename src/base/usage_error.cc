// CLI11's parse errors in trainlock's words; see usage_error.h.
#include "base/usage_error.h"

#include <algorithm>
#include <regex>

#include "base/diagnostic.h"
#include "base/suggest.h"
#include "base/terminal_text.h"

namespace trainlock {
namespace {

// The deepest subcommand the parse reached (the app itself when none).
const CLI::App* DeepestParsedCommand(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

// The hint line under a usage error.
std::string HelpHint(const std::string& command, const char* what) {
  return "run `" + command + " --help` for " + what + "\n";
}

// When the parse stopped at a command that only dispatches to subcommands and the user's next
// word is none of them, the message for it ("unknown command 'lcok'; did you mean 'lock'?"),
// else "".
std::string UnknownSubcommand(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = DeepestParsedCommand(app);
  const std::vector<std::string> names = SubcommandNames(*at);
  const bool takes_positionals =
      !at->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  if (names.empty() || takes_positionals) return "";
  // The first word after the deepest command's own name that is not an option or the value
  // of --catalog.
  size_t i = 0;
  if (at != &app) {
    while (i < args.size() && args[i] != at->get_name()) ++i;
    ++i;
  }
  for (; i < args.size(); ++i) {
    if (args[i] == "--catalog") {
      ++i;
      continue;
    }
    if (args[i].starts_with("-")) continue;
    const std::string where = at == &app ? app.get_name() : CommandPath(app);
    return where + ": error: unknown command " + Quoted(args[i]) +
           CommandSuggestion(args[i], names) + "\n" + HelpHint(where, "the list");
  }
  return "";
}

// The option `name` ("--require", "-q") as `at` or, through fallthrough, a command above it
// takes it; nullptr when none does.
const CLI::Option* OptionOnPath(const CLI::App* at, const std::string& name) {
  for (; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option* o = at->get_option_no_throw(name); o && o->nonpositional()) return o;
  }
  return nullptr;
}

// Every long option name `at` and the commands above it take: the candidates for a typo.
std::vector<std::string> LongOptionsOnPath(const CLI::App* at) {
  std::vector<std::string> names;
  for (; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* o : at->get_options())
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

// The first option in `args` that no command on the path takes, as a message ("trainlock
// gate: error: unknown option --reqiure; did you mean --require?"), else "". CLI11's own
// message lists leftover words without a suggestion, and may name a missing required option
// instead when a mistyped one was meant to give it. Commands that forward unknown options
// (validate, to the validator) check them themselves.
std::string UnknownOption(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* at = &app;
  std::string path = app.get_name();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (at->get_allow_extras() || a == "--") return "";
    if (a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) {
      for (CLI::App* sub : at->get_subcommands([&a](CLI::App* c) { return c->get_name() == a; })) {
        at = sub;
        path += " " + a;
      }
      continue;
    }
    // "--name=value", "--name", "-x" or grouped short flags "-qv".
    std::vector<std::string> names;
    if (a.starts_with("--")) {
      names.push_back(a.substr(0, a.find('=')));
    } else {
      for (size_t k = 1; k < a.size(); ++k) names.push_back(std::string("-") + a[k]);
    }
    for (const std::string& name : names) {
      const CLI::Option* option = OptionOnPath(at, name);
      if (option == nullptr) {
        std::vector<std::string> candidates = LongOptionsOnPath(at);
        std::vector<std::string_view> views(candidates.begin(), candidates.end());
        const std::string closest = ClosestMatch(name, views);
        return path + ": error: unknown option " + TerminalLine(name) +
               (closest.empty() ? "" : "; did you mean " + closest + "?") + "\n" +
               HelpHint(path, "the options");
      }
      // A value in the next word: skip it (a short option's value may follow it directly).
      if (option->get_expected_min() > 0 && a.find('=') == std::string::npos) {
        if (names.size() == 1) ++i;
        break;
      }
    }
  }
  return "";
}

// "a,b,c" as "a, b or c", as the other messages name choices.
std::string SpacedList(std::string list) {
  const size_t last = list.rfind(',');
  if (last != std::string::npos) list.replace(last, 1, " or ");
  for (size_t at = list.find(','); at != std::string::npos; at = list.find(',', at + 2))
    list.insert(at + 1, " ");
  return list;
}

// CLI11's wording of a refused value or argument (`what`) in ours, user input quoted.
std::string Reworded(const std::string& what) {
  struct Rule {
    std::regex pattern;
    std::string (*say)(const std::smatch&);
  };
  static const Rule kRules[] = {
      {std::regex(R"(^(\S+): (.*) not in \{(.*)\}$)"),
       [](const std::smatch& m) {
         return m[1].str() + ": " + Quoted(m[2].str()) + " is not one of " + SpacedList(m[3]);
       }},
      {std::regex(R"(^(\S+): Value (.*) not in range (\S+) to (\S+)$)"),
       [](const std::smatch& m) {
         return m[1].str() + ": " + Quoted(m[2].str()) + " is not in the range " + m[3].str() +
                " to " + m[4].str();
       }},
      {std::regex(R"(^(\S+): Value (.*) could not be converted$)"),
       [](const std::smatch& m) {
         return m[1].str() + ": " + Quoted(m[2].str()) + " is not a number";
       }},
      {std::regex(R"(^Could not convert: (\S+) = (.*)$)"),
       [](const std::smatch& m) {
         return m[1].str() + ": " + Quoted(m[2].str()) + " is not a valid value";
       }},
      {std::regex(R"(^The value (.*) is not an allowed value for (\S+)$)"),
       [](const std::smatch& m) {
         return m[2].str() + ": " + Quoted(m[1].str()) + " is not an allowed value";
       }},
      {std::regex(R"(^(\S+): \d+ required .* missing$)"),
       [](const std::smatch& m) { return m[1].str() + " needs a value"; }},
      {std::regex(R"(^The following arguments? (?:was|were) not expected: (\S+).*$)"),
       [](const std::smatch& m) { return "unexpected argument " + Quoted(m[1].str()); }},
      {std::regex(R"(^A subcommand is required$)"),
       [](const std::smatch&) { return std::string("a command is required"); }},
  };
  std::smatch m;
  for (const Rule& rule : kRules)
    if (std::regex_match(what, m, rule.pattern)) return rule.say(m);
  // Anything else keeps its words, as one line starting in lower case ("LIB is required").
  std::string line = TerminalLine(what);
  if (line.size() > 1 && line[0] >= 'A' && line[0] <= 'Z' && line[1] >= 'a' && line[1] <= 'z')
    line[0] = static_cast<char>(line[0] - 'A' + 'a');
  return line;
}

}  // namespace

std::string CommandPath(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// Commands are short, so a swapped pair of letters ("lcok", two edits) or a prefix ("val")
// still names one; suggest.h's threshold is for longer manifest keys.
std::string CommandSuggestion(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t d = name.starts_with(word) ? 1 : EditDistance(word, name);
    if (best.empty() || d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  if (best.empty() || best_distance > std::max<size_t>(2, word.size() / 3)) return "";
  return "; did you mean '" + best + "'?";
}

std::string UnknownCommandText(const CLI::App& app, const std::vector<std::string>& args) {
  return UnknownSubcommand(app, args);
}

std::string UsageErrorText(CLI::App& app, const CLI::ParseError& e,
                           const std::vector<std::string>& args) {
  for (const std::string& unknown : {UnknownSubcommand(app, args), UnknownOption(app, args)})
    if (!unknown.empty()) return unknown;
  const std::string what = e.what();
  // A validator that judged a path says so in the diagnostic format already (DIR: PATH:
  // error: ...): the path is at fault, so it leads.
  static const std::regex kDiagnostic(R"(^\S+: (.+: error: .*)$)");
  std::smatch m;
  if (std::regex_match(what, m, kDiagnostic)) return TerminalLine(m[1].str()) + "\n";
  const std::string command = CommandPath(app);
  const bool wants_command =
      std::string_view(e.get_name()) == "RequiredError" && what == "A subcommand is required";
  return command + ": error: " + Reworded(what) + "\n" +
         HelpHint(command, wants_command ? "the list" : "the options");
}

}  // namespace trainlock
