// `trainlock archs DIR --target cuda|rocm`: the GPU architectures the target's accelerators
// need, as a CMake list, for building custom ops (examples/ops) for exactly those.
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/exit_code.h"
#include "cli/commands.h"
#include "compat/catalog.h"
#include "compat/target_archs.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct ArchsOptions {
  std::string dir = ".";
  std::string target;
  bool json = false;
};

int RunArchs(const ArchsOptions& options, const GlobalOptions& global) {
  Catalog catalog = LoadCatalog(global);
  Project project = LoadProject(options.dir, ManifestRequirement::kOptional);
  std::vector<std::string> archs = TargetArchitectures(project, options.target, catalog);
  if (options.json) {
    std::cout << nlohmann::json{{"target", options.target}, {"architectures", archs}}.dump()
              << "\n";
    return kExitOk;
  }
  std::string list;
  for (const std::string& a : archs) list += (list.empty() ? "" : ";") + a;
  std::cout << list << "\n";
  return kExitOk;
}

}  // namespace

Command RegisterArchs(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<ArchsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "archs",
      "Print the GPU architectures of a target's accelerators as a CMake list: compute\n"
      "capabilities for cuda (\"80;90\"), gfx targets for rocm (\"gfx942\"). For building custom\n"
      "ops for exactly the locked hardware, e.g.\n"
      "  cmake -DTRAINLOCK_OPS_CUDA_ARCHS=\"$(trainlock archs . --target cuda)\" ...");
  cmd->add_option("DIR", options->dir, "Project directory")->capture_default_str();
  cmd->add_option("--target", options->target, "cuda or rocm")->required();
  cmd->add_flag("--json", options->json, "Print as JSON");
  return [options, &global] { return RunArchs(*options, global); };
}

}  // namespace trainlock::cli
