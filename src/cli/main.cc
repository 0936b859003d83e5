// `trainlock`: the command-line front end. Parses arguments with CLI11, dispatches to one
// subcommand and maps every failure to the documented exit codes (docs/DESIGN.md).
#include <cstdlib>
#include <iostream>
#include <map>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/version_info.h"
#include "cli/commands.h"

namespace {

int Run(int argc, char** argv) {
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

  std::map<CLI::App*, cli::Command> commands;
  auto add = [&](const char* name, auto registrar) {
    size_t before = app.get_subcommands({}).size();
    cli::Command command = registrar(app, global);
    commands[app.get_subcommands({}).at(before)] = command;
    (void)name;
  };
  add("check", cli::RegisterCheck);
  add("hash", cli::RegisterHash);
  add("validate", cli::RegisterValidate);
  add("inspect", cli::RegisterInspect);
  add("archs", cli::RegisterArchs);
  add("lock", cli::RegisterLock);
  add("fetch", cli::RegisterFetch);
  add("image", cli::RegisterImage);
  add("plan", cli::RegisterPlan);
  add("gate", cli::RegisterGate);
  add("keygen", cli::RegisterKeygen);
  add("report", cli::RegisterReport);
  add("fleet", cli::RegisterFleet);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, version or the usage error
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (auto& [subcommand, command] : commands) {
    if (subcommand->parsed()) return command();
  }
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  return trainlock::RunWithExitCodes("trainlock", [&] { return Run(argc, argv); });
}
