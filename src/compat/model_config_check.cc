// The training config against the pinned model's config.json; see model_config_check.h.
#include "compat/model_config_check.h"

#include <filesystem>

#include "base/file_io.h"
#include "base/sha256.h"
#include "project/artifact_paths.h"
#include "run/hub_model_config.h"

namespace trainlock {
namespace {

constexpr const char* kConfigJson = "config.json";

bool IsCommit(const std::string& revision) {
  return revision.size() == 40 &&
         revision.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The config.json pinned for the model, when the project names one: the lock's entry (with its
// hash), else the manifest's (a commit revision, as `trainlock init` writes it).
const PinnedFile* PinnedConfigJson(const ArtifactSource& model) {
  for (const PinnedFile& file : model.files) {
    if (file.path == kConfigJson) return &file;
  }
  return nullptr;
}

}  // namespace

std::vector<Finding> CheckModelConfig(const Project& project) {
  std::vector<Finding> findings;
  const Lockfile& spec = project.effective();
  if (!spec.model) return findings;
  const ArtifactSource& model = *spec.model;
  // A branch names no fixed config.json: there is nothing pinned to compare with yet.
  if (model.source == "hf" && !IsCommit(model.revision)) return findings;
  if (model.source == "url") return findings;
  const PinnedFile* pinned = PinnedConfigJson(model);
  if (!pinned) return findings;
  const std::filesystem::path file = ArtifactDir(project.dir, model, "model") / kConfigJson;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return findings;
  const std::string display = file.string();
  const std::string text = ReadInputFile(file, display);
  if (!pinned->sha256.empty() && Sha256Hex(text) != pinned->sha256) {
    findings.push_back(
        {"model.config-hash",
         display,
         {},
         "is not the config.json the lock pins (sha256 " + pinned->sha256.substr(0, 12) + "...)",
         "run `trainlock fetch` to replace it with the pinned file"});
    return findings;
  }
  HubModelConfig hub;
  try {
    hub = ReadHubModelConfig(text, display);
  } catch (const InputError& e) {
    for (const Diagnostic& d : e.diagnostics().items()) {
      findings.push_back({"model.unsupported", d.path, d.pos, d.message, d.hint});
    }
    return findings;
  }
  // The config file LoadProject read: the manifest names it, or inside an image the lock.
  const Lockfile& named_by = project.manifest ? *project.manifest : *project.lock;
  const std::string config_text = ReadInputFile(project.dir / named_by.config, project.config_path);
  for (const Diagnostic& d : ModelConfigMismatches(hub.model, display, project.config.model,
                                                   config_text, project.config_path)) {
    findings.push_back({"model.config", d.path, d.pos, d.message, d.hint});
  }
  return findings;
}

}  // namespace trainlock
