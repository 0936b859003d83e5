// The files a lock pins inside its project ([model] and [dataset] of source "local", each
// [[custom-ops]] source tree or prebuilt library) as they are on this machine: absent, present
// but unusable, or hashed against the lock. `trainlock gate --lock DIR` relies on a report only
// for files that are truly absent (a report checked on another machine); a file that is here
// and cannot be used, or hashes to other bytes, is a refusal.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "project/lockfile.h"

namespace trainlock {

struct PinnedFilesHere {
  std::vector<std::string> absent;    // display paths of pinned files that do not exist here
  std::vector<std::string> unusable;  // "PATH: why" (a symlink out of the project, a directory)
  std::vector<std::string> changed;   // "PATH: sha256 X..., the lock pins Y..."
  int checked = 0;                    // files present and hashed to the lock's bytes
};

// Inspects every file `lock` pins under `project_dir`, following the rules `trainlock lock`
// hashes them by (artifact_paths.h's ResolvePinnedFile, base/tree_hash.h). Never throws for a
// file's state: each lands in one of the lists.
PinnedFilesHere InspectPinnedFiles(const std::filesystem::path& project_dir, const Lockfile& lock);

}  // namespace trainlock
