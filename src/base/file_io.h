// Reading user files whole, with failures reported as diagnostics (exit code 2).
#pragma once

#include <filesystem>
#include <string>

namespace trainlock {

// Files larger than this are refused rather than read: no manifest, lock or config is this big.
inline constexpr uintmax_t kMaxInputFileBytes = 64u << 20;

// Reads `file`; throws InputError("display: error: cannot read: ...") when it is missing,
// unreadable, a directory or larger than kMaxInputFileBytes.
std::string ReadInputFile(const std::filesystem::path& file, const std::string& display);

// Writes `data` to `file` atomically: a temporary file beside it, fsync, rename, fsync of the
// directory. Throws std::runtime_error naming the file on failure; the old file stays intact.
void WriteFileAtomically(const std::filesystem::path& file, std::string_view data);

}  // namespace trainlock
