// Where the files a lock pins for [model] and [dataset] live on this machine: the project's
// own directory for `source = "local"`, else a cache keyed by repository and commit
// (TRAINLOCK_CACHE, default DIR/.trainlock/cache) that `trainlock fetch` fills.
#pragma once

#include <filesystem>
#include <string_view>

#include "project/spec.h"

namespace trainlock {

// An artifact's directory, split where the user's choice ends: `root` is the project directory
// or TRAINLOCK_CACHE, `below` what trainlock names under it (".trainlock/cache/models/
// org-name@commit", or a local source's path). Writers walk `below` without following a
// symlink (base/safe_paths.h).
struct ArtifactLocation {
  std::filesystem::path root;
  std::filesystem::path below;
  std::filesystem::path dir() const { return root / below; }
};

// `kind` is "model" or "dataset".
ArtifactLocation LocateArtifact(const std::filesystem::path& project_dir,
                                const ArtifactSource& artifact, std::string_view kind);

inline std::filesystem::path ArtifactDir(const std::filesystem::path& project_dir,
                                         const ArtifactSource& artifact, std::string_view kind) {
  return LocateArtifact(project_dir, artifact, kind).dir();
}

}  // namespace trainlock
