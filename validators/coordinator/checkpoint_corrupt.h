// The negative control `--negative-control corrupt`: one byte flipped in the checkpoint the
// coordinator verified, after the verification, so that the resumed process's own restore must
// refuse it. The checkpoint root holds what an engine wrote, and a hostile engine may plant links
// there (a `step-99999999` pointing anywhere) or swap a file for one while this runs: every
// directory is opened below the root's descriptor with O_NOFOLLOW and the file written is opened
// the same way, so the write never lands outside the step directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace trainlock::validate {

// What was flipped: `file` (relative to the step directory) at `offset`; `problem` says why
// nothing was ("ROOT/step-...: is a symbolic link; ...") when nothing was.
struct CorruptedByte {
  std::string file;
  uint64_t offset = 0;
  std::string problem;
};

// Flips one bit of the byte in the middle of the largest regular file below ROOT/`step_dir`
// (its name, a single component), links never followed nor written through.
CorruptedByte CorruptCheckpoint(const std::filesystem::path& root, const std::string& step_dir);

}  // namespace trainlock::validate
