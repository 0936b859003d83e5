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
#pragma once

#include <filesystem>
#include <vector>

#include "engines/native/safetensors.h"

namespace trainlock::validate {

// Writes `tensors` (any device) to `file` in name order; never follows a link at `file`.
// Throws a Failure naming the file on I/O failure.
WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors);

}  // namespace trainlock::validate
