// Where a project's generated files live on this machine. The files a lock pins for [model] and
// [dataset] live on this machine: the project's own directory for `source = "local"`, else a cache
// keyed by repository and commit (TRAINLOCK_CACHE, default DIR/.trainlock/cache) that `trainlock
// fetch` fills.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "project/lockfile.h"

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

// Where `trainlock validate` writes its report unless --out says otherwise, and where
// `trainlock gate` looks for it: DIR/.trainlock/reports/report.json (beside the cache, ignored
// with the rest of .trainlock/).
std::filesystem::path DefaultReportPath(const std::filesystem::path& project_dir);

// Makes the `.trainlock` directory `path` is in or below (DIR/.trainlock/...) ignore itself in a
// git work tree, as Python's venv and cargo's target/ do: creates it when missing and writes
// `.trainlock/.gitignore` holding "*" unless one is there. Nothing when no component of `path`
// is ".trainlock" (--out, --storage-root or TRAINLOCK_CACHE elsewhere). Every command that
// writes or deletes under DIR/.trainlock calls it first. Throws InputError (exit 2) naming the
// component when `.trainlock` or an existing component of `path` below it is a symbolic link.
void IgnoreTrainlockDir(const std::filesystem::path& path);

// `kind` is "model" or "dataset".
ArtifactLocation LocateArtifact(const std::filesystem::path& project_dir,
                                const ArtifactSource& artifact, std::string_view kind);

inline std::filesystem::path ArtifactDir(const std::filesystem::path& project_dir,
                                         const ArtifactSource& artifact, std::string_view kind) {
  return LocateArtifact(project_dir, artifact, kind).dir();
}

// A pinned file that must not be used where it is: what() is "PATH: WHY".
class ArtifactPathError : public std::runtime_error {
 public:
  ArtifactPathError(std::filesystem::path path, std::string why)
      : std::runtime_error(path.string() + ": " + why),
        path_(std::move(path)),
        why_(std::move(why)) {}
  const std::filesystem::path& path() const { return path_; }
  const std::string& why() const { return why_; }

 private:
  std::filesystem::path path_;
  std::string why_;
};

// `named` (a path under `project_dir` that the manifest names) with every symlink resolved:
// ArtifactPathError when it leads out of the project's real directory, naming `what` must be
// inside it, so that no file outside the project is hashed, pinned or copied into an image in
// the project's name. A path that does not exist is returned as named, for the caller to
// report missing.
std::filesystem::path ResolveWithinProject(const std::filesystem::path& project_dir,
                                           const std::filesystem::path& named,
                                           std::string_view what);

// The file `relative` of `artifact` as it is on disk, with every symlink resolved: the one
// rule `trainlock lock`, the data checks and the validator's workers share. A local source's
// file must resolve inside the project's real directory; one that leads out of it through a
// symlink (the source's directory or the file itself) throws ArtifactPathError. A file that
// does not exist is returned as named, for the caller to report missing.
std::filesystem::path ResolvePinnedFile(const std::filesystem::path& project_dir,
                                        const ArtifactSource& artifact, std::string_view kind,
                                        const std::string& relative);

}  // namespace trainlock
