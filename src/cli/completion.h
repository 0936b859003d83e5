// Shell completion scripts for bash, zsh and fish, generated from the CLI11 command tree so
// that they always offer exactly the subcommands and options `trainlock` parses.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace trainlock::cli {

// The script for `shell` ("bash", "zsh" or "fish") completing `app`'s subcommands (nested
// ones too) and each one's long and short options.
std::string CompletionScript(const CLI::App& app, const std::string& shell);

}  // namespace trainlock::cli
