// `trainlock fetch DIR`: download the model and dataset files the lock pins, by commit, into
// the cache the validator reads (artifact_paths.h), verifying each file's size and SHA-256.
#include <sys/stat.h>

#include <iostream>

#include "base/exit_code.h"
#include "base/file_stream.h"
#include "base/safe_paths.h"
#include "base/sha256.h"
#include "base/terminal_text.h"
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

// True when `name` in `dir_fd` already holds exactly the pinned bytes. A symlink or a FIFO
// there is refused (InputError), never followed or waited on.
bool AlreadyThere(int dir_fd, const std::string& name, const std::filesystem::path& display,
                  const PinnedFile& file) {
  ScopedFd fd = OpenRegularFileAt(dir_fd, name, display);
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != file.size)
    return false;
  Sha256 sha;
  StreamDescriptor(fd.get(), display, [&](std::string_view chunk) { sha.Update(chunk); });
  return sha.HexDigest() == file.sha256;
}

int RunFetch(const FetchOptions& options, const GlobalOptions& global) {
  std::unique_ptr<Progress> progress = MakeProgress(global, "trainlock fetch");
  const Project project = LoadProject(options.dir);
  const Lockfile& lock =
      RequireLock(project, "cannot read: no such file: fetch downloads what the lock pins");
  HubOptions hub;
  hub.timeout_s = options.timeout_s;
  int fetched = 0, present = 0;
  for (const auto& [kind, artifact] :
       {std::pair{"model", &lock.model}, std::pair{"dataset", &lock.dataset}}) {
    if (!*artifact || (*artifact)->source != "hf") continue;
    const ArtifactSource& a = **artifact;
    const ArtifactLocation where = LocateArtifact(project.dir, a, kind);
    IgnoreTrainlockDir(where.dir());
    for (const PinnedFile& file : a.files) {
      const std::filesystem::path relative = file.path;
      const std::filesystem::path dest = where.dir() / relative;
      // Every directory below the project (or TRAINLOCK_CACHE) is walked without following a
      // symlink: one planted at .trainlock or in the cache cannot send the write elsewhere.
      ScopedFd dir = OpenDirectoryBelow(where.root, where.below / relative.parent_path(), true);
      const std::string name = relative.filename().string();
      progress->Begin(std::string(kind) + " " + a.repo + ": " + file.path + " (" +
                      std::to_string(file.size) + " bytes)");
      if (AlreadyThere(dir.get(), name, dest, file)) {
        ++present;
        continue;
      }
      DownloadHubFile(kind, a.repo, a.revision, file, dir.get(), dest, hub);
      progress->End();
      // The file's name is the Hub's (the lock refuses controls in it, not bidi characters).
      std::cout << "  " << kind << " " << TerminalLine(a.repo) << ": " << TerminalLine(file.path)
                << " (" << file.size << " bytes, sha256 verified)\n";
      ++fetched;
    }
  }
  progress->End();
  std::cout << "fetched " << fetched << " file(s), " << present
            << " already present and verified\n";
  return kExitOk;
}

}  // namespace

Command RegisterFetch(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<FetchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fetch",
      "Download the model and dataset files DIR/trainlock.lock pins (Hugging Face, by commit)\n"
      "into the cache the validator reads (TRAINLOCK_CACHE, default DIR/.trainlock/cache),\n"
      "verifying each file's size and SHA-256; a file is only moved into place once verified,\n"
      "a download stops at the pinned size, and a symlink planted in the cache is refused.\n"
      "Exit 1 for a file that does not match the lock, 2 for a symlink or a special file in\n"
      "the cache, 3 when the Hub cannot answer.");
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_option("--timeout", options->timeout_s, "Seconds per file download")
      ->capture_default_str()
      ->check(CLI::Range(1L, 86400L));
  return [options, &global] { return RunFetch(*options, global); };
}

}  // namespace trainlock::cli
