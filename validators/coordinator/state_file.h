// A training process's final state, read by the coordinator itself: the safetensors file the
// coordinator told the process to write (`--final-state`), each tensor digested here. The round
// trip compares these digests, never digests an engine prints (docs/validate.md, "What the
// coordinator verifies itself"): an engine that says its states agree without writing them
// fails.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace trainlock::validate {

struct StateDigest {
  // Tensor name -> SHA-256 of "<dtype>|<shape>|" and the tensor's bytes, as the file holds
  // them; empty when the file could not be read.
  std::map<std::string, std::string> tensors;
  uint64_t bytes = 0;   // the file's size
  std::string problem;  // "" when read; else why there is no state (missing, malformed)
};

// Digests every tensor of `file` (a regular file, never followed through a symlink), using up to
// `threads` threads. A missing or malformed file is a StateDigest with `problem` set.
StateDigest DigestStateFile(const std::filesystem::path& file, unsigned threads);

// The largest |a - b| over the tensors of two state files, element by element; infinity when a
// tensor of `a` is missing from `b` or differs in dtype or shape. `first_different` (when given
// and empty) receives the first tensor that differs. nullopt when either file cannot be read.
std::optional<double> MaxAbsStateDifference(const std::filesystem::path& a,
                                            const std::filesystem::path& b,
                                            std::string* first_different);

}  // namespace trainlock::validate
