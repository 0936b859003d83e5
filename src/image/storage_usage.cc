// DIR/.trainlock's entries and freeing its container storage; see storage_usage.h.
#include "image/storage_usage.h"

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <utility>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/safe_paths.h"
#include "base/subprocess.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

// Adds one entry's allocated bytes, a hard-linked file once.
void Count(const fs::path& path, StorageEntry& entry, std::set<std::pair<dev_t, ino_t>>& seen) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    entry.unreadable = true;
    return;
  }
  ++entry.files;
  if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) && !seen.insert({st.st_dev, st.st_ino}).second)
    return;
  entry.bytes += static_cast<uintmax_t>(st.st_blocks) * 512;
}

StorageEntry Measure(const fs::directory_entry& top, std::set<std::pair<dev_t, ino_t>>& seen) {
  StorageEntry entry{top.path().filename().string()};
  Count(top.path(), entry, seen);
  std::error_code ec;
  if (!top.is_directory(ec) || top.is_symlink(ec)) return entry;
  fs::recursive_directory_iterator it(top.path(), fs::directory_options::skip_permission_denied,
                                      ec);
  if (ec) entry.unreadable = true;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    Count(it->path(), entry, seen);
  if (ec) entry.unreadable = true;
  return entry;
}

}  // namespace

std::vector<StorageEntry> TrainlockDirUsage(const fs::path& trainlock_dir) {
  std::vector<StorageEntry> entries;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(trainlock_dir, ec))) return entries;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (fs::directory_iterator it(trainlock_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    entries.push_back(Measure(*it, seen));
  if (ec)
    throw Failure(trainlock_dir.string() + ": cannot list: " + ec.message(), kExitEnvironment);
  std::sort(entries.begin(), entries.end(), [](const StorageEntry& a, const StorageEntry& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  return entries;
}

std::string FreeContainerStorage(const ContainerToolStorage& storage, bool verbose) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(storage.root, ec))) return "";
  if (fs::is_symlink(fs::symlink_status(storage.root, ec)))
    throw Failure(storage.root.string() + ": a symbolic link; not followed, nothing freed",
                  kExitBadInput);
  std::string engine;
  for (const char* candidate : {"buildah", "podman"})
    if (ContainerToolProblem(candidate, ContainerToolUse::kRun).empty()) {
      engine = candidate;
      break;
    }
  if (engine.empty())
    throw Failure(
        "freeing " + storage.root.string() +
            " needs buildah or podman, which own its files; neither can run here (apt-get install "
            "buildah)",
        kExitEnvironment);
  for (std::vector<std::string> what :
       {std::vector<std::string>{"rm", "--all"}, {"rmi", "--all", "--force"}}) {
    std::vector<std::string> argv = ContainerToolCommand(engine, storage);
    argv.insert(argv.end(), what.begin(), what.end());
    SpawnOptions options;
    options.argv = argv;
    options.null_stdin = true;
    options.tail_lines = 20;
    const ProcessRun r =
        RunContainerTool(options, ContainerToolCall::kQuery, engine + " " + what[0]);
    if (r.exit_code != 0) {
      return engine + " " + what[0] + " --all failed (exit " + std::to_string(r.exit_code) + ")" +
             (verbose ? ": " + r.output : std::string()) + "; nothing else was removed";
    }
  }
  // The removal re-checks the path now, not before the engine ran: `.trainlock` opened without
  // following a link (one swapped in meanwhile is refused, exit 2, naming it) and every delete
  // relative to that descriptor, so nothing outside the project's storage is ever removed.
  const ScopedFd holder = OpenDirectoryBelow(storage.root.parent_path().parent_path(),
                                             storage.root.parent_path().filename(), false);
  ec = RemoveTreeAt(holder.get(), storage.root.filename().string());
  if (!ec) return "";
  return "some files are left (" + ec.message() + "): remove them with `" + engine +
         " unshare rm -rf " + storage.root.string() + "`, or as root";
}

}  // namespace trainlock
