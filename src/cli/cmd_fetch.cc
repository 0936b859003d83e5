// `trainlock fetch DIR`: download the model and dataset files the lock pins, by commit, into
// the cache the validator reads (artifact_paths.h), verifying each file's size and SHA-256.
#include <iostream>

#include "base/exit_code.h"
#include "base/sha256.h"
#include "cli/commands.h"
#include "lock/hf_hub.h"
#include "project/artifact_paths.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct FetchOptions {
  std::string dir = ".";
  long timeout_s = 600;
};

// True when `path` already holds exactly the pinned bytes.
bool AlreadyThere(const std::filesystem::path& path, const PinnedFile& file) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) != file.size) {
    return false;
  }
  return Sha256FileHex(path) == file.sha256;
}

int RunFetch(const FetchOptions& options) {
  const Project project = LoadProject(options.dir);
  const Spec& lock = RequireLock(project, "cannot read: no such file: fetch downloads what the lock pins");
  HubOptions hub;
  hub.timeout_s = options.timeout_s;
  int fetched = 0, present = 0;
  for (const auto& [kind, artifact] :
       {std::pair{"model", &lock.model}, std::pair{"dataset", &lock.dataset}}) {
    if (!*artifact || (*artifact)->source != "hf") continue;
    const ArtifactSource& a = **artifact;
    const std::filesystem::path dir = ArtifactDir(project.dir, a, kind);
    for (const PinnedFile& file : a.files) {
      const std::filesystem::path dest = dir / file.path;
      if (AlreadyThere(dest, file)) {
        ++present;
        continue;
      }
      DownloadHubFile(kind, a.repo, a.revision, file, dest, hub);
      std::cout << "  " << kind << " " << a.repo << ": " << file.path << " (" << file.size
                << " bytes, sha256 verified)\n";
      ++fetched;
    }
  }
  std::cout << "fetched " << fetched << " file(s), " << present
            << " already present and verified\n";
  return kExitOk;
}

}  // namespace

Command RegisterFetch(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<FetchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fetch",
      "Download the model and dataset files DIR/trainlock.lock pins (Hugging Face, by commit)\n"
      "into the cache the validator reads (TRAINLOCK_CACHE, default DIR/.trainlock/cache),\n"
      "verifying each file's size and SHA-256; a file is only moved into place once verified.\n"
      "Exit 1 for a file that does not match the lock, 3 when the Hub cannot answer.");
  cmd->add_option("DIR", options->dir, "Project directory")->capture_default_str();
  cmd->add_option("--timeout", options->timeout_s, "Seconds per file download")
      ->capture_default_str()
      ->check(CLI::Range(1L, 86400L));
  return [options] { return RunFetch(*options); };
}

}  // namespace trainlock::cli
