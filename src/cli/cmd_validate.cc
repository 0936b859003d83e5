// `trainlock validate DIR [OPTIONS]`: run the in-container validator, trainlock-validate,
// on a project. The validator is a separate binary (it links LibTorch; trainlock does not):
// this command finds it beside `trainlock` or on PATH and hands over the process.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "base/exit_code.h"
#include "cli/commands.h"

namespace trainlock::cli {
namespace {

struct ValidateOptions {
  std::string dir = ".";
  std::vector<std::string> passthrough;
};

int RunValidate(const ValidateOptions& options) {
  std::vector<std::string> args = {"trainlock-validate", options.dir};
  args.insert(args.end(), options.passthrough.begin(), options.passthrough.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path sibling = self.parent_path() / "trainlock-validate";
    if (std::filesystem::exists(sibling)) ::execv(sibling.c_str(), argv.data());
  }
  ::execvp("trainlock-validate", argv.data());
  std::cerr
      << "trainlock: error: cannot run trainlock-validate (" << std::strerror(errno)
      << "); it is built beside trainlock when LibTorch is found, or run it inside the image\n";
  return kExitEnvironment;
}

}  // namespace

Command RegisterValidate(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run trainlock-validate on DIR: node probes, pinned data, custom ops, a measured training\n"
      "step and the train -> checkpoint -> SIGKILL -> restore -> resume round trip, writing\n"
      "report.json. Options after DIR go to the validator (see trainlock-validate --help):\n"
      "--out FILE, --checkpoint-dir DIR, --device auto|cpu|cuda, --threads N, --timeout S,\n"
      "--keep-work, --json, --negative-control rng|data|corrupt. Exit 0 pass, 1 fail.");
  cmd->add_option("DIR", options->dir, "Project directory")->capture_default_str();
  cmd->allow_extras();
  cmd->prefix_command();
  // Everything after DIR is the validator's, global options included: nothing falls through
  // to trainlock's own parser (main.cc turns fallthrough on for the other commands).
  cmd->fallthrough(false);
  return [options, cmd] {
    options->passthrough = cmd->remaining();
    return RunValidate(*options);
  };
}

}  // namespace trainlock::cli
