// The --progress option as both command-line programs (trainlock, trainlock-validate) take it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/diagnostic.h"
#include "base/progress.h"

namespace trainlock {

// Adds --progress STYLE (base/progress.h's names) to `app`, stored in `style`; `scope` says
// which steps it covers, for the help text.
inline CLI::Option* AddProgressOption(CLI::App& app, std::string& style, const std::string& scope) {
  return app
      .add_option("--progress", style,
                  "Progress of " + scope +
                      " on stderr: auto (terminal when stderr is one, else log), terminal, log (a "
                      "timestamped line per step), json (the same as JSON lines) or none")
      ->check([](const std::string& s) {
        return ParseProgressStyle(s) ? "" : Quoted(s) + " is not one of " + kProgressStyleNames;
      })
      ->capture_default_str();
}

}  // namespace trainlock
