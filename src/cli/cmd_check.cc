// `trainlock check DIR`: validate the manifest, lock and config, then report compatibility
// findings against the knowledge base.
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/exit_code.h"
#include "base/json_file.h"
#include "base/strings.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "compat/catalog.h"
#include "compat/compat.h"
#include "compat/model_config_check.h"
#include "lock/lock_rederive.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct CheckOptions {
  std::string dir = ".";
  bool json = false;
};

// -v: what was checked, so that a clean result can be told apart from an empty input.
void PrintInputs(const Project& project, const GlobalOptions& global) {
  std::cout << "checked " << project.manifest_path << " (sha256 " << project.manifest_sha256
            << ")\n";
  if (project.lock)
    std::cout << "checked " << project.lock_path << " (sha256 " << project.lock_sha256 << ")\n";
  std::cout << "checked " << project.config_path << " (sha256 " << project.config_sha256 << ")\n";
  std::cout << "against the catalog "
            << (global.catalog_dir.empty() ? "built into trainlock" : "in " + global.catalog_dir)
            << "\n";
}

// The summary lines: "ok" only for what was checked; what the offline re-derivation took on
// trust from the lock's pins is named, with the command that checks it.
void PrintCheckSummary(const CheckOptions& options, const Project& project, size_t findings,
                       const std::vector<std::string>& unchecked) {
  const std::string files =
      project.lock ? "manifest, lock and config" : "manifest and config (no lock yet)";
  if (findings == 0) {
    std::cout << options.dir << ": ok" << (unchecked.empty() ? "" : " offline") << ": " << files
              << " valid, no compatibility findings\n";
  } else {
    std::cout << options.dir << ": " << findings << " finding" << (findings == 1 ? "" : "s")
              << "\n";
  }
  if (!unchecked.empty()) {
    std::cout << options.dir << ": not checked offline: " << JoinStrings(unchecked, ", ")
              << ": run `trainlock lock " << options.dir << " --check --upstream`\n";
  }
}

int RunCheck(const CheckOptions& options, const GlobalOptions& global) {
  Catalog catalog = LoadCatalog(global);
  Project project = LoadProject(options.dir);
  std::vector<Finding> findings = CheckCompatibility(project, catalog);
  for (Finding& f : CheckModelConfig(project)) findings.push_back(std::move(f));
  // Offline: the lock must be what the manifest and the lock's own pins derive.
  for (Finding& f : RederivedLockFindings(project)) findings.push_back(std::move(f));
  const std::vector<std::string> unchecked = NotCheckedOffline(project);
  if (options.json) {
    nlohmann::json out = {{"project", options.dir},
                          {"manifest_sha256", project.manifest_sha256},
                          {"lock_sha256", project.lock ? nlohmann::json(project.lock_sha256)
                                                       : nlohmann::json(nullptr)},
                          {"config_sha256", project.config_sha256},
                          {"findings", nlohmann::json::array()},
                          {"not_checked_offline", unchecked}};
    for (const Finding& f : findings) out["findings"].push_back(f.ToJson());
    std::cout << DumpJsonOutput(out) << "\n";
  } else {
    if (global.verbosity > 0) PrintInputs(project, global);
    // A finding quotes the project's files (a cloned repository's): one terminal-safe line.
    for (const Finding& f : findings) std::cout << TerminalLine(f.Format()) << "\n";
    PrintCheckSummary(options, project, findings.size(), unchecked);
  }
  return findings.empty() ? kExitOk : kExitVerdict;
}

}  // namespace

Command RegisterCheck(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Validate a project's trainlock.toml, trainlock.lock (if present) and training config\n"
      "against their schemas, then report compatibility findings (driver vs CUDA, GPU\n"
      "architectures, vendors, torch build tags, stale or hand-edited lock: re-derived offline\n"
      "from the manifest and the lock's pins, each differing field named) and, when the model's "
      "pinned\n"
      "config.json is on this machine, every model field the training config disagrees with\n"
      "(at the field's line). What only the network can check (the wheels' dependencies and\n"
      "hashes, a tag-only base's digest...) is named, with `lock --check --upstream`.\n"
      "Exit 0 clean, 1 findings,\n"
      "2 bad input (each error as path:line:column: error: message).");
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the findings as JSON");
  return [options, &global] { return RunCheck(*options, global); };
}

}  // namespace trainlock::cli
