// The final state a training process writes for the coordinator (--final-state): the same
// safetensors file WriteSafetensors writes, produced by several threads at once. Each copies a
// slice of a tensor from the device into its own pinned buffer and writes it at its place in the
// file, so the device-to-host copies, the page cache's copies and the threads' writes overlap;
// one thread's pageable copy and write held the pilot's process for 5 to 7 s (14.8 GB on an H100,
// bench/results/2026-12-07-clock-under-load). The file system serializes writes to one file (the
// inode lock of ext4's and tmpfs's buffered writes), so this moves 2.3-3.7 GB/s on the H100
// machines whatever the threads; copying into a shared mapping of the file instead was no faster
// there and 20 times slower in a sandbox whose page faults are dear (bench/results/
// 2026-12-07-native-verdict). The bytes only reach the page cache: the coordinator reads the
// file at once (coordinator/state_file.h) and nothing survives a crash.
//
// Most of that time was the file system finding pages, not copying: a tmpfs allocates and zeroes
// each page under the same lock as the copy. A process that knows its state's size early
// (PreparedStateFile, started beside training) has the pages allocated and mapped (a shared
// mapping, populated) before the state exists, so the write only copies: from the pinned buffers
// into the mapping, 8 threads at 25-36 GB/s on an H100 machine against 2.5-3.5 GB/s for pwrite
// into the same allocated file (bench/results/2026-12-08-h100-verdict, state_write_probe.py's
// mmap-8-pre and pwrite-1-pre). The state is written into that prepared file and renamed to its
// name once complete: the coordinator never finds a file of the final size that holds zeros.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "engines/native/safetensors.h"

namespace trainlock::validate {

// A prepared file handed to the write: its path and, where it could be mapped, its shared
// mapping (the write unmaps it) of `mapped_bytes`.
struct PreparedState {
  std::filesystem::path path;
  void* mapping = nullptr;
  size_t mapped_bytes = 0;
};

// The file a final state will be written into, allocated and mapped on a thread from
// construction: at `<file>.prepared` beside `file`, created new (never an existing file or a
// link), at the size `tensors` take as a safetensors file. A failure (a file system without
// fallocate, no room, no mapping) only costs the time it saves: the write then allocates as it
// goes, or writes with pwrite.
class PreparedStateFile {
 public:
  PreparedStateFile(const std::filesystem::path& file, const std::vector<NamedTensor>& tensors);
  ~PreparedStateFile();  // waits for the allocation; removes the file if it was never used
  PreparedStateFile(const PreparedStateFile&) = delete;
  PreparedStateFile& operator=(const PreparedStateFile&) = delete;

  // Waits for the allocation; the prepared file when it stands ready for `file` (then the
  // write owns its mapping).
  std::optional<PreparedState> Ready(const std::filesystem::path& file);

 private:
  void Prepare(uint64_t bytes);  // on allocating_

  std::filesystem::path file_, prepared_;
  bool ready_ = false;
  void* mapping_ = nullptr;
  size_t mapped_bytes_ = 0;
  std::thread allocating_;
};

// Writes `tensors` (any device) to `file` in name order; never follows a link at `file`. With
// `prepared` (PreparedStateFile::Ready), writes into that file (through its mapping when it has
// one that holds the state) and renames it to `file`. Throws a Failure naming the file on I/O
// failure.
WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors,
                           const std::optional<PreparedState>& prepared = std::nullopt);

}  // namespace trainlock::validate
