// The checkpoint a round trip's preempted process (B) committed, read and hashed by the
// coordinator itself after B ended and before any process restores it (docs/validate.md, "What
// the coordinator verifies itself"): the step directory the coordinator asked for is there
// under the checkpoint root (no link followed), every file its commit record lists is there
// with the recorded size and hash, and no other file is. The commit record is the engine's own:
// trainlock-commit.json for the Python engines (trainlock_engine/commit.py), manifest.json and
// its hash file for the native engine (engines/native/checkpoint_manifest.h). Both are hostile
// input: read bounded, every path relative and inside the step directory.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace trainlock::validate {

// Which commit record a step directory carries: the one its engine writes.
enum class CommitRecord { kPythonMarker, kNativeManifest };

// The Python engines' commit marker ({step, files: [{path, block_sha256, size}]}) and its caps,
// as commit.py writes and reads it (MARKER, MAX_MARKER_BYTES, BLOCK_BYTES): a file's
// block_sha256 is the SHA-256 of the concatenated SHA-256 digests of its 64 MiB blocks.
inline constexpr const char* kCommitMarker = "trainlock-commit.json";
inline constexpr uint64_t kMaxCommitMarkerBytes = uint64_t{16} << 20;
inline constexpr uint64_t kCommitBlockBytes = uint64_t{64} << 20;
// The most entries (files and directories) one step directory may hold, and how deep: a
// pilot's checkpoint is a few files per rank.
inline constexpr size_t kMaxCheckpointEntries = 100000;
inline constexpr int kMaxCheckpointDepth = 16;

// What the coordinator found.
struct VerifiedCheckpoint {
  std::filesystem::path dir;  // CHECKPOINT_ROOT/step-<8 digits>
  int64_t step = 0;
  std::string record;   // the commit record's file name
  int64_t files = 0;    // the files the record lists, each hashed here
  uint64_t bytes = 0;   // their bytes
  double seconds = 0;   // reading and hashing
  std::string problem;  // "" when every file verified; else "PATH: what is missing or differs"
};

// "step-00000003": the directory every engine commits step `step` to.
std::string CheckpointStepName(int64_t step);

// Verifies ROOT/step-<step> against its commit record, hashing on up to `threads` threads
// until `deadline` (a file as large as its record claims, sparse, could take the hashing past
// any run's time). Never throws for what it finds in the directory: a missing directory or
// record, a link or anything else that is not a regular file or directory, a record beyond its
// caps or naming a path outside the directory, another step, a missing, changed or unlisted
// file, hashing past the deadline are the result's `problem` (the first found, in record
// order).
VerifiedCheckpoint VerifyCheckpoint(
    const std::filesystem::path& root, int64_t step, CommitRecord record, size_t threads,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace trainlock::validate
