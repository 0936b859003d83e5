// Artifact locations; see artifact_paths.h.
#include "project/artifact_paths.h"

#include <algorithm>
#include <cstdlib>

#include "base/file_io.h"
#include "base/sha256.h"

namespace trainlock {

void IgnoreTrainlockDir(const std::filesystem::path& path) {
  std::filesystem::path dir;
  for (const std::filesystem::path& part : path) {
    dir /= part;
    if (part != ".trainlock") continue;
    std::error_code ec;
    // Never through a link planted at .trainlock: the command that uses the directory refuses it.
    const std::filesystem::file_status status = std::filesystem::symlink_status(dir, ec);
    if (std::filesystem::is_symlink(status)) return;
    if (!std::filesystem::exists(status)) std::filesystem::create_directories(dir);
    if (!std::filesystem::is_directory(std::filesystem::symlink_status(dir, ec))) return;
    const std::filesystem::path ignore = dir / ".gitignore";
    if (!std::filesystem::exists(std::filesystem::symlink_status(ignore, ec)))
      WriteFileAtomically(ignore, "*\n");
    return;
  }
}

std::filesystem::path DefaultReportPath(const std::filesystem::path& project_dir) {
  return project_dir / ".trainlock" / "reports" / "report.json";
}

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

namespace {

bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& dir) {
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

}  // namespace

std::filesystem::path ResolveWithinProject(const std::filesystem::path& project_dir,
                                           const std::filesystem::path& named,
                                           std::string_view what) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(named, ec);
  if (ec) return named;
  const std::filesystem::path project = std::filesystem::canonical(project_dir, ec);
  if (ec) return named;
  if (!IsWithin(real, project)) {
    throw ArtifactPathError(named, "resolves to " + real.string() +
                                       " outside the project through a symbolic link; " +
                                       std::string(what) + " must be inside the project");
  }
  return real;
}

std::filesystem::path ResolvePinnedFile(const std::filesystem::path& project_dir,
                                        const ArtifactSource& artifact, std::string_view kind,
                                        const std::string& relative) {
  const std::filesystem::path named = ArtifactDir(project_dir, artifact, kind) / relative;
  if (artifact.source != "local") return named;  // the cache: written by fetch, no links
  return ResolveWithinProject(project_dir, named, "a local source's files");
}

}  // namespace trainlock
