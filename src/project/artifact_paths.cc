// Artifact locations; see artifact_paths.h.
#include "project/artifact_paths.h"

#include <cstdlib>

#include "base/sha256.h"

namespace trainlock {

ArtifactLocation LocateArtifact(const std::filesystem::path& project_dir,
                                const ArtifactSource& artifact, std::string_view kind) {
  if (artifact.source == "local") return {project_dir, artifact.repo};
  ArtifactLocation where{project_dir, std::filesystem::path(".trainlock") / "cache"};
  if (const char* env = std::getenv("TRAINLOCK_CACHE"); env && *env) where = {env, ""};
  std::string name = artifact.repo;
  if (artifact.source == "url") {
    name = "url-" + Sha256Hex(artifact.repo).substr(0, 16);
  } else {
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    name = name + "@" + artifact.revision;
  }
  where.below = where.below / (std::string(kind) + "s") / name;
  return where;
}

}  // namespace trainlock
