// `trainlock`: the command-line front end. Parses arguments with CLI11, dispatches to one
// subcommand and maps every failure to the documented exit codes (docs/DESIGN.md).
//
// Conventions every command shares: options before or after positionals; the global options
// (--catalog, -q, -v) before or after the subcommand; `trainlock help [COMMAND]`; a mistyped
// subcommand or option answered with the closest one; -V/--version with the git commit it was built
// from; `trainlock completion bash|zsh|fish`; every usage error in one format (base/usage_error.h).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/progress_option.h"
#include "base/stop_signals.h"
#include "base/usage_error.h"
#include "base/version_info.h"
#include "cli/commands.h"
#include "cli/completion.h"

#ifndef TRAINLOCK_GIT_COMMIT
#define TRAINLOCK_GIT_COMMIT "unknown"
#endif

namespace {

using trainlock::CommandSuggestion;
using trainlock::SubcommandNames;
using trainlock::cli::Command;

// `trainlock help [COMMAND...]`: the help of the app or of the command named.
int RunHelp(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* at = &app;
  std::string path = "trainlock";
  for (const std::string& word : words) {
    const std::vector<std::string> names = SubcommandNames(*at);
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      std::cerr << "trainlock help: error: unknown command " << trainlock::Quoted(word)
                << CommandSuggestion(word, names) << "\n"
                << "run `" << path << " --help` for the list\n";
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
  StopOnSignalsWhenProcessOne("trainlock");
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
        cli::RegisterReport, cli::RegisterFleet, cli::RegisterWatch}) {
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
    if (e.get_exit_code() == 0) {
      // `trainlock nosuch --help`: the unknown command is named, not the help above it shown.
      const std::string unknown = UnknownCommandText(app, args);
      if (!unknown.empty()) {
        std::cerr << unknown;
        return kExitBadInput;
      }
      return app.exit(e);  // prints the help or the version
    }
    std::cerr << UsageErrorText(app, e, args);
    return kExitBadInput;
  }
  for (auto& [subcommand, command] : commands) {
    if (subcommand->parsed()) return RunWithExitCodes("trainlock", command, CommandPath(app));
  }
  return kExitBadInput;
}
