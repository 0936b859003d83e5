// A trainlock project directory: manifest, lock (when present) and training config, loaded
// and validated together.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "project/lockfile.h"
#include "project/train_config.h"

namespace trainlock {

inline constexpr const char* kManifestFile = "trainlock.toml";
inline constexpr const char* kLockFile = "trainlock.lock";

struct Project {
  std::filesystem::path dir;
  std::string manifest_path;  // display paths, as the user would type them
  std::string lock_path;
  std::string config_path;

  std::optional<Lockfile> manifest;  // absent only when loaded with ManifestRequirement::kOptional
  std::string manifest_sha256;
  std::optional<Lockfile> lock;
  std::string lock_sha256;
  TrainConfig config;
  std::string config_sha256;  // of the config file's bytes
  // False only when loaded with ManifestRequirement::kLockAlone and the config is not there.
  bool config_read = true;

  // The pinned spec when there is a lock, else the manifest.
  const Lockfile& effective() const { return lock ? *lock : *manifest; }
};

// kLockAlone: the lock is the one file needed; the manifest and the config are read when they
// are there (the node gate: a node holds only the lock, and the report it judges states the
// config it trained, which the gate compares with the lock's hash). A config that is there but
// cannot be read is still an error.
enum class ManifestRequirement { kRequired, kOptional, kLockAlone };

// Loads DIR/trainlock.toml, DIR/trainlock.lock (if present) and the config they name. Every
// problem in every file is collected; throws InputError carrying all of them. A missing
// manifest is allowed with kOptional and kLockAlone when a lock exists (inside an image only the
// lock and the config are installed), a missing config with kLockAlone.
Project LoadProject(const std::filesystem::path& dir,
                    ManifestRequirement manifest = ManifestRequirement::kRequired);

// The project's lock, for a caller that cannot go on without one: when the project has none
// (no `trainlock lock` yet), throws InputError at the lock's path with `message` and `hint`,
// which say what the caller needed it for.
const Lockfile& RequireLock(const Project& project, std::string message, std::string hint = {});

// A project argument as users give it: the directory, or its trainlock.lock or trainlock.toml
// (then `value` becomes the directory holding it). Returns "" when `value` is (now) a
// directory to load; else why it is refused: a path that does not exist is no such directory
// (a typo, not a project to create), another file is not a project. The shape of a CLI11
// transform.
std::string ProjectDirFromArgument(std::string& value);

// ProjectDirFromArgument, but a path that does not exist passes as it is: for a command line
// whose parser may take an option's value for DIR (`trainlock validate --timeout 5`), which
// says RequireProjectDirExists once it knows which word is DIR.
std::string ProjectDirOrMissing(std::string& value);

// Throws InputError "DIR: error: no such directory" when `dir` does not exist.
void RequireProjectDirExists(const std::filesystem::path& dir);

// "dir/name" as a user would write it ("name" when dir is ".").
std::string DisplayPath(const std::filesystem::path& dir, const std::string& name);

}  // namespace trainlock
