// Artifact locations; see artifact_paths.h.
#include "project/artifact_paths.h"

#include <algorithm>
#include <cstdlib>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/sha256.h"

namespace trainlock {

void IgnoreTrainlockDir(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::path dir;
  bool inside = false;
  for (const fs::path& part : path) {
    dir /= part;
    if (!inside && part != ".trainlock") continue;
    std::error_code ec;
    fs::file_status status = fs::symlink_status(dir, ec);
    if (!inside && !fs::exists(status)) {
      fs::create_directories(dir);
      status = fs::symlink_status(dir, ec);
    }
    inside = true;
    if (!fs::exists(status)) return;  // the rest is made by the caller, below checked directories
    // A link here (one a cloned project can carry) would point trainlock's writes and deletes,
    // `image storage --free`'s included, at whatever it names.
    if (fs::is_symlink(status)) {
      throw InputError(Diagnostic{dir.string(),
                                  {},
                                  "is a symbolic link; trainlock writes under .trainlock only "
                                  "through real directories",
                                  "remove the link: trainlock makes the directory again"});
    }
    if (part == ".trainlock" && fs::is_directory(status)) {
      const fs::path ignore = dir / ".gitignore";
      if (!fs::exists(fs::symlink_status(ignore, ec))) WriteFileAtomically(ignore, "*\n");
    }
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
