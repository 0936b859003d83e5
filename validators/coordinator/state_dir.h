// Where a round trip's final states are written: a private directory in memory (/dev/shm) when
// the host has room for them, else the work directory. A pilot's state is about 15 GB; written to
// the disk beside a checkpoint's upload of the same size, the kernel throttles both writers to the
// disk's speed and each state costs its process 4 to 6 s (bench/results/2026-12-07-h100-steady-
// saves). The coordinator digests each state and deletes it as soon as its process ends
// (engine_process.h), so at most two are held at once.
//
// A directory in memory outlives a validator killed with SIGKILL and holds RAM until removed: each
// is named trainlock-states-XXXXXX and holds a file its validator keeps locked (flock) while it
// runs; a later validation removes any such directory of its user whose lock it can take.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "base/scoped_fd.h"

namespace trainlock::validate {

// What the host has for states kept in memory; nullopt: not known (not read, or no limit).
struct MemoryRoom {
  bool tmpfs = false;                         // the directory is a RAM-backed file system
  std::optional<uint64_t> tmpfs_free_bytes;   // statvfs: what the file system may still hold
  std::optional<uint64_t> available_bytes;    // /proc/meminfo MemAvailable
  std::optional<uint64_t> cgroup_free_bytes;  // memory.max less what is not reclaimable
};

// The room `dir` and this host (and this process's cgroup) have now.
MemoryRoom MeasureMemoryRoom(const std::filesystem::path& dir);

// Whether `states` states of `state_bytes` each, for each of `ranks` ranks sharing the host, may
// be kept in memory: the file system holds them all and the memory available (host and cgroup)
// holds them, one more state's worth per rank (the staging copy a saving process keeps in host
// memory) and 4 GiB besides. "" when they fit, else why not.
std::string WhyStatesDoNotFitInMemory(const MemoryRoom& room, uint64_t state_bytes, int states,
                                      int ranks = 1);

class StateDirectory {
 public:
  // A new private directory (removed with this object) under `requested` (--state-dir) when
  // given; else under `memory_root` when WhyStatesDoNotFitInMemory says they fit, else
  // `work_dir` itself. Removes the directories earlier validations left under `memory_root`
  // first.
  static StateDirectory Choose(const std::filesystem::path& work_dir,
                               const std::filesystem::path& requested,
                               const std::filesystem::path& memory_root, uint64_t state_bytes,
                               int states, int ranks = 1);
  ~StateDirectory();
  StateDirectory(StateDirectory&& other) noexcept;
  StateDirectory& operator=(StateDirectory&&) = delete;
  StateDirectory(const StateDirectory&) = delete;
  StateDirectory& operator=(const StateDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // "memory" (a private directory in memory), "option" (--state-dir) or "work-dir".
  const std::string& where() const { return where_; }
  // Why the states are not in memory ("" when they are or --state-dir chose).
  const std::string& why_not_memory() const { return why_not_memory_; }

 private:
  StateDirectory() = default;
  void Own(std::pair<std::filesystem::path, ScopedFd> owned, const std::string& where);
  std::filesystem::path path_;
  std::string where_;
  std::string why_not_memory_;
  ScopedFd owner_lock_;  // held while this validator runs; released by the kernel at its death
  bool remove_ = false;
};

// Removes every trainlock-states-* directory under `memory_root` owned by this user whose owner
// lock is free (its validator has ended); a link or anything else is left alone. Bounded: looks at
// no more than 256 entries. Returns how many it removed.
int RemoveAbandonedStateDirectories(const std::filesystem::path& memory_root);

// The RAM-backed directory states go to by default.
inline const std::filesystem::path kMemoryStateRoot = "/dev/shm";

}  // namespace trainlock::validate
