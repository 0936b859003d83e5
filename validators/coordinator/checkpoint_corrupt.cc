// Flipping a byte of a verified checkpoint; see checkpoint_corrupt.h.
#include "coordinator/checkpoint_corrupt.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/diagnostic.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"
#include "coordinator/checkpoint_verify.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// The largest regular file found so far: its path, one component a name.
struct Largest {
  std::vector<std::string> path;
  uint64_t bytes = 0;
};

// The names in the directory `dir_fd`, "." and ".." left out; at most `budget` in all.
std::vector<std::string> Names(int dir_fd, size_t& budget) {
  std::vector<std::string> names;
  DIR* listing = ::fdopendir(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (listing == nullptr) return names;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (budget == 0) break;
    --budget;
    names.push_back(name);
  }
  ::closedir(listing);
  return names;
}

// Walks below `dir_fd` (the components in `at`) for the largest regular file: a link is neither
// entered nor taken, and the walk stays within the verifier's depth and entry caps.
void FindLargest(int dir_fd, std::vector<std::string>& at, size_t& budget, Largest& best) {
  for (const std::string& name : Names(dir_fd, budget)) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    at.push_back(name);
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > best.bytes) {
      best = {at, static_cast<uint64_t>(st.st_size)};
    } else if (S_ISDIR(st.st_mode) && at.size() < static_cast<size_t>(kMaxCheckpointDepth)) {
      ScopedFd below(
          ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (below.valid()) FindLargest(below.get(), at, budget, best);
    }
    at.pop_back();
  }
}

// Flips the middle byte of the file at `path` below `step_fd`, each component opened again
// without following a link (the tree may have changed since it was walked).
CorruptedByte FlipMiddleByte(int step_fd, const fs::path& display, const Largest& largest) {
  CorruptedByte out;
  ScopedFd dir;
  int at = step_fd;
  fs::path shown = display;
  for (size_t i = 0; i + 1 < largest.path.size(); ++i) {
    shown /= largest.path[i];
    dir = ScopedFd(
        ::openat(at, largest.path[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) return {"", 0, shown.string() + ": cannot open: " + std::strerror(errno)};
    at = dir.get();
  }
  shown /= largest.path.back();
  const ScopedFd file = OpenRegularFileAt(at, largest.path.back(), shown, O_RDWR);
  struct stat st {};
  if (!file.valid() || ::fstat(file.get(), &st) != 0 || st.st_size <= 0)
    return {"", 0, shown.string() + ": gone or empty since it was found"};
  const off_t middle = st.st_size / 2;
  char byte = 0;
  if (::pread(file.get(), &byte, 1, middle) != 1) return {"", 0, shown.string() + ": cannot read"};
  byte = static_cast<char>(byte ^ 0x01);
  if (::pwrite(file.get(), &byte, 1, middle) != 1)
    return {"", 0, shown.string() + ": cannot write: " + std::strerror(errno)};
  for (const std::string& part : largest.path) out.file += (out.file.empty() ? "" : "/") + part;
  out.offset = static_cast<uint64_t>(middle);
  return out;
}

}  // namespace

CorruptedByte CorruptCheckpoint(const fs::path& root, const std::string& step_dir) {
  try {
    const ScopedFd step = OpenDirectoryBelow(root, step_dir, /*create=*/false);
    Largest largest;
    std::vector<std::string> at;
    size_t budget = kMaxCheckpointEntries;
    FindLargest(step.get(), at, budget, largest);
    if (largest.path.empty()) return {"", 0, (root / step_dir).string() + ": no file to corrupt"};
    return FlipMiddleByte(step.get(), root / step_dir, largest);
  } catch (const InputError& e) {  // a link, or not a directory: refused, never followed
    return {"", 0, e.what()};
  }
}

}  // namespace trainlock::validate
