// `trainlock archs DIR [--target cuda|rocm] [--torch]`: the GPU architectures the target's
// accelerators need, as a CMake list (or in TORCH_CUDA_ARCH_LIST form), for building custom
// ops (examples/ops) for exactly those. The target defaults to the project's only GPU target.
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/json_file.h"
#include "cli/commands.h"
#include "compat/catalog.h"
#include "compat/target_archs.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct ArchsOptions {
  std::string dir = ".";
  std::string target;  // "" = the only GPU target
  bool json = false;
  bool torch = false;  // TORCH_CUDA_ARCH_LIST form: "8.0;9.0"
};

// --target, or the project's one GPU target; several (or none) must be chosen among.
std::string TargetOf(const ArchsOptions& options, const Project& project) {
  if (!options.target.empty()) return options.target;
  std::vector<std::string> gpu;
  for (const auto& [name, target] : project.effective().targets) {
    if (name != "cpu") gpu.push_back(name);
  }
  if (gpu.size() == 1) return gpu.front();
  const std::string& file = project.lock ? project.lock_path : project.manifest_path;
  throw InputError(Diagnostic{file,
                              {},
                              gpu.empty() ? "has no GPU target (targets.cuda or targets.rocm)"
                                          : "has more than one GPU target",
                              "choose one with --target cuda|rocm"});
}

// "90" -> "9.0", as TORCH_CUDA_ARCH_LIST writes compute capabilities; gfx targets unchanged
// (PYTORCH_ROCM_ARCH takes them as they are).
std::string TorchForm(const std::string& arch) {
  if (arch.starts_with("gfx") || arch.size() < 2) return arch;
  return arch.substr(0, arch.size() - 1) + "." + arch.substr(arch.size() - 1);
}

int RunArchs(const ArchsOptions& options, const GlobalOptions& global) {
  Catalog catalog = LoadCatalog(global);
  Project project = LoadProject(options.dir, ManifestRequirement::kOptional);
  const std::string target = TargetOf(options, project);
  std::vector<std::string> archs = TargetArchitectures(project, target, catalog);
  if (options.torch) {
    for (std::string& a : archs) a = TorchForm(a);
  }
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{{"target", target}, {"architectures", archs}}, -1)
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
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_option("--target", options->target,
                  "cuda or rocm (default: the project's only GPU target)")
      ->check(CLI::IsMember({"cuda", "rocm"}));
  cmd->add_flag("--torch", options->torch,
                "TORCH_CUDA_ARCH_LIST form (\"8.0;9.0\"; gfx targets as they are), e.g.\n"
                "  TORCH_CUDA_ARCH_LIST=\"$(trainlock archs . --torch)\" pip install ...");
  cmd->add_flag("--json", options->json, "Print as JSON");
  return [options, &global] { return RunArchs(*options, global); };
}

}  // namespace trainlock::cli
