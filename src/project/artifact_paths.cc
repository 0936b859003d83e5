// Artifact locations; see artifact_paths.h.
#include "project/artifact_paths.h"

#include <cstdlib>

#include "base/sha256.h"

namespace trainlock {

std::filesystem::path DefaultReportPath(const std::filesystem::path& project_dir) {
  return project_dir / ".trainlock" / "reports" / "report.json";
}

std::filesystem::path ArtifactDir(const std::filesystem::path& project_dir,
                                  const ArtifactSource& artifact, std::string_view kind) {
  if (artifact.source == "local") return project_dir / artifact.repo;
  std::filesystem::path cache = project_dir / ".trainlock" / "cache";
  if (const char* env = std::getenv("TRAINLOCK_CACHE"); env && *env) cache = env;
  std::string name = artifact.repo;
  if (artifact.source == "url") {
    name = "url-" + Sha256Hex(artifact.repo).substr(0, 16);
  } else {
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    name = name + "@" + artifact.revision;
  }
  return cache / (std::string(kind) + "s") / name;
}

}  // namespace trainlock
