// One error format for both command lines (trainlock, trainlock-validate): what CLI11 refuses
// (an unknown command or option, a bad value, a missing argument) is said in trainlock's own
// words, never CLI11's, as
//   PATH: error: MESSAGE               when a file or directory the user named is at fault
//   trainlock CMD: error: MESSAGE      for usage
// on one line, then at most one hint line ("run `trainlock CMD --help` for the options").
// docs/commands.md ("Errors") describes it; tests/cli_errors_test.cc holds every command to it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace trainlock {

// "trainlock image build": the app's name and the subcommands the parse reached.
std::string CommandPath(const CLI::App& app);

// The names of `app`'s visible subcommands.
std::vector<std::string> SubcommandNames(const CLI::App& app);

// "; did you mean 'lock'?" for a mistyped command among `names`, or "".
std::string CommandSuggestion(const std::string& word, const std::vector<std::string>& names);

// When the word after the deepest command parsed names none of its subcommands ("trainlock
// nosuch --help"), the lines (each ending in "\n") saying so with the closest one; else "".
// Asked before a request for help is answered, so that a typo is not answered with the help of
// the command above it.
std::string UnknownCommandText(const CLI::App& app, const std::vector<std::string>& args);

// The lines (each ending in "\n") that say why parsing `args` (argv without the program)
// failed with `e`, which is not a request for help or the version.
std::string UsageErrorText(CLI::App& app, const CLI::ParseError& e,
                           const std::vector<std::string>& args);

}  // namespace trainlock
