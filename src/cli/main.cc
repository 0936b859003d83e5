// `trainlock`: the command-line front end. Parses arguments with CLI11, dispatches to one
// subcommand and maps every failure to the documented exit codes (docs/DESIGN.md).
#include <cstdlib>
#include <map>
#include <string>

#include "base/exit_code.h"
#include "base/version_info.h"
#include "cli/commands.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace trainlock;
  CLI::App app{
      "trainlock: pin a PyTorch training run in a lockfile, build its images and prove the node\n"
      "before the long run starts.\n\n"
      "Exit codes: 0 success or pass; 1 a verdict against (findings, failed check, gate\n"
      "refused); 2 bad input or usage; 3 the environment failed."};
  app.set_version_flag("--version", std::string(kTrainlockVersion));
  app.require_subcommand(1);

  cli::GlobalOptions global;
  if (const char* env = std::getenv("TRAINLOCK_CATALOG")) global.catalog_dir = env;
  app.add_option("--catalog", global.catalog_dir,
                 "Compatibility knowledge base directory (default: the copy of lockfiles/compat "
                 "built into the binary; env TRAINLOCK_CATALOG)");

  std::map<CLI::App*, Command> commands;
  for (auto registrar :
       {cli::RegisterCheck, cli::RegisterHash, cli::RegisterValidate, cli::RegisterInspect,
        cli::RegisterArchs, cli::RegisterLock, cli::RegisterFetch, cli::RegisterImage,
        cli::RegisterPlan, cli::RegisterGate, cli::RegisterKeygen, cli::RegisterReport,
        cli::RegisterFleet}) {
    Command command = registrar(app, global);
    commands[app.get_subcommands({}).back()] = command;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, version or the usage error
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (auto& [subcommand, command] : commands) {
    if (subcommand->parsed()) return RunWithExitCodes("trainlock", command, CommandPath(app));
  }
  return kExitBadInput;
}
