// The final state a training process writes for the coordinator (--final-state): the same
// safetensors file WriteSafetensors writes, produced by several threads at once. Each copies a
// slice of a tensor from the device into its own pinned buffer and from there into the file's
// shared mapping, so the device-to-host copies and the page cache's copies of all threads
// overlap. pwrite cannot: the file system serializes writes to one file, and the pilot's 14.8 GB
// held its process 5 to 9 s that way on an H100 (bench/results/2026-12-07-native-verdict); it
// stays the path where the file system lacks the room a mapping needs (a mapping that runs out
// of room kills the process with SIGBUS). The bytes only reach the page cache: the coordinator
// reads the file at once (coordinator/state_file.h) and nothing survives a crash.
#pragma once

#include <filesystem>
#include <vector>

#include "engines/native/safetensors.h"

namespace trainlock::validate {

// How the bytes go to the file: through a shared mapping where the file system has the room
// (else pwrite), or through pwrite always.
enum class StateWritePath { kMappedWhenRoom, kPwrite };

// Writes `tensors` (any device) to `file` in name order; never follows a link at `file`.
// Throws a Failure naming the file on I/O failure.
WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors,
                           StateWritePath path = StateWritePath::kMappedWhenRoom);

}  // namespace trainlock::validate
