// Where the final states go; see state_dir.h.
#include "coordinator/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "base/failure.h"
#include "base/safe_paths.h"
#include "plan/memory_model.h"
#include "probes/host_memory.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPrefix = "trainlock-states-";
constexpr const char* kOwnerFile = ".owner";
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kMaxEntriesLooked = 256;

// The owner file of the directory `name` under `root_fd`, locked without waiting: a valid
// descriptor when its validator has ended (or never took it), else none.
ScopedFd TakeOwnerLock(int root_fd, const std::string& name) {
  ScopedFd dir(::openat(root_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return {};
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0 || st.st_uid != ::geteuid()) return {};
  ScopedFd owner(::openat(dir.get(), kOwnerFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!owner.valid() || ::fstat(owner.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  if (::flock(owner.get(), LOCK_EX | LOCK_NB) != 0) return {};
  return owner;
}

// A new private directory under `root` with its owner file locked by this process; the
// directory and the held lock, or nullopt with `why` set.
std::optional<std::pair<fs::path, ScopedFd>> MakeOwnedDirectory(const fs::path& root,
                                                                std::string* why) {
  // A sweep by another validation may take the lock between the file's creation and ours and
  // remove the directory: the file is then unlinked, and a fresh directory is made.
  for (int attempt = 0; attempt < 4; ++attempt) {
    fs::path dir;
    try {
      dir = CreateUniqueDirectory(root, kPrefix);
    } catch (const std::exception& e) {
      *why = e.what();
      return std::nullopt;
    }
    const fs::path owner_path = dir / kOwnerFile;
    ScopedFd owner(
        ::open(owner_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    struct stat st {};
    if (owner.valid() && ::flock(owner.get(), LOCK_EX | LOCK_NB) == 0 &&
        ::fstat(owner.get(), &st) == 0 && st.st_nlink > 0)
      return std::pair{dir, std::move(owner)};
    *why = owner_path.string() + ": cannot hold: " + std::strerror(errno);
  }
  return std::nullopt;
}

std::string Size(uint64_t bytes) {
  return GiB(static_cast<double>(bytes));
}

}  // namespace

MemoryRoom MeasureMemoryRoom(const fs::path& dir) {
  MemoryRoom room;
  struct statfs fs_info {};
  room.tmpfs =
      ::statfs(dir.c_str(), &fs_info) == 0 && static_cast<uint64_t>(fs_info.f_type) == TMPFS_MAGIC;
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0)
    room.tmpfs_free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  room.available_bytes = AvailableMemoryBytes();
  room.cgroup_free_bytes = CgroupFreeMemoryBytes();
  return room;
}

std::string WhyStatesDoNotFitInMemory(const MemoryRoom& room, uint64_t state_bytes, int states,
                                      int ranks) {
  state_bytes = std::min(state_bytes, uint64_t{1} << 40);  // no state near this: no overflow
  const uint64_t per_rank = static_cast<uint64_t>(std::clamp(states, 0, 64));
  const uint64_t sharing = static_cast<uint64_t>(std::clamp(ranks, 1, 65536));
  const uint64_t held = state_bytes * per_rank * sharing;
  const uint64_t memory_need = held + state_bytes * sharing + 4 * kGiB;
  if (!room.tmpfs) return "not a RAM-backed file system (tmpfs)";
  if (!room.tmpfs_free_bytes || *room.tmpfs_free_bytes < held + kGiB)
    return "it holds " + Size(room.tmpfs_free_bytes.value_or(0)) + ", the states need " +
           Size(held + kGiB);
  if (!room.available_bytes || *room.available_bytes < memory_need)
    return "the host has " + Size(room.available_bytes.value_or(0)) +
           " available, the states need " + Size(memory_need);
  if (room.cgroup_free_bytes && *room.cgroup_free_bytes < memory_need)
    return "this cgroup's memory limit leaves " + Size(*room.cgroup_free_bytes) +
           ", the states need " + Size(memory_need);
  return "";
}

int RemoveAbandonedStateDirectories(const fs::path& memory_root) {
  ScopedFd root(::open(memory_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return 0;
  std::vector<std::string> names;
  if (DIR* listing = ::fdopendir(::dup(root.get()))) {
    int looked = 0;
    while (const dirent* entry = ::readdir(listing)) {
      if (++looked > kMaxEntriesLooked) break;
      const std::string name = entry->d_name;
      if (name.starts_with(kPrefix) && IsPlainFileName(name)) names.push_back(name);
    }
    ::closedir(listing);
  }
  int removed = 0;
  for (const std::string& name : names) {
    const ScopedFd abandoned = TakeOwnerLock(root.get(), name);
    if (abandoned.valid() && !RemoveTreeAt(root.get(), name)) ++removed;
  }
  return removed;
}

StateDirectory StateDirectory::Choose(const fs::path& work_dir, const fs::path& requested,
                                      const fs::path& memory_root, uint64_t state_bytes, int states,
                                      int ranks) {
  StateDirectory chosen;
  chosen.path_ = work_dir;
  chosen.where_ = "work-dir";
  if (!requested.empty()) {
    // A directory of this run's own under it, as in memory: runs sharing it never mix.
    std::string cannot;
    auto owned = MakeOwnedDirectory(requested, &cannot);
    if (!owned) throw Failure("--state-dir: " + cannot, kExitEnvironment);
    chosen.Own(std::move(*owned), "option");
    return chosen;
  }
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(memory_root, ec))) {
    chosen.why_not_memory_ = memory_root.string() + ": not a directory";
    return chosen;
  }
  RemoveAbandonedStateDirectories(memory_root);
  const std::string why =
      WhyStatesDoNotFitInMemory(MeasureMemoryRoom(memory_root), state_bytes, states, ranks);
  if (!why.empty()) {
    chosen.why_not_memory_ = memory_root.string() + ": " + why;
    return chosen;
  }
  std::string cannot;
  auto owned = MakeOwnedDirectory(memory_root, &cannot);
  if (!owned) {
    chosen.why_not_memory_ = cannot;
    return chosen;
  }
  chosen.Own(std::move(*owned), "memory");
  return chosen;
}

void StateDirectory::Own(std::pair<fs::path, ScopedFd> owned, const std::string& where) {
  path_ = std::move(owned.first);
  owner_lock_ = std::move(owned.second);
  where_ = where;
  remove_ = true;
}

StateDirectory::StateDirectory(StateDirectory&& other) noexcept
    : path_(std::move(other.path_)),
      where_(std::move(other.where_)),
      why_not_memory_(std::move(other.why_not_memory_)),
      owner_lock_(std::move(other.owner_lock_)),
      remove_(std::exchange(other.remove_, false)) {}

StateDirectory::~StateDirectory() {
  if (!remove_) return;
  ScopedFd parent(::open(path_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.valid()) RemoveTreeAt(parent.get(), path_.filename().string());
}

}  // namespace trainlock::validate
