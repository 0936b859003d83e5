// `trainlock`: the command-line front end. Parses arguments with CLI11, dispatches to one
// subcommand and maps every failure to the documented exit codes (docs/DESIGN.md).
//
// Conventions every command shares: options before or after positionals; the global options
// (--catalog, -q, -v) before or after the subcommand; `trainlock help [COMMAND]`; a mistyped
// subcommand or option answered with the closest one; -V/--version with the git commit it was built
// from; `trainlock completion bash|zsh|fish`.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "base/exit_code.h"
#include "base/progress_option.h"
#include "base/suggest.h"
#include "base/version_info.h"
#include "cli/commands.h"
#include "cli/completion.h"

#ifndef TRAINLOCK_GIT_COMMIT
#define TRAINLOCK_GIT_COMMIT "unknown"
#endif

namespace {

using trainlock::cli::Command;

// "trainlock image build": the program and the subcommands the user chose, which a Failure's
// message is printed under.
std::string CommandPath(const CLI::App& app) {
  std::string path = "trainlock";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

// The deepest subcommand the parse reached (the app itself when none).
const CLI::App* Deepest(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// "; did you mean 'lock'?" for a mistyped command, or "". Commands are short, so a swapped
// pair of letters ("lcok", two edits) or a prefix ("val") still names one; suggest.h's
// threshold is for longer manifest keys.
std::string SuggestionFor(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t d = name.starts_with(word) ? 1 : trainlock::EditDistance(word, name);
    if (best.empty() || d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  if (best.empty() || best_distance > std::max<size_t>(2, word.size() / 3)) return "";
  return "; did you mean '" + best + "'?";
}

// When the parse stopped at a command that has subcommands and the user's next word is none
// of them, the message for it ("unknown command 'lcok'; did you mean 'lock'?"), else "".
std::string UnknownSubcommand(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = Deepest(app);
  const std::vector<std::string> names = SubcommandNames(*at);
  if (names.empty()) return "";
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
    const std::string where = at == &app ? "trainlock" : CommandPath(app);
    return where + ": error: unknown command '" + args[i] + "'" + SuggestionFor(args[i], names) +
           "\nrun `" + where + " --help` for the list\n";
  }
  return "";
}

// The option `name` ("--require", "-q") as `at` or, through fallthrough, a command above it
// takes it; nullptr when none does.
const CLI::Option* FindOption(const CLI::App* at, const std::string& name) {
  for (; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option* o = at->get_option_no_throw(name); o && o->nonpositional()) return o;
  }
  return nullptr;
}

// Every long option name `at` and the commands above it take: the candidates for a typo.
std::vector<std::string> LongOptionNames(const CLI::App* at) {
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
  std::string path = "trainlock";
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
      const CLI::Option* option = FindOption(at, name);
      if (option == nullptr) {
        std::vector<std::string> candidates = LongOptionNames(at);
        std::vector<std::string_view> views(candidates.begin(), candidates.end());
        const std::string closest = trainlock::ClosestMatch(name, views);
        return path + ": error: unknown option " + name +
               (closest.empty() ? "" : "; did you mean " + closest + "?") + "\nrun `" + path +
               " --help` for the options\n";
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

// `trainlock help [COMMAND...]`: the help of the app or of the command named.
int RunHelp(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* at = &app;
  std::string path = "trainlock";
  for (const std::string& word : words) {
    const std::vector<std::string> names = SubcommandNames(*at);
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      std::cerr << "trainlock help: error: unknown command '" << word << "'"
                << SuggestionFor(word, names) << "\n";
      return trainlock::kExitBadInput;
    }
    at = at->get_subcommand(word);
    path += " " + word;
  }
  // The formatter directly: App::help() would describe the subcommand parsed, `help` itself.
  std::cout << at->get_formatter()->make_help(at, path, CLI::AppFormatMode::Normal);
  return trainlock::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainlock;
  CLI::App app{
      "trainlock: pin a PyTorch training run in a lockfile, build its images and prove the node\n"
      "before the long run starts.\n\n"
      "Exit codes: 0 success or pass; 1 a verdict against (findings, failed check, gate\n"
      "refused); 2 bad input or usage; 3 the environment failed."};
  app.name("trainlock");
  app.set_version_flag("-V,--version", std::string("trainlock ") + std::string(kTrainlockVersion) +
                                           " (commit " TRAINLOCK_GIT_COMMIT ")");
  app.require_subcommand(1);
  // Subcommands created after this read the app's options too: global options may follow
  // the subcommand ("trainlock check . --catalog DIR").
  app.fallthrough();

  cli::GlobalOptions global;
  if (const char* env = std::getenv("TRAINLOCK_CATALOG")) global.catalog_dir = env;
  app.add_option("--catalog", global.catalog_dir,
                 "Compatibility knowledge base directory (default: the copy of lockfiles/compat "
                 "built into the binary; env TRAINLOCK_CATALOG)");
  app.add_flag_function(
      "-q,--quiet", [&global](int64_t n) { global.verbosity -= static_cast<int>(n); },
      "Print only results and errors (no progress or `wrote` lines)");
  app.add_flag_function(
      "-v,--verbose", [&global](int64_t n) { global.verbosity += static_cast<int>(n); },
      "Say more: check names the files it read, gate lists the report's checks, validate shows\n"
      "each check's metrics; -vv: gate also shows each check's summary and evidence");
  AddProgressOption(app, global.progress, "long steps (validate, lock, fetch, image build)");

  std::map<CLI::App*, Command> commands;
  for (auto registrar :
       {cli::RegisterInit, cli::RegisterCheck, cli::RegisterHash, cli::RegisterValidate,
        cli::RegisterInspect, cli::RegisterArchs, cli::RegisterLock, cli::RegisterFetch,
        cli::RegisterImage, cli::RegisterPlan, cli::RegisterGate, cli::RegisterKeygen,
        cli::RegisterReport, cli::RegisterFleet}) {
    Command command = registrar(app, global);
    commands[app.get_subcommands({}).back()] = command;
  }

  std::vector<std::string> help_words;
  CLI::App* help = app.add_subcommand("help", "Print the help of trainlock or of COMMAND");
  help->add_option("COMMAND", help_words, "A command, e.g. `lock` or `fleet k8s`");
  commands[help] = [&app, &help_words] { return RunHelp(app, help_words); };

  std::string shell;
  CLI::App* completion = app.add_subcommand(
      "completion",
      "Print a shell completion script for trainlock's commands and options, e.g.\n"
      "  source <(trainlock completion bash)      (bash; zsh alike)\n"
      "  trainlock completion fish | source       (fish)");
  completion->add_option("SHELL", shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  commands[completion] = [&app, &shell] {
    std::cout << cli::CompletionScript(app, shell);
    return kExitOk;
  };

  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      for (const std::string& unknown : {UnknownSubcommand(app, args), UnknownOption(app, args)}) {
        if (unknown.empty()) continue;
        std::cerr << unknown;
        return kExitBadInput;
      }
    }
    int code = app.exit(e);  // prints help, version or the usage error
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (auto& [subcommand, command] : commands) {
    if (subcommand->parsed()) return RunWithExitCodes("trainlock", command, CommandPath(app));
  }
  return kExitBadInput;
}
