// Project loading; see project.h.
#include "project/project.h"

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "project/lockfile_loader.h"

namespace trainlock {

namespace {

// A project directory named that is not there: most often a typo, so no `init` hint.
Diagnostic NoSuchDirectory(const std::filesystem::path& dir) {
  return Diagnostic{dir.string(), {}, "no such directory", ""};
}

}  // namespace

std::string ProjectDirOrMissing(std::string& value) {
  const std::filesystem::path path = value;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";  // loading says what is wrong
  if (path.filename() != kLockFile && path.filename() != kManifestFile) {
    return Diagnostic{
        value,
        {},
        "is a file, not a project directory",
        std::string("give the directory, its ") + kManifestFile + " or its " + kLockFile}
        .Format();
  }
  value = path.has_parent_path() ? path.parent_path().string() : ".";
  return "";
}

std::string ProjectDirFromArgument(std::string& value) {
  std::error_code ec;
  if (!std::filesystem::exists(value, ec)) return NoSuchDirectory(value).Format();
  return ProjectDirOrMissing(value);
}

void RequireProjectDirExists(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) throw InputError(NoSuchDirectory(dir));
}

std::string DisplayPath(const std::filesystem::path& dir, const std::string& name) {
  std::filesystem::path joined = (dir / name).lexically_normal();
  return joined.string();
}

namespace {

// Runs `load`, moving any InputError's diagnostics into `all` instead of stopping.
template <typename Load>
void Collect(Diagnostics& all, Load load) {
  try {
    load();
  } catch (const InputError& e) {
    for (const Diagnostic& d : e.diagnostics().items()) all.Add(d);
  }
}

// What a newcomer runs first when there is no project yet.
std::string InitHint(const std::filesystem::path& dir) {
  return "run `trainlock init " + dir.string() + " --from-hub ORG/NAME --target cuda|rocm|cpu`";
}

}  // namespace

Project LoadProject(const std::filesystem::path& dir, ManifestRequirement requirement) {
  Project project;
  project.dir = dir;
  project.manifest_path = DisplayPath(dir, kManifestFile);
  project.lock_path = DisplayPath(dir, kLockFile);
  Diagnostics all;

  std::error_code ec;
  RequireProjectDirExists(dir);
  if (!std::filesystem::is_directory(dir, ec)) {
    all.Error(dir.string(), {}, "not a project directory", InitHint(dir));
    throw InputError(all);
  }
  bool has_lock = std::filesystem::exists(dir / kLockFile, ec);
  bool need_manifest = requirement == ManifestRequirement::kRequired || !has_lock;
  if (need_manifest && !std::filesystem::exists(dir / kManifestFile, ec)) {
    all.Error(project.manifest_path, {},
              "cannot read: no such file: no trainlock.toml in " + dir.string(), InitHint(dir));
    throw InputError(all);
  }
  if (need_manifest || std::filesystem::exists(dir / kManifestFile, ec)) {
    Collect(all, [&] {
      std::string text = ReadInputFile(dir / kManifestFile, project.manifest_path);
      project.manifest = LoadLockfile(text, project.manifest_path, LockfileKind::kManifest,
                                      &project.manifest_sha256);
    });
  }
  if (has_lock) {
    Collect(all, [&] {
      std::string text = ReadInputFile(dir / kLockFile, project.lock_path);
      project.lock =
          LoadLockfile(text, project.lock_path, LockfileKind::kLock, &project.lock_sha256);
    });
  }
  // The config is named by the manifest (or, inside an image, by the lock).
  const Lockfile* named_by = project.manifest ? &*project.manifest
                             : project.lock   ? &*project.lock
                                              : nullptr;
  if (named_by && !named_by->config.empty()) {
    project.config_path = DisplayPath(dir, named_by->config);
    const std::filesystem::path config = dir / named_by->config;
    project.config_read = !(requirement == ManifestRequirement::kLockAlone && has_lock &&
                            !std::filesystem::exists(std::filesystem::symlink_status(config, ec)));
    if (project.config_read) {
      Collect(all, [&] {
        std::string text = ReadInputFile(config, project.config_path);
        project.config_sha256 = Sha256Hex(text);
        project.config = LoadTrainConfig(text, project.config_path);
      });
    }
  }
  if (!all.empty()) throw InputError(all);
  return project;
}

const Lockfile& RequireLock(const Project& project, std::string message, std::string hint) {
  if (!project.lock) {
    if (hint.empty()) hint = "run `trainlock lock " + project.dir.string() + "`";
    throw InputError(Diagnostic{project.lock_path, {}, std::move(message), std::move(hint)});
  }
  return *project.lock;
}

}  // namespace trainlock
