// `trainlock hash DIR`: print the lock's identity, lock-sha256.
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "cli/commands.h"
#include "project/lockfile_loader.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct HashOptions {
  std::string dir = ".";
  bool manifest = false;
  bool build = false;  // the build identity: lock-sha256 without [images]
  bool json = false;
};

int RunHash(const HashOptions& options) {
  const char* file = options.manifest ? kManifestFile : kLockFile;
  std::string display = DisplayPath(options.dir, file);
  std::string text = ReadInputFile(std::filesystem::path(options.dir) / file, display);
  std::string sha;
  const Lockfile spec = LoadLockfile(
      text, display, options.manifest ? LockfileKind::kManifest : LockfileKind::kLock, &sha);
  const bool build = options.build && !options.manifest;
  if (build) sha = spec.lock_build_sha256;
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{{options.manifest ? "manifest_sha256"
                                                : build          ? "lock_build_sha256"
                                                                 : "lock_sha256",
                                                sha},
                                               {"file", display}},
                                -1)
              << "\n";
  } else {
    std::cout << sha << "\n";
  }
  return kExitOk;
}

}  // namespace

Command RegisterHash(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<HashOptions>();
  CLI::App* cmd = app.add_subcommand(
      "hash",
      "Print lock-sha256, the identity of DIR/trainlock.lock: the SHA-256 of its canonical\n"
      "serialization (sorted keys; comments, formatting and key order do not change it; every\n"
      "field counts, the [images] table of built images too, so `image build --push` changes\n"
      "it). --build prints the build identity, lock-sha256 without [images]: what an image,\n"
      "its labels and the reports validated in it carry, and what `gate` compares.");
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_flag("--manifest", options->manifest,
                "Print manifest-sha256 of DIR/trainlock.toml instead");
  cmd->add_flag("--build", options->build,
                "Print the build identity (lock-sha256 without [images]) that images and reports "
                "carry");
  cmd->add_flag("--json", options->json, "Print as JSON");
  return [options] { return RunHash(*options); };
}

}  // namespace trainlock::cli
